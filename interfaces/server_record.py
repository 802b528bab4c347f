"""Which running `serve` owns an embedded knowledge base folder: a small JSON record beside the shards.

An embedded Qdrant shard has one owner process. `python -m pipelines serve` writes ``QDRANT_PATH/serving.json``
(its pid and URL) when it starts and removes it when it stops, so that a CLI command that finds the store in use
can tell "this project's server holds it" (send the request there) from "something else holds it" (the plain
"in use" error). A record left by a killed server is recognised as stale: its process is gone, or its URL does not
answer as this server does.

Usage::

    record = write_server_record(settings.qdrant_path, "http://127.0.0.1:1416")   # the server, at start
    remove_server_record(settings.qdrant_path)                                     # … and when it stops
    server = running_server(settings.qdrant_path)                                  # the CLI, on StoreLockedError
    if server: print(server.url, server.pid)
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

RECORD_FILE = "serving.json"
PROBE_TIMEOUT_S = 3.0


@dataclass(frozen=True)
class ServerRecord:
    """A running server of this project: its process and the base URL a client on this machine reaches it at."""

    pid: int
    url: str
    started: float


def client_url(host: str, port: int) -> str:
    """The URL a client on this machine uses for a server bound to ``host``: a wildcard address is reached on the
    loopback one, an IPv6 literal in brackets."""
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def write_server_record(folder: Path, url: str) -> Path:
    """Record this process as the server of the knowledge bases in ``folder`` (written whole: temp file, fsync,
    rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    path, temporary = folder / RECORD_FILE, folder / f".{RECORD_FILE}.{os.getpid()}"
    with open(temporary, "w", encoding="utf-8") as handle:
        json.dump(asdict(ServerRecord(pid=os.getpid(), url=url, started=time.time())), handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temporary, path)
    return path


def remove_server_record(folder: Path) -> None:
    """Remove the record if this process wrote it (a later server's record is left alone)."""
    record = read_server_record(folder)
    if record is not None and record.pid == os.getpid():
        (folder / RECORD_FILE).unlink(missing_ok=True)


def read_server_record(folder: Path) -> ServerRecord | None:
    """The record in ``folder`` as written; None when there is none or it cannot be read."""
    try:
        data = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
        return ServerRecord(pid=int(data["pid"]), url=str(data["url"]), started=float(data["started"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def running_server(folder: Path) -> ServerRecord | None:
    """The server recorded in ``folder`` if it still runs and answers ``/status`` as this project's server does
    (``{"status": ...}``, also while it starts); None otherwise."""
    record = read_server_record(folder)
    if record is None or not _process_alive(record.pid):
        return None
    try:
        status = httpx.get(f"{record.url}/status", timeout=PROBE_TIMEOUT_S).json()
    except (httpx.HTTPError, ValueError):
        return None
    return record if isinstance(status, dict) and "status" in status else None
