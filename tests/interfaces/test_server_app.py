"""`interfaces.server_app`: the server process refuses a second server on the same embedded store before it starts
anything, exits through Python on SIGTERM, and exits 3 when it cannot start. The early start of the LLM is in
tests/interfaces/test_server_llm_start.py; real servers in tests/serving/."""

from __future__ import annotations

import os
import shlex
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from interfaces.server_app import STARTUP_FAILED_EXIT_CODE, _exit_on_signal, main, refuse_a_second_server
from interfaces.server_record import RECORD_FILE, write_server_record
from tests.support.scripted_app import ScriptedApp

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in ("QDRANT_URL", "QDRANT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data" / "qdrant"


@pytest.fixture
def other_server(store: Path) -> Iterator[ScriptedApp]:
    """Another `serve` of this project (its record names this process, which lives; its URL answers /status)."""
    with ScriptedApp() as app:
        app.reply("GET", "/status", 200, {"status": "Up!"})
        write_server_record(store, app.origin)
        yield app


def test_a_second_server_on_the_same_store_exits_3_and_says_why(other_server: ScriptedApp, store: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        refuse_a_second_server()
    assert raised.value.code == STARTUP_FAILED_EXIT_CODE == 3
    assert capsys.readouterr().err == (
        f"error: the knowledge bases at {store} are served by another `serve` (pid {os.getpid()}, "
        f"{other_server.origin}); stop it first, or give this one its own QDRANT_PATH\n")
    assert (store / RECORD_FILE).exists()  # the other server's record is left as it is


def test_no_refusal_without_a_live_owner_or_with_a_qdrant_server(store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    refuse_a_second_server()  # no record
    write_server_record(store, "http://127.0.0.1:9")  # a record whose URL answers nothing: stale
    refuse_a_second_server()
    with ScriptedApp() as app:
        app.reply("GET", "/status", 200, {"status": "Up!"})
        write_server_record(store, app.origin)
        monkeypatch.setenv("QDRANT_URL", "http://127.0.0.1:6333")  # the store has no owner process
        refuse_a_second_server()
        assert app.requests == []


def test_main_refuses_before_its_prepare_command_starts(other_server: ScriptedApp, tmp_path: Path) -> None:
    marker = tmp_path / "prepared"
    prepare = shlex.join([sys.executable, "-c", f"open({str(marker)!r}, 'w')"])
    handler = signal.getsignal(signal.SIGTERM)
    with pytest.raises(SystemExit) as raised:
        main(["--port", "1", "--prepare-command", prepare])
    assert raised.value.code == STARTUP_FAILED_EXIT_CODE
    assert not marker.exists() and signal.getsignal(signal.SIGTERM) == handler


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_exits_through_python_with_the_shells_code(signum: int, code: int) -> None:
    """SystemExit runs the atexit hooks (the embedded LLM's stop) that a re-raised signal would skip."""
    with pytest.raises(SystemExit) as raised:
        _exit_on_signal(signum, None)
    assert raised.value.code == code


def test_a_server_that_cannot_bind_exits_3_and_leaves_no_record(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        env = {**os.environ, "DATA_DIR": str(tmp_path / "data"), "LLM_BASE_URL": "http://127.0.0.1:9/v1",
               "API_KEY": "", "QDRANT_URL": "", "QDRANT_PATH": "", "REQUIRED_DEPLOYMENTS": ""}
        done = subprocess.run([sys.executable, "-m", "interfaces.server_app", "--port", str(port)], env=env,
                              cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == STARTUP_FAILED_EXIT_CODE, done.stderr[-2000:]
    assert "address already in use" in done.stderr
    assert not (tmp_path / "data" / "qdrant" / RECORD_FILE).exists()
