"""The real server's test environment (`harness.app_server.server_env`), seen from inside a child process (the
stand-in of tests/support/stand_in_server.py, started by `ServerProcess`) started from a developer's shell.
`index_laws` is what every test in tests/serving/ starts from (it embeds with the real model: not repeated here)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from harness.app_server import server_env
from harness.server_process import ServerProcess
from tests.support.stand_in_server import stand_in_env

DEVELOPER = {"DEEPSEEK_API_KEY": "sk-developer", "SERPAPI_API_KEY": "serp-developer", "API_KEY": "api-developer",
             "LLM_BASE_URL": "https://api.deepseek.com/v1", "QDRANT_URL": "http://qdrant.example:6333"}
SEEN = ["DATA_DIR", "EMBEDDING_MODEL", "LLM_BASE_URL", "HF_HUB_OFFLINE", "LLM_MAX_RETRIES", "DEEPSEEK_API_KEY",
        "SERPAPI_API_KEY", "API_KEY", "JUDGE", "QDRANT_URL"]


def server_sees(tmp_path: Path, env: dict[str, str | None]) -> dict[str, str | None]:
    """The variables of SEEN as a server started with ``env`` has them."""
    with ServerProcess({**env, **stand_in_env(tmp_path), "FAKE_REPORT": ",".join(SEEN)}, timeout=30) as server:
        return httpx.get(f"{server.base_url}/status", timeout=5).json()["env"]


@pytest.fixture
def developer(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's shell: real keys, a real LLM and a Qdrant server."""
    for name, value in DEVELOPER.items():
        monkeypatch.setenv(name, value)


@pytest.mark.usefixtures("developer")
def test_the_server_gets_the_test_data_and_none_of_the_developers_keys(tmp_path: Path) -> None:
    seen = server_sees(tmp_path, server_env(tmp_path / "data", tmp_path / "e5", "http://127.0.0.1:9/v1"))
    assert seen["DATA_DIR"] == str(tmp_path / "data") and seen["EMBEDDING_MODEL"] == str(tmp_path / "e5")
    assert seen["LLM_BASE_URL"] == "http://127.0.0.1:9/v1"
    assert (seen["HF_HUB_OFFLINE"], seen["LLM_MAX_RETRIES"]) == ("1", "0")  # offline, and no retries
    assert [name for name in ("DEEPSEEK_API_KEY", "SERPAPI_API_KEY", "API_KEY") if seen[name] is not None] == []


@pytest.mark.usefixtures("developer")
def test_a_test_gives_what_it_needs_and_no_llm_means_none(tmp_path: Path) -> None:
    seen = server_sees(tmp_path, server_env(tmp_path / "data", tmp_path / "e5", None, API_KEY="test-key",
                                            JUDGE="evaluator", SERPAPI_API_KEY=None))
    assert (seen["API_KEY"], seen["JUDGE"], seen["SERPAPI_API_KEY"]) == ("test-key", "evaluator", None)
    assert seen["LLM_BASE_URL"] is None  # not the developer's LLM


@pytest.mark.usefixtures("developer")
def test_the_server_never_reaches_the_developers_qdrant_server(tmp_path: Path) -> None:
    assert server_sees(tmp_path, server_env(tmp_path / "data", tmp_path / "e5", None))["QDRANT_URL"] is None
