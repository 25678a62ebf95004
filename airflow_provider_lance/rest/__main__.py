"""``lance-namespace-server`` (also ``python -m airflow_provider_lance.rest``): the Lance REST Namespace server
over the provider's engine, or over any ``lance_namespace.LanceNamespace`` named by ``--impl`` (an adapter, as
the reference ``lance.namespace.RestAdapter``).

Properties come from ``--root``, repeated ``--property KEY=VALUE``, ``--properties-file`` (JSON, for
credentials: argv is visible to every user of the machine) and the ``LANCE_NAMESPACE_PROPERTIES`` environment
variable (JSON, as the Spark staging job takes them). The server prints ``Serving on http://HOST:PORT`` with
the port it really listens on (``--port 0``: an ephemeral one) once it accepts connections.
"""

from __future__ import annotations

import argparse
import functools
import gc
import ipaddress
import json
import logging
import os
import signal
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from airflow_provider_lance.utils.extras import missing_extra

try:
    import uvicorn
    from starlette.applications import Starlette
    from uvicorn.supervisors import Multiprocess
    from uvicorn.supervisors.multiprocess import Process

    from airflow_provider_lance.rest.app import ServerSettings, create_app
    from airflow_provider_lance.rest.http_protocol import OneWriteHttpToolsProtocol
except ModuleNotFoundError as error:  # installed without the server extra: say which one to add
    raise missing_extra("server", error) from None

from airflow_provider_lance.implementations import connect, property_prefix
from airflow_provider_lance.rest.principals import PrincipalStore

DEFAULT_PORT = 2333  # the protocol's default
_APP_ENV = "LANCE_REST_SERVER_CONFIG"  # how worker processes get the configuration (never argv)

log = logging.getLogger("airflow_provider_lance.rest")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lance-namespace-server", description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", help="the catalog root (a path or URI such as s3://bucket/catalog)")
    parser.add_argument(
        "--impl",
        default="",
        metavar="NAME_OR_CLASS_PATH",
        help="serve another implementation: dir (pylance's), glue, hive3, unity, ... or a class path "
        "(default: the provider's engine)",
    )
    parser.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a namespace property (repeatable): table_version_management=true, storage.aws_region=...",
    )
    parser.add_argument("--properties-file", help="a JSON object of namespace properties (use it for credentials)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="port (default 2333; 0 = ephemeral)")
    parser.add_argument(
        "--principals-file",
        help="principals, their hashed secrets and grants (JSON or YAML); re-read on SIGHUP",
    )
    parser.add_argument("--token-file", help="(old) bearer tokens, one a line, each admin on the root")
    parser.add_argument(
        "--allow-unauthenticated",
        action="store_true",
        help="listen beyond loopback without --principals-file (refused otherwise)",
    )
    parser.add_argument("--tls-certfile", help="TLS certificate chain (PEM); serves https")
    parser.add_argument("--tls-keyfile", help="TLS private key (PEM)")
    parser.add_argument("--workers", type=int, default=1, help="worker processes sharing the port (default 1)")
    parser.add_argument("--threads", type=int, default=64, help="namespace calls served at once per worker")
    parser.add_argument("--max-body-bytes", type=int, default=64 * 1024 * 1024, help="larger bodies get 413")
    parser.add_argument("--body-timeout", type=float, default=30.0, help="seconds to receive a body (408 after)")
    parser.add_argument("--no-page", action="store_true", help="do not serve the catalog page at /")
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return parser


def _properties(args: argparse.Namespace) -> dict[str, str]:
    properties: dict[str, str] = {}
    environment = os.environ.get("LANCE_NAMESPACE_PROPERTIES")
    if environment:
        properties.update(_json_object(environment, "LANCE_NAMESPACE_PROPERTIES"))
    if args.properties_file:
        with open(args.properties_file, encoding="utf-8") as handle:
            properties.update(_json_object(handle.read(), args.properties_file))
    for item in args.property:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"--property takes KEY=VALUE, not {item!r}")
        properties[key] = value
    if args.root:
        properties["root"] = args.root
    if "root" not in properties and property_prefix(args.impl) == "dir.":
        raise SystemExit("lance-namespace-server needs --root (or a 'root' property)")
    return properties


