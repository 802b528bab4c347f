"""ServerProcess, the server as a child process, here with a stand-in server (tests/support/stand_in_server.py) that
answers ``/status`` as the real one does and reports its environment: started, waited for until every deployment
answers, stopped; a server that exits or never deploys is a `ServerStartError` with its log. The real server is
started in tests/serving/."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from harness.server_process import DEPLOYMENTS, ServerProcess, ServerStartError
from tests.support.stand_in_server import stand_in_env


@pytest.fixture
def stand_in(tmp_path: Path) -> dict[str, str | None]:
    return {**stand_in_env(tmp_path), "FAKE_REPORT": "FAKE_SECRET,FAKE_EXTRA"}


def test_the_server_is_started_waited_for_and_stopped(stand_in: dict, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_SECRET", "from-the-parent")
    server = ServerProcess({**stand_in, "FAKE_SECRET": None, "FAKE_EXTRA": "given"}, log_path=tmp_path / "s.log",
                           timeout=30)
    assert server.base_url == f"http://127.0.0.1:{server.port}" and server.process is None
    with server:
        status = httpx.get(f"{server.base_url}/status", timeout=5).json()
        assert set(status["pipelines"]) == DEPLOYMENTS
        assert status["module"] == "interfaces.server_app"
        assert status["argv"] == ["--host", "127.0.0.1", "--port", str(server.port)]
        assert status["env"] == {"FAKE_SECRET": None, "FAKE_EXTRA": "given"}  # None removes a variable
        assert 0 < server.startup_seconds < 30
        assert server.process.poll() is None
    assert server.process.poll() is not None  # stopped on exit
    assert f"stand-in server (ok) on 127.0.0.1:{server.port}" in server.log_tail()


def test_via_cli_starts_it_as_users_do(stand_in: dict) -> None:
    with ServerProcess(stand_in, timeout=30, via_cli=True) as server:
        status = httpx.get(f"{server.base_url}/status", timeout=5).json()
    assert status["module"] == "pipelines.__main__"
    assert status["argv"] == ["serve", "--host", "127.0.0.1", "--port", str(server.port)]


def test_a_server_that_exits_is_an_error_with_its_log(stand_in: dict, tmp_path: Path) -> None:
    server = ServerProcess({**stand_in, "FAKE_MODE": "exit"}, log_path=tmp_path / "s.log", timeout=30)
    with pytest.raises(ServerStartError, match=r"^server exited with 3:\n") as failed:
        server.__enter__()
    assert "error: the knowledge base is locked" in str(failed.value)
    assert server.log_tail(chars=20) == "knowledge base is locked\n"[-20:]


def test_a_server_that_never_deploys_everything_is_stopped_and_an_error(stand_in: dict) -> None:
    server = ServerProcess({**stand_in, "FAKE_MODE": "partial"}, timeout=1.5)
    with pytest.raises(ServerStartError, match=r"^server did not deploy \['agentic_rag', 'index', 'knowledge_bases'\] "
                                               r"in 2 s:\n.*stand-in server \(partial\)"):
        server.__enter__()
    assert server.process.poll() is not None  # not left running


def test_no_log_yet_is_an_empty_tail(tmp_path: Path) -> None:
    assert ServerProcess(log_path=tmp_path / "none.log").log_tail() == ""
