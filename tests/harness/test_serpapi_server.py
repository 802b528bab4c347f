"""ScriptedSerpAPIServer, the SerpAPI stand-in, over plain HTTP: the answer's shape (positions, search metadata, the
parameters without the key), ``num``, the key check, error statuses and bodies, and the record of requests. What
SerpAPIWebSearch makes of its answers is in tests/components/websearch/test_serpapi_web_search.py."""

from __future__ import annotations

import httpx
import pytest

from harness.serpapi_server import INVALID_KEY_ERROR, ScriptedSerpAPIServer

RESULTS = [{"title": "个人信息保护法", "link": "https://example.cn/pipl", "snippet": "第十三条"},
           {"title": "解读", "link": "https://example.cn/guide", "position": 7},
           {"title": "第三个", "link": "https://example.cn/3"}]


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)


def search(server: ScriptedSerpAPIServer, path: str = "/search", **params: str) -> httpx.Response:
    return httpx.get(f"{server.base_url}{path}", params={"engine": "google", "api_key": "k", **params}, timeout=5)


def test_results_are_numbered_and_the_parameters_echoed_without_the_key() -> None:
    with ScriptedSerpAPIServer(results=RESULTS) as server:
        answer = search(server, q="个人信息 同意")
    assert answer.status_code == 200 and answer.headers["content-type"] == "application/json; charset=utf-8"
    body = answer.json()
    assert [(r["position"], r["title"]) for r in body["organic_results"]] == [(1, "个人信息保护法"), (7, "解读"),
                                                                            (3, "第三个")]  # a position given is kept
    assert body["search_parameters"] == {"engine": "google", "q": "个人信息 同意"}
    assert body["search_metadata"]["status"] == "Success" and body["search_metadata"]["id"] == "scripted-1"
    assert RESULTS[0].get("position") is None  # the scripted results are not changed


@pytest.mark.parametrize(("num", "honour", "count"), [("2", True, 2), ("10", True, 3), ("2", False, 3),
                                                      ("two", True, 3), ("", True, 3)])
def test_num_cuts_the_results_when_honoured(num: str, honour: bool, count: int) -> None:
    with ScriptedSerpAPIServer(results=RESULTS, honour_num=honour) as server:
        assert len(search(server, q="x", num=num).json()["organic_results"]) == count


def test_another_key_than_the_valid_one_is_refused_as_serpapi_does() -> None:
    with ScriptedSerpAPIServer(results=RESULTS, valid_key="right") as server:
        refused = search(server, q="x", api_key="wrong")
        missing = httpx.get(f"{server.base_url}/search", params={"q": "x"}, timeout=5)
        accepted = search(server, q="x", api_key="right")
    assert (refused.status_code, refused.json()) == (401, {"error": INVALID_KEY_ERROR})
    assert missing.status_code == 401
    assert accepted.status_code == 200 and len(accepted.json()["organic_results"]) == 3


def test_an_error_status_carries_the_error_or_a_generic_one() -> None:
    with ScriptedSerpAPIServer(status=429, error="Your account has run out of searches.") as server:
        assert (search(server, q="x").status_code, search(server, q="x").json()) == (
            429, {"error": "Your account has run out of searches."})
    with ScriptedSerpAPIServer(status=500) as server:
        assert search(server, q="x").json() == {"error": "Internal server error."}


def test_no_results_with_an_error_is_a_200_with_the_error_and_no_results() -> None:
    message = "Google hasn't returned any results for this query."
    with ScriptedSerpAPIServer(error=message) as server:
        body = search(server, q="无结果").json()
        assert body["error"] == message and "organic_results" not in body
        server.error = None  # settings change while it runs
        assert search(server, q="无结果").json()["organic_results"] == []


def test_a_raw_body_is_sent_verbatim_with_the_status() -> None:
    with ScriptedSerpAPIServer(results=RESULTS, raw_body="<html>bad gateway</html>", status=502) as server:
        answer = search(server, q="x")
    assert (answer.status_code, answer.text) == (502, "<html>bad gateway</html>")


def test_requests_and_paths_are_recorded_and_an_unknown_path_is_404() -> None:
    with ScriptedSerpAPIServer(results=RESULTS) as server:
        search(server, q="第一次")
        lost = search(server, "/account", q="第二次")
        httpx.get(f"{server.base_url}/search?q=a&q=b&empty=", timeout=5)
    assert (lost.status_code, lost.json()) == (404, {"error": "Unknown path /account"})
    assert server.paths == ["/search", "/account", "/search"]
    assert server.requests[0] == {"engine": "google", "api_key": "k", "q": "第一次"}
    assert server.requests[2] == {"q": "b", "empty": ""}  # the last value of a repeated name; blanks kept
