"""Issue 46: an upload is a job that answers at once and shows its progress; a server killed during the job leaves
the knowledge base consistent and the job's state honest, and the next start resumes the job from its kept upload
(real server processes, the scripted LLM server)."""

import os
import signal
import time

import httpx
import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.server_process import ServerProcess

PIPL = "中华人民共和国个人信息保护法"
ARTICLES = 400


def rules(articles: int) -> bytes:
    lines = ["# 大型企业规章"]
    for i in range(1, articles + 1):
        lines.append(f"第{i}条 用人单位应当依照第{i}项规定为劳动者提供第{i % 37 + 1}类劳动保护，"
                     f"并在每年第{i % 12 + 1}月向职工代表大会报告执行情况；违反本条的，由第{i % 9 + 1}部门责令改正。")
    return "\n".join(lines).encode()


def job(base: str, job_id: str) -> dict:
    return httpx.get(f"{base}/index/jobs/{job_id}", timeout=10).json()


def knowledge_base(base: str, name: str) -> dict:
    listed = httpx.post(f"{base}/knowledge_bases/run", json={"action": "list"}, timeout=60).json()["result"]
    return next(kb for kb in listed["knowledge_bases"] if kb["name"] == name)


@pytest.mark.slow
def test_a_job_killed_with_the_server_is_resumed_by_the_next_start_and_the_store_stays_consistent(tmp_path, e5_model):
    data = tmp_path / "data"
    index_laws(data, e5_model, [PIPL])
    upload = {"files": ("企业规章.md", rules(ARTICLES))}
    with ScriptedOpenAIServer(default="好的") as llm:
        env = server_env(data, e5_model, llm.base_url)
        with ServerProcess(env, log_path=tmp_path / "first.log") as server:
            queued = httpx.post(f"{server.base_url}/index/run", data={"knowledge_base": "rules"}, files=upload,
                                timeout=30).json()["result"]
            assert queued["status"] == "queued"
            seen = []
            deadline = time.monotonic() + 300
            while not seen or seen[-1]["done"] == 0:
                state = job(server.base_url, queued["job_id"])
                assert state["status"] in ("queued", "running") and time.monotonic() < deadline, state
                seen.append(state["progress"])
                time.sleep(0.2)
            assert seen[-1]["total"] == ARTICLES and 0 < seen[-1]["done"] < ARTICLES, seen[-1]
            assert server.process is not None
            os.killpg(server.process.pid, signal.SIGKILL)  # no exit handler runs: as the out-of-memory killer does
            server.process.wait(timeout=30)
        with ServerProcess(env, log_path=tmp_path / "second.log") as again:
            assert knowledge_base(again.base_url, "statutes")["documents"] == 74  # the other base is untouched
            deadline = time.monotonic() + 300
            while (state := job(again.base_url, queued["job_id"]))["status"] != "done":
                assert state["status"] in ("queued", "running") and time.monotonic() < deadline, state
                time.sleep(0.5)
            assert state["resumed"] == 1
            assert state["results"] == [{"source": "file:企业规章.md", "action": "resumed", "count": ARTICLES}]
            finished = knowledge_base(again.base_url, "rules")
            assert (finished["documents"], finished["incomplete_sources"]) == (ARTICLES, 0)
            found = httpx.post(f"{again.base_url}/agentic_rag/run", timeout=60, json={
                "query": "劳动保护", "mode": "retrieve", "knowledge_base": "rules"}).json()["result"]
            assert found["documents"] and found["warnings"] == []