def _json_object(text: str, source: str) -> dict[str, str]:
    try:
        value = json.loads(text)
    except ValueError:
        raise SystemExit(f"{source} is not JSON") from None
    if not isinstance(value, dict):
        raise SystemExit(f"{source} must hold a JSON object")
    return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in value.items()}


def _check_impl(impl: str, properties: dict[str, str]) -> None:
    """Build the implementation once before listening: a wrong name or property fails here, with its reason
    (property values left out: they may be credentials), not in a worker after the start-up line."""
    try:
        connect(impl, properties)
    except Exception as error:
        message = str(error)
        for value in properties.values():
            if len(value) >= 4:
                message = message.replace(value, "***")
        raise SystemExit(f"Cannot serve --impl {impl}: {type(error).__name__}: {message}") from None


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _configure_logging(level: str) -> None:
    """The server's log format (a no-op where logging is configured already: the process of one worker)."""
    logging.basicConfig(level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def build_app() -> Starlette:
    """The app of one worker, from the configuration the parent put into the environment (uvicorn factory)."""
    from airflow_provider_lance.rest.authorization import page_source

    config: dict[str, Any] = json.loads(os.environ[_APP_ENV])
    _configure_logging(config["log_level"])  # a spawned worker starts without it: no access or audit log
    properties: dict[str, str] = config["properties"]
    namespace = connect(config["impl"], properties)
    files = (config["principals_file"], config["token_file"])
    store = PrincipalStore(*files) if any(files) else None
    # every worker re-reads the principals on SIGHUP (the supervisor of several workers passes it on); without
    # them SIGHUP changes nothing (its default action would end the worker and drop its requests), and says so
    no_principals = functools.partial(log.info, "SIGHUP: no principals file to re-read, nothing changed")
    signal.signal(signal.SIGHUP, lambda *_: store.reload() if store is not None else no_principals())
    settings = ServerSettings(
        principals=store,
        max_body_bytes=config["max_body_bytes"],
        body_timeout=config["body_timeout"],
        threads=config["threads"],
        # temporary, table-scoped credentials only (credential_vendor.*, the engine's): main() refuses the
        # namespace's own; another implementation's storage options lose their secrets (responses.py)
        vend_credentials=getattr(getattr(namespace, "config", None), "credential_vendor", None) is not None,
    )
    page_app = None
    if config["page"]:
        from airflow_provider_lance.page import create_page_app

        page_app = create_page_app(page_source(namespace))
    app = create_app(namespace, settings, page_app)
    # The modules and the app live as long as the worker: the full collections that a busy server's
    # allocations trigger need not walk them again (each took 50-70 ms, a stall for every request in flight).
    gc.freeze()
    return app


class _Supervisor(Multiprocess):
    """uvicorn's supervisor of several workers, except that SIGHUP reaches every worker (each re-reads the
    principals in place) instead of replacing them all, and that a worker's health check notices a signal or
    the worker's exit within a second."""

    def keep_subprocess_alive(self) -> None:
        """uvicorn's check, after waiting for each worker's answer in 1 s steps. uvicorn's own ping waits the
        whole health-check timeout (60 s here, for workers still importing on a loaded machine): a worker that
        dies meanwhile (a SIGTERM to the process group while it imports) or a SIGTERM to this supervisor went
        unnoticed that long, and a server stopped during its start took a minute to exit."""
        for process in self.processes:
            self._await_answer(process)
            if self.signal_queue:
                return  # the main loop handles the signal first (on SIGTERM nothing is restarted)
        super().keep_subprocess_alive()

    def _await_answer(self, process: Process) -> None:
        """Ping ``process`` once and wait until it answers, exits, a signal arrives or the timeout passes."""
        deadline = time.monotonic() + self.config.timeout_worker_healthcheck
        try:
            process.parent_conn.send(b"ping")
            while not process.parent_conn.poll(1):
                if process.exitcode is not None or self.signal_queue or time.monotonic() >= deadline:
                    return
            process.parent_conn.recv()
        except (OSError, EOFError):
            return  # the worker is gone: uvicorn's check restarts it

    def handle_hup(self) -> None:
        for process in self.processes:
            # a worker that is not serving yet installs its handler and reads the files as it starts
            if process.pid is not None and process.is_ready(timeout=1):
                os.kill(process.pid, signal.SIGHUP)


def main(argv: Sequence[str] | None = None) -> None:
    """Run the server until SIGTERM or SIGINT (in-flight requests finish first)."""
    args = _parser().parse_args(argv)
    _configure_logging(args.log_level)
    files = [os.path.abspath(path) if path else None for path in (args.principals_file, args.token_file)]
    if any(files):
        try:
            PrincipalStore(*files)  # fail now, not in every worker
        except (OSError, ValueError) as error:
            raise SystemExit(f"Cannot read the principals: {error}") from None
    elif not _is_loopback(args.host) and not args.allow_unauthenticated:
        raise SystemExit(
            f"Refusing to listen on {args.host} without --principals-file: anyone who reaches it could change the "
            "catalog. Give --principals-file, listen on 127.0.0.1, or pass --allow-unauthenticated."
        )
    if args.token_file:
        log.warning(
            "--token-file: every token in it is admin on the root (it may drop and rename anything); give "
            "principals with their grants in --principals-file instead"
        )
    properties = _properties(args)
    if str(properties.get("credential_vending_enabled", "false")).strip().lower() != "false":
        raise SystemExit(
            "credential_vending_enabled hands the server's own long-lived storage keys to every caller: the "
            "server refuses it. Vend temporary table-scoped credentials instead: credential_vendor.enabled=true "
            "and credential_vendor.aws_role_arn=... (docs/rest.md, 'Credential vending')"
        )
    if bool(args.tls_certfile) != bool(args.tls_keyfile):
        raise SystemExit("--tls-certfile and --tls-keyfile go together")
    config = {
        "impl": args.impl,
        "properties": properties,
        "log_level": args.log_level,
        "principals_file": files[0],
        "token_file": files[1],
        "max_body_bytes": args.max_body_bytes,
        "body_timeout": args.body_timeout,
        "threads": args.threads,
        "page": not args.no_page,
    }
    if args.impl:
        _check_impl(args.impl, config["properties"])
    os.environ[_APP_ENV] = json.dumps(config)
    if args.workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="lance-rest-metrics-")

    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((args.host, args.port))
    sock.set_inheritable(True)
    sock.listen(2048)  # connections wait in the backlog until the workers accept them
    port = sock.getsockname()[1]
    uvicorn_config = uvicorn.Config(
        "airflow_provider_lance.rest.__main__:build_app",
        factory=True,
        workers=args.workers,
        access_log=False,  # our access log has the request id and leaves the query string out
        log_config=None,
        timeout_keep_alive=5,
        timeout_graceful_shutdown=30,
        # a worker still importing on a loaded machine (12 s measured at load 14 on 2 cores) is not hung:
        # uvicorn's 5 s would kill and respawn it in a loop
        timeout_worker_healthcheck=60,
        ssl_certfile=args.tls_certfile,
        ssl_keyfile=args.tls_keyfile,
        server_header=False,
        http=OneWriteHttpToolsProtocol,  # a response in one socket write (rest/http_protocol.py)
    )
    scheme = "https" if args.tls_certfile else "http"
    host = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    print(f"Serving on {scheme}://{host}:{port}", flush=True)
    # uvicorn finishes the in-flight requests on SIGTERM, then raises the signal again: exit 0 for it
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = uvicorn.Server(uvicorn_config)
    if args.workers > 1:
        _Supervisor(uvicorn_config, sockets=[sock]).run()
    else:
        server.run(sockets=[sock])
    sys.exit(0)


if __name__ == "__main__":
    main()
