"""Stopping the server as a service manager or container runtime does: nothing may stay behind."""

import os
import signal
import time
from pathlib import Path

import pytest

from harness.app_server import index_laws, server_env
from harness.server_process import ServerProcess
from tests.support.processes import alive, descendants, listening

PIPL = "中华人民共和国个人信息保护法"
MODELS = Path(__file__).resolve().parents[2] / "models"


@pytest.mark.slow
def test_sigterm_to_serve_stops_the_server_and_the_embedded_llm(tmp_path, e5_model):
    """Issue 19, bug 7: SIGTERM to `python -m pipelines serve` left its child server listening on the port and the
    embedded llama.cpp server (about 2 GB) running, as orphans."""
    data = tmp_path / "data"
    index_laws(data, e5_model, [PIPL])
    env = server_env(data, e5_model, llm_base_url=None,
                     LLM_GGUF=str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    server = ServerProcess(env, log_path=tmp_path / "server.log", timeout=300, via_cli=True)
    with server:
        assert server.process is not None
        below = descendants(server.process.pid)
        commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in below]
        assert any(b"llama_cpp.server" in command for command in commands), "the embedded LLM is not running"
        server.process.send_signal(signal.SIGTERM)
        server.process.wait(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (listening(server.port) or any(alive(pid) for pid in below)):
            time.sleep(0.5)
        assert not listening(server.port), "something still listens on the server's port"
        left = [command for pid, command in zip(below, commands, strict=True) if alive(pid)]
        assert left == [], "processes of the server outlived it"


@pytest.mark.parametrize("via_cli", [True, False], ids=["python -m pipelines serve", "python -m interfaces.server_app"])
def test_ctrl_c_does_not_wait_for_a_streamed_answer_to_finish(tmp_path, e5_model, via_cli):
    """Issue 19, bug 7: Ctrl-C (SIGINT) waited until an in-flight streamed answer had been written to its end."""
    import threading

    import httpx

    from harness.openai_server import ScriptedOpenAIServer

    data = tmp_path / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer() as llm:
        llm.add_rule("严谨的中国法律咨询助手", f"需要。依据《{PIPL}》第十四条，处理个人信息应当取得同意。" * 20,
                     chunk_delay=0.5)  # about 80 chunks: 40 s of answer
        with ServerProcess(server_env(data, e5_model, llm.base_url), log_path=tmp_path / "server.log",
                           via_cli=via_cli) as server:
            assert server.process is not None
            body = {"model": "agentic_rag", "stream": True, "mode": "rag",
                    "messages": [{"role": "user", "content": "公司收集我的个人信息需要我同意吗"}]}

            def read_all() -> None:
                try:
                    with httpx.stream("POST", f"{server.base_url}/v1/chat/completions", json=body,
                                      timeout=120) as response:
                        for _ in response.iter_lines():
                            pass
                except httpx.HTTPError:
                    pass  # the server went away mid-stream: expected

            reader = threading.Thread(target=read_all, daemon=True)
            reader.start()
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not llm.calls("严谨的中国法律咨询助手"):
                time.sleep(0.2)
            assert llm.calls("严谨的中国法律咨询助手"), "the answer never started streaming"
            started = time.monotonic()
            os.killpg(server.process.pid, signal.SIGINT)  # Ctrl-C in a terminal: the whole process group
            server.process.wait(timeout=60)
            assert time.monotonic() - started < 20, "Ctrl-C waited for the streamed answer"
            assert not listening(server.port)


def test_the_embedded_server_exits_when_the_process_that_started_it_is_killed():
    """A benchmark stopped with SIGTERM left its llama.cpp server (about 2 GB, its port taken) running as an orphan:
    `EmbeddedLLMServer` runs it under `llm_access.server_child`, which exits when its parent is gone. A stdlib
    server stands in for llama.cpp here (the same wrapper, no model to load)."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[2]
    start = ("import os, subprocess, sys, time\n"
             "child = subprocess.Popen([sys.executable, '-m', 'llm_access.server_child', str(os.getpid()), "
             "'http.server', '0', '--bind', '127.0.0.1'], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
             "print(child.pid, flush=True)\ntime.sleep(120)\n")
    parent = subprocess.Popen([sys.executable, "-c", start], stdout=subprocess.PIPE, cwd=root, text=True)
    child = int(parent.stdout.readline())
    time.sleep(1.5)
    assert alive(child), "the wrapped server did not start"
    parent.kill()  # no exit handler runs
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not alive(child), "the server outlived the process that started it"
