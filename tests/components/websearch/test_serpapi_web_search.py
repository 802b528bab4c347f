"""SerpAPIWebSearch against a local SerpAPI-shaped HTTP server (the real ``serpapi`` client does the HTTP)."""

import logging
import socket
import time

import pytest
from haystack import Pipeline
from haystack.utils import Secret

from components.websearch.serpapi_web_search import SerpAPIWebSearch
from harness.serpapi_server import ScriptedSerpAPIServer

KEY = "test-key-5f3a9c1e7b"
RESULTS = [
    {"title": "中华人民共和国个人信息保护法", "link": "https://example.cn/pipl",
     "snippet": "第十三条 符合下列情形之一的"},
    {"title": "个人信息保护法解读", "link": "https://example.cn/guide", "snippet": "处理个人信息应当取得个人同意"},
    {"title": "只有标题的结果", "link": "https://example.cn/title-only"},
    {"title": "第四条", "link": "https://example.cn/4", "snippet": "第四条内容"},
]


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPAPI_API_KEY", KEY)
    monkeypatch.delenv("SERPAPI_BASE_URL", raising=False)
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def server():
    with ScriptedSerpAPIServer(results=[dict(r) for r in RESULTS]) as scripted:
        yield scripted


def free_port_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def test_results_become_documents_in_position_order(server: ScriptedSerpAPIServer) -> None:
    result = SerpAPIWebSearch(base_url=server.base_url, top_k=10).run(query="个人信息 同意")

    assert result["status"] == "ok"
    assert "4" in result["message"]
    docs = result["documents"]
    assert [d.meta["position"] for d in docs] == [1, 2, 3, 4]
    assert docs[0].content == "第十三条 符合下列情形之一的"
    assert docs[0].meta == {
        "url": "https://example.cn/pipl",
        "title": "中华人民共和国个人信息保护法",
        "snippet": "第十三条 符合下列情形之一的",
        "position": 1,
        "source": "web",
        "key": "web:https://example.cn/pipl",
    }
    assert docs[2].content == "只有标题的结果"  # no snippet: the title stands in
    assert docs[2].meta["snippet"] == ""
    assert server.paths == ["/search"]


def test_results_are_sorted_by_position_not_arrival(server: ScriptedSerpAPIServer) -> None:
    server.results = [{**RESULTS[1], "position": 2}, {**RESULTS[0], "position": 1}, {"title": "无链接", "position": 3}]
    docs = SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")["documents"]
    assert [d.meta["url"] for d in docs] == ["https://example.cn/pipl", "https://example.cn/guide"]


def test_request_parameters_and_top_k(server: ScriptedSerpAPIServer) -> None:
    search = SerpAPIWebSearch(base_url=server.base_url, top_k=3, location="Beijing, China", hl="zh-cn", gl="cn")
    result = search.run(query="  个人信息保护法  ")

    assert len(result["documents"]) == 3
    sent = server.requests[0]
    assert sent == {"engine": "google", "q": "个人信息保护法", "num": "3", "hl": "zh-cn", "gl": "cn",
                    "location": "Beijing, China", "api_key": KEY}

    result = search.run(query="个人信息保护法", top_k=2)
    assert len(result["documents"]) == 2
    assert server.requests[1]["num"] == "2"


def test_top_k_is_enforced_even_when_the_server_returns_more(server: ScriptedSerpAPIServer) -> None:
    server.results = [{"title": f"t{i}", "link": f"https://example.cn/{i}", "snippet": f"s{i}"} for i in range(25)]
    server.honour_num = False  # like Google, which may ignore num
    search = SerpAPIWebSearch(base_url=server.base_url, top_k=2)
    assert len(search.run(query="q")["documents"]) == 2
    result = search.run(query="q", top_k=50)  # clamped to 20
    assert server.requests[-1]["num"] == "20"
    assert len(result["documents"]) == 20


def test_allowed_domains_add_site_terms(server: ScriptedSerpAPIServer) -> None:
    search = SerpAPIWebSearch(base_url=server.base_url, allowed_domains=["flk.npc.gov.cn", "gov.cn"])
    search.run(query="个人信息保护法")
    assert server.requests[0]["q"] == "个人信息保护法 (site:flk.npc.gov.cn OR site:gov.cn)"


