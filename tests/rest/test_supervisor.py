"""What ``lance-namespace-server``'s supervisor of several workers relies on in uvicorn (its behaviour with
workers: tests/rest/test_cli.py)."""

from __future__ import annotations


def test_uvicorns_private_supervisor_api_is_still_what_the_server_overrides() -> None:
    """``rest/__main__._Supervisor`` overrides private parts of uvicorn's ``Multiprocess`` (pyproject bounds
    uvicorn below the next minor). When uvicorn moves them, this fails here, naming the part, rather than a
    multi-worker server quietly losing its SIGHUP reload or its quick health check."""
    import ast
    import inspect

    from uvicorn.supervisors.multiprocess import Multiprocess, Process

    from airflow_provider_lance.rest.__main__ import _Supervisor

    def assigned(cls: type) -> set[str]:
        tree = ast.parse(inspect.getsource(cls.__init__).strip())
        return {
            node.attr
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"
        }

    run = inspect.getsource(Multiprocess.run)
    assert "self.handle_signals()" in run and "self.keep_subprocess_alive()" in run
    assert 'getattr(self, f"handle_{sig_name.lower()}"' in inspect.getsource(Multiprocess.handle_signals)
    for name in ("keep_subprocess_alive", "handle_hup"):
        assert callable(getattr(Multiprocess, name)) and name in _Supervisor.__dict__
    assert {"processes", "signal_queue", "config"} <= assigned(Multiprocess)
    assert "parent_conn" in assigned(Process)
    assert list(inspect.signature(Process.is_ready).parameters) == ["self", "timeout"]
    assert isinstance(Process.pid, property) and isinstance(Process.exitcode, property)
    assert "timeout_worker_healthcheck" in inspect.signature(__import__("uvicorn").Config).parameters
