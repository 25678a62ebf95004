"""Benchmarks of the directory namespace engine against the reference (``python -m benchmarks``)."""
