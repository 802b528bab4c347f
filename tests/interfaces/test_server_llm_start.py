"""The server starts the embedded LLM in a thread before it imports Hayhooks and loads its deployments
(`interfaces.server_app.start_llm_early`), so that a cold ``serve`` is up sooner; the deployments find it started."""

import dataclasses
import threading
from pathlib import Path

import pytest

from interfaces.server_app import start_llm_early
from llm_access import embedded_server
from llm_access.embedded_server import shared_server, stop_shared_server


@pytest.fixture
def no_shared_llm():
    stop_shared_server()
    yield
    stop_shared_server()


@pytest.mark.slow
def test_the_early_thread_starts_the_shared_llm_that_the_deployments_then_use(settings, monkeypatch, no_shared_llm):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    thread = start_llm_early(settings)
    assert thread is not None
    thread.join(timeout=180)
    started = embedded_server._shared
    assert started is not None and started.running
    assert shared_server(settings.llm_gguf) is started and started.pid is not None  # reused, not started again


@pytest.mark.slow
@pytest.mark.parametrize("changed", [{"reranker": "llm"}, {"round_reranker": "llm"}])
def test_with_an_llm_reranker_the_early_llm_keeps_logprobs_and_is_not_restarted(settings, monkeypatch, changed,
                                                                                no_shared_llm):
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    start_llm_early(dataclasses.replace(settings, **changed)).join(timeout=180)
    started = embedded_server._shared
    assert started is not None and started.running and started.logprobs
    pid = started.pid
    assert shared_server(settings.llm_gguf, logprobs=True) is started and started.pid == pid  # the ranker's call


def test_no_early_start_with_another_endpoint_or_a_missing_model(settings, monkeypatch, tmp_path, no_shared_llm):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    for changed in (dataclasses.replace(settings, llm_base_url="http://127.0.0.1:9/v1"),  # a server of the user's
                    dataclasses.replace(settings, llm_gguf=str(tmp_path / "missing.gguf"))):  # the deployment says why
        thread = start_llm_early(changed)
        thread.join(timeout=30)
        assert not thread.is_alive() and embedded_server._shared is None


def test_while_a_prepare_command_runs_a_missing_model_is_waited_for_until_it_ends(settings, monkeypatch, tmp_path,
                                                                                no_shared_llm):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    prepared = threading.Event()
    thread = start_llm_early(dataclasses.replace(settings, llm_gguf=str(tmp_path / "missing.gguf")), prepared)
    thread.join(timeout=1.5)
    assert thread.is_alive()  # still waiting for the model the prepare command may build
    prepared.set()  # it ended without building it: the deployment reports why the LLM cannot start
    thread.join(timeout=5)
    assert not thread.is_alive() and embedded_server._shared is None


@pytest.mark.slow
def test_the_model_is_started_as_soon_as_the_prepare_command_has_built_it(settings, monkeypatch, tmp_path,
                                                                         no_shared_llm):
    """Issue 50: `prepare` assembles the GGUF before the ONNX export; the server's early thread starts the LLM when
    it appears, while the rest of the prepare command (the export, the quick evaluator, the index) still runs."""
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.delenv("LLM_BASE_URL", raising=False)
    gguf = tmp_path / "model.gguf"
    thread = start_llm_early(dataclasses.replace(settings, llm_gguf=str(gguf)), threading.Event())
    thread.join(timeout=1.5)
    assert thread.is_alive() and embedded_server._shared is None
    gguf.symlink_to(Path(settings.llm_gguf).resolve())
    thread.join(timeout=180)
    started = embedded_server._shared
    assert not thread.is_alive() and started is not None and started.running
