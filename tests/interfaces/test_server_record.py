"""`interfaces.server_record`: the record a running `serve` leaves beside the shards, and how a CLI command tells
this project's live server from a stale record or another program. The round trip with a real server is in
tests/serving/test_cli_beside_server.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from interfaces.server_record import (
    RECORD_FILE,
    ServerRecord,
    client_url,
    read_server_record,
    remove_server_record,
    running_server,
    write_server_record,
)
from tests.support.scripted_app import ScriptedApp


@pytest.mark.parametrize(("host", "port", "url"), [
    ("", 1416, "http://127.0.0.1:1416"),
    ("127.0.0.1", 8000, "http://127.0.0.1:8000"),
    ("localhost", 80, "http://localhost:80"),
    ("192.168.1.20", 1416, "http://192.168.1.20:1416"),
    ("::1", 1416, "http://[::1]:1416"),
    ("fe80::1", 9, "http://[fe80::1]:9"),
])
def test_the_client_url_of_a_bound_address(host: str, port: int, url: str) -> None:
    assert client_url(host, port) == url


def test_a_record_round_trips_and_names_this_process(tmp_path: Path) -> None:
    folder = tmp_path / "new" / "qdrant"  # created when missing
    path = write_server_record(folder, "http://127.0.0.1:1416")
    assert path == folder / RECORD_FILE
    record = read_server_record(folder)
    assert record is not None and (record.pid, record.url) == (os.getpid(), "http://127.0.0.1:1416")
    assert record.started > 0
    assert [p.name for p in folder.iterdir()] == [RECORD_FILE]  # no temporary file left beside it
    write_server_record(folder, "http://127.0.0.1:1499")  # a restart replaces it whole
    assert read_server_record(folder).url == "http://127.0.0.1:1499"


@pytest.mark.parametrize("content", [
    '{"pid": 1, "url": "http://x"}',                              # no started
    '{"pid": "one", "url": "http://x", "started": 0}',            # a pid that is no number
    '["pid", 1]',                                                 # not an object
    "",
])
def test_an_unreadable_record_is_none(tmp_path: Path, content: str) -> None:
    (tmp_path / RECORD_FILE).write_text(content, encoding="utf-8")
    assert read_server_record(tmp_path) is None
    assert running_server(tmp_path) is None


def test_no_record_is_none_and_removing_it_is_a_no_op(tmp_path: Path) -> None:
    assert read_server_record(tmp_path) is None and running_server(tmp_path) is None
    remove_server_record(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_writer_removes_its_own_record(tmp_path: Path) -> None:
    write_server_record(tmp_path, "http://127.0.0.1:1416")
    remove_server_record(tmp_path)
    assert not (tmp_path / RECORD_FILE).exists()


def test_a_live_process_that_answers_status_as_this_server_is_the_running_server(tmp_path: Path) -> None:
    """Also while it starts: a 503 whose body has a ``status`` is this project's server."""
    with ScriptedApp() as app:
        app.reply("GET", "/status", 503, {"status": "Starting", "pipelines": [], "loading": "agentic_rag"})
        write_server_record(tmp_path, app.origin)
        assert running_server(tmp_path) == ServerRecord(os.getpid(), app.origin, read_server_record(tmp_path).started)
        assert app.requests[0].path == "/status"


@pytest.mark.parametrize("body", [{"detail": "Not Found"}, ["status"], b"<html>status</html>"])
def test_a_url_that_does_not_answer_as_this_server_is_not_the_running_server(tmp_path: Path, body: object) -> None:
    with ScriptedApp() as app:
        app.reply("GET", "/status", 200, body)
        write_server_record(tmp_path, app.origin)
        assert running_server(tmp_path) is None


def test_a_record_whose_process_is_gone_is_stale_without_asking_its_url(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True, timeout=30)
    gone = int(done.stdout)  # reaped: that pid runs no process (unless reused at once)
    with ScriptedApp() as app:
        app.reply("GET", "/status", 200, {"status": "Up!"})
        (tmp_path / RECORD_FILE).write_text(json.dumps({"pid": gone, "url": app.origin, "started": 0}),
                                            encoding="utf-8")
        assert running_server(tmp_path) is None
        assert app.requests == []
