"""Security of the real server (subprocess, over HTTP): bearer auth with API_KEY, body limit, no runtime deployment
routes, safe upload names, loopback by default, secrets kept out of responses and logs."""

import json
from pathlib import Path

import httpx
import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.serpapi_server import ScriptedSerpAPIServer
from harness.server_process import ServerProcess
from interfaces.cli import build_parser

PIPL = "中华人民共和国个人信息保护法"
API_KEY = "test-api-key-0d1f"
SERPAPI_KEY = "serp-secret-4c2a"
LLM_KEY = "llm-secret-9b7e"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
MAX_BODY = 50_000


@pytest.fixture(scope="module")
def server(tmp_path_factory, e5_model):
    data = tmp_path_factory.mktemp("secure") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm, ScriptedSerpAPIServer(status=500, error="boom") as serp:
        llm.add_rule("法律检索质量评估员", '{"reasoning": "不够", "relevance": 3, "completeness": 3, "accuracy": 3, '
                                      '"coverage": 3, "missing": "缺少罚则"}')
        llm.add_rule("严谨的中国法律咨询助手", f"依据《{PIPL}》第十四条，需要同意。")
        env = server_env(data, e5_model, llm.base_url, API_KEY=API_KEY, MAX_BODY_BYTES=str(MAX_BODY),
                         SERPAPI_API_KEY=SERPAPI_KEY, SERPAPI_BASE_URL=serp.base_url, LLM_API_KEY=LLM_KEY)
        with ServerProcess(env, log_path=data.parent / "server.log") as app:
            yield {"base": app.base_url, "llm": llm, "log": app.log_path}


def post(server, path, payload, headers=AUTH, **kwargs):
    return httpx.post(f"{server['base']}{path}", json=payload, headers=headers, timeout=120, **kwargs)


def test_every_route_but_status_and_the_static_ui_needs_the_key(server):
    assert httpx.get(f"{server['base']}/status", timeout=5).status_code == 200
    assert httpx.get(f"{server['base']}/ui/", timeout=5).status_code == 200  # static files only, no data
    query = {"query": "个人信息", "mode": "retrieve"}
    missing = post(server, "/agentic_rag/run", query, headers={})
    assert missing.status_code == 401 and "API key" in missing.json()["detail"]
    assert missing.headers["www-authenticate"] == "Bearer"
    assert post(server, "/agentic_rag/run", query, headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert post(server, "/agentic_rag/run", query, headers={"Authorization": API_KEY}).status_code == 401
    chat = {"model": "agentic_rag", "messages": [{"role": "user", "content": "你好"}]}
    assert post(server, "/v1/chat/completions", chat, headers={}).status_code == 401
    assert post(server, "/knowledge_bases/run", {"action": "list"}, headers={}).status_code == 401
    assert httpx.get(f"{server['base']}/openapi.json", timeout=5).status_code == 401
    ok = post(server, "/agentic_rag/run", query)
    assert ok.status_code == 200 and ok.json()["result"]["documents"]
    assert post(server, "/v1/chat/completions", chat).status_code == 200


def test_runtime_deployment_routes_do_not_exist(server):
    for path in ("/deploy-yaml", "/deploy_files", "/undeploy/agentic_rag"):
        response = post(server, path, {"name": "x", "source_code": "import os", "files": {"x.py": "import os"}})
        assert response.status_code in (404, 405), path
    assert httpx.get(f"{server['base']}/draw/agentic_rag", headers=AUTH, timeout=5).status_code == 404


def test_oversized_bodies_are_refused_with_413(server):
    big = {"query": "问" * 30_000, "mode": "retrieve"}  # ~90 KB of UTF-8
    response = post(server, "/agentic_rag/run", big)
    assert response.status_code == 413 and str(MAX_BODY) in response.json()["detail"], response.text

    def chunks():  # a file part with no Content-Length: counted while it streams in
        yield b'--zzz\r\nContent-Disposition: form-data; name="files"; filename="a.txt"\r\n\r\n'
        for _ in range(20):
            yield "第一条 很长的文件。".encode() * 200

    streamed = httpx.post(f"{server['base']}/index/run", content=chunks(), timeout=60,
                          headers={**AUTH, "content-type": "multipart/form-data; boundary=zzz"})
    assert streamed.status_code == 413
    assert post(server, "/agentic_rag/run", {"query": "个人信息", "mode": "retrieve"}).status_code == 200


def test_upload_names_cannot_escape_or_smuggle_paths(server, tmp_path):
    files = {"files": ("../../../etc/员工手册.md", "第一条 员工请假需提前三天申请。\n".encode())}
    response = httpx.post(f"{server['base']}/index/run", data={"knowledge_base": "uploads", "wait": "true"},
                          files=files, headers=AUTH, timeout=120)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["results"][0]["source"] == "file:员工手册.md"
    for name in ("../x", "bad/name", "a" * 200):
        bad = httpx.post(f"{server['base']}/index/run", data={"knowledge_base": name}, files=files, headers=AUTH,
                         timeout=60)
        assert bad.status_code == 400, (name, bad.text)


def test_secrets_never_reach_responses_traces_or_logs(server):
    # the judge never passes → web search with a failing SerpAPI; the LLM key is sent to the LLM server only
    result = post(server, "/agentic_rag/run", {"query": "公司收集我的个人信息需要我同意吗", "mode": "agentic"})
    assert result.status_code == 200
    body = json.dumps(result.json(), ensure_ascii=False)
    assert result.json()["result"]["trace"]["web"]["status"] == "error"
    log = Path(server["log"]).read_text(errors="replace")
    for secret in (API_KEY, SERPAPI_KEY, LLM_KEY):
        assert secret not in body and secret not in log
    sent = server["llm"].requests[-1]
    assert API_KEY not in json.dumps(sent, ensure_ascii=False)


def test_the_server_binds_loopback_by_default(monkeypatch):
    monkeypatch.delenv("API_HOST", raising=False)
    assert build_parser().parse_args(["serve"]).host == "127.0.0.1"


def test_deployments_are_loaded_one_at_a_time():
    """Hayhooks' parallel start-up imports the wrapper modules in threads; once in CI one failed with
    "dictionary changed size during iteration" and the server came up without it."""
    from hayhooks.settings import StartupDeployStrategy, settings

    from config.settings import Settings
    from interfaces.app_factory import configure_hayhooks

    configure_hayhooks(Settings())
    assert settings.startup_deploy_strategy == StartupDeployStrategy.SEQUENTIAL