def test_base_url_from_env(server: ScriptedSerpAPIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPAPI_BASE_URL", server.base_url + "/")
    assert SerpAPIWebSearch().run(query="个人信息")["status"] == "ok"
    assert server.paths == ["/search"]


def test_two_components_use_their_own_hosts() -> None:
    with ScriptedSerpAPIServer(results=RESULTS[:1]) as first, ScriptedSerpAPIServer(results=RESULTS[1:2]) as second:
        a, b = SerpAPIWebSearch(base_url=first.base_url), SerpAPIWebSearch(base_url=second.base_url)
        assert a.run(query="q")["documents"][0].meta["url"] == RESULTS[0]["link"]
        assert b.run(query="q")["documents"][0].meta["url"] == RESULTS[1]["link"]
        assert len(first.requests) == len(second.requests) == 1


def test_no_key_skips_without_a_request(server: ScriptedSerpAPIServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SERPAPI_API_KEY")
    result = SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")
    assert result == {"documents": [], "status": "skipped_no_key", "message": result["message"]}
    assert "SERPAPI_API_KEY" in result["message"]
    monkeypatch.setenv("SERPAPI_API_KEY", "   ")
    assert SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")["status"] == "skipped_no_key"
    assert server.requests == []


def test_bad_key_is_an_error_that_never_shows_the_key(server: ScriptedSerpAPIServer,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    server.valid_key = "the-right-key"
    with caplog.at_level(logging.DEBUG):
        result = SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")

    assert result["status"] == "error"
    assert result["documents"] == []
    assert "401" in result["message"]
    assert "密钥无效" in result["message"] and "invalid API key" in result["message"]
    assert KEY not in result["message"]
    assert KEY not in caplog.text
    assert server.requests[0]["api_key"] == KEY  # it was sent, only never echoed


def test_server_error_is_reported(server: ScriptedSerpAPIServer) -> None:
    server.status, server.error = 500, "Internal server error."
    result = SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")
    assert result["status"] == "error"
    assert "HTTP 500" in result["message"]
    assert KEY not in result["message"]


def test_error_without_json_body_shows_no_key_from_the_url(server: ScriptedSerpAPIServer) -> None:
    server.status, server.raw_body = 502, "<html>bad gateway</html>"
    result = SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")
    assert result["status"] == "error"
    assert "HTTP 502" in result["message"]
    assert KEY not in result["message"]


def test_timeout_is_reported_within_the_timeout(server: ScriptedSerpAPIServer) -> None:
    server.delay = 3.0
    start = time.monotonic()
    result = SerpAPIWebSearch(base_url=server.base_url, timeout=0.5).run(query="个人信息")
    elapsed = time.monotonic() - start

    assert result["status"] == "error"
    assert "超时" in result["message"] and "0.5 s" in result["message"]
    assert KEY not in result["message"]
    assert elapsed < 0.5 + 1.0


def test_malformed_json_is_an_error(server: ScriptedSerpAPIServer) -> None:
    server.raw_body = '{"organic_results": [ {"title": '
    result = SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")
    assert result["status"] == "error"
    assert "JSON" in result["message"]

    server.raw_body = "[1, 2, 3]"  # valid JSON, but not an object
    assert SerpAPIWebSearch(base_url=server.base_url).run(query="个人信息")["status"] == "error"


def test_no_results(server: ScriptedSerpAPIServer) -> None:
    server.results = []
    result = SerpAPIWebSearch(base_url=server.base_url).run(query="不存在的法律")
    assert (result["status"], result["documents"]) == ("no_results", [])

    server.error = "Google hasn't returned any results for this query."  # serpapi.com answers 200 + error
    assert SerpAPIWebSearch(base_url=server.base_url).run(query="不存在的法律")["status"] == "no_results"


def test_unreachable_host_is_an_error() -> None:
    result = SerpAPIWebSearch(base_url=free_port_url(), timeout=2).run(query="个人信息")
    assert result["status"] == "error"
    assert "无法连接" in result["message"]
    assert KEY not in result["message"]


def test_empty_query_raises() -> None:
    with pytest.raises(ValueError, match="query"):
        SerpAPIWebSearch().run(query="  ")


@pytest.mark.parametrize("kwargs", [{"top_k": 0}, {"top_k": 21}, {"timeout": 0}, {"timeout": -1.0}])
def test_invalid_init_parameters(kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        SerpAPIWebSearch(**kwargs)


def test_serialisation_round_trip() -> None:
    search = SerpAPIWebSearch(top_k=7, timeout=3.5, location="Beijing, China", base_url="http://proxy:8080",
                              allowed_domains=["gov.cn"])
    data = search.to_dict()
    assert data == {
        "type": "components.websearch.serpapi_web_search.SerpAPIWebSearch",
        "init_parameters": {
            "api_key": {"type": "env_var", "env_vars": ["SERPAPI_API_KEY"], "strict": False},
            "top_k": 7,
            "timeout": 3.5,
            "engine": "google",
            "hl": "zh-cn",
            "gl": "cn",
            "location": "Beijing, China",
            "base_url": "http://proxy:8080",
            "allowed_domains": ["gov.cn"],
        },
    }
    assert KEY not in str(data)

    restored = SerpAPIWebSearch.from_dict(data)
    assert isinstance(restored.api_key, Secret)
    assert restored.api_key == Secret.from_env_var("SERPAPI_API_KEY", strict=False)
    assert restored.to_dict() == data
    for name in ("top_k", "timeout", "engine", "hl", "gl", "location", "base_url", "allowed_domains"):
        assert getattr(restored, name) == getattr(search, name)


def test_token_secret_refuses_to_serialise() -> None:
    with pytest.raises(ValueError):
        SerpAPIWebSearch(api_key=Secret.from_token(KEY)).to_dict()


def test_in_a_pipeline(server: ScriptedSerpAPIServer) -> None:
    pipe = Pipeline()
    pipe.add_component("web", SerpAPIWebSearch(base_url=server.base_url, top_k=2))
    restored = Pipeline.loads(pipe.dumps(), allowed_modules=["components"])
    out = restored.run({"web": {"query": "个人信息"}})["web"]
    assert out["status"] == "ok"
    assert [d.meta["key"] for d in out["documents"]] == ["web:https://example.cn/pipl", "web:https://example.cn/guide"]
