"""Arrow schema → the ``JsonArrowSchema`` model that DescribeTable answers with."""

from __future__ import annotations

import pyarrow as pa
from lance_namespace_urllib3_client.models import JsonArrowDataType, JsonArrowField, JsonArrowSchema

_SIMPLE_NAMES = {
    pa.null(): "null",
    pa.bool_(): "bool",
    pa.string(): "utf8",
    pa.large_string(): "large_utf8",
    pa.binary(): "binary",
    pa.large_binary(): "large_binary",
    pa.float16(): "float16",
    pa.float32(): "float32",
    pa.float64(): "float64",
    pa.date32(): "date32",
    pa.date64(): "date64",
}


def _data_type(arrow_type: pa.DataType) -> JsonArrowDataType:
    if pa.types.is_fixed_size_list(arrow_type):
        return JsonArrowDataType(
            type="fixed_size_list", fields=[_field(arrow_type.value_field)], length=arrow_type.list_size
        )
    if pa.types.is_list(arrow_type) or pa.types.is_large_list(arrow_type):
        name = "large_list" if pa.types.is_large_list(arrow_type) else "list"
        return JsonArrowDataType(type=name, fields=[_field(arrow_type.value_field)])
    if pa.types.is_struct(arrow_type):
        return JsonArrowDataType(type="struct", fields=[_field(child) for child in arrow_type])
    if pa.types.is_fixed_size_binary(arrow_type):
        return JsonArrowDataType(type="fixed_size_binary", length=arrow_type.byte_width)
    return JsonArrowDataType(type=_SIMPLE_NAMES.get(arrow_type, str(arrow_type)))


def _metadata(raw: dict[bytes, bytes] | None) -> dict[str, str] | None:
    if not raw:
        return None
    return {key.decode(errors="replace"): value.decode(errors="replace") for key, value in raw.items()}


def _field(field: pa.Field) -> JsonArrowField:
    return JsonArrowField(
        name=field.name,
        type=_data_type(field.type),
        nullable=field.nullable,
        metadata=_metadata(field.metadata),
    )


def to_json_schema(schema: pa.Schema) -> JsonArrowSchema:
    return JsonArrowSchema(fields=[_field(field) for field in schema], metadata=_metadata(schema.metadata))
