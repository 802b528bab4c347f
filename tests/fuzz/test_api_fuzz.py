"""Fuzz test of the HTTP API: the real server (a child process) with the scripted LLM server and a small knowledge base.

What is fuzzed, with well-typed-but-weird and ill-typed payloads (wrong types, missing and unknown fields, huge and
unicode strings, nested junk, invalid filters, out-of-range / float / bool / string top_k, unknown modes, chat
messages without a user, without role or content or with non-string contents) and raw non-JSON bodies:

* ``POST /agentic_rag/run`` (mostly the cheap ``retrieve`` mode or invalid payloads; a minority of LLM modes);
* ``POST /v1/chat/completions`` (streaming and not);
* ``POST /knowledge_bases/run`` (deletion only of random names and of scratch knowledge bases this test creates);
* ``POST /index/run`` (a few multipart uploads of small random bytes);
* every operation of ``/openapi.json`` with schema-shaped random JSON, and raw random bodies.

Properties: the status is below 500; a 4xx answer is JSON with a human-readable ``detail``; no traceback is ever sent;
requests that are plainly valid get 200 and plainly invalid ones 4xx; streams end properly; after each test the
server process is alive and ``/status`` answers.

Bound: 120 + 100 + 50 + 15 + 50 + 40 examples, about 400 requests in all (derandomized: the same ones on every run);
the server start and its first index take half of the time; about 25 s in all on two busy cores.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from application.validation import MAX_QUERY_CHARS
from components.preprocessors.statute_splitter import StatuteSplitter
from document_store.text_files import FileLoadError, text_document
from harness.app_server import server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.server_process import ServerProcess
from helpers.records.contracts import CHAT_MODES, Mode
from interfaces.chat_api import MAX_TOP_K

MODES = tuple(mode.value for mode in Mode)

DEFAULT_KB = "statutes"
SCRATCH_KBS = ("fuzz_scratch", "fuzz-scratch-2")  # the only knowledge bases the fuzzed requests may create or delete
LAW = "示例保护法"
STATUTE = f"# {LAW}\n第一章 总则\n第一条 为了保护个人信息权益，制定本法。\n第二条 处理个人信息应当取得个人同意。\n" \
          "第三条 个人有权查阅、复制其个人信息。\n第四条 本法自公布之日起施行。\n"
NAME_RE = re.compile(r"[A-Za-z0-9_\-]{1,64}")

FUZZ = settings(deadline=None, derandomize=True, database=None, print_blob=False,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])


@dataclass
class Server:
    app: ServerProcess
    client: httpx.Client


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, e5_model: Path) -> Iterator[Server]:
    data = tmp_path_factory.mktemp("fuzz") / "data"
    with ScriptedOpenAIServer(default="好的。") as llm, \
            ServerProcess(server_env(data, e5_model, llm.base_url), log_path=data.parent / "server.log") as app, \
            httpx.Client(base_url=app.base_url, timeout=120) as client:
        indexed = client.post("/index/run", data={"knowledge_base": DEFAULT_KB, "wait": "true"},
                              files={"files": (f"{LAW}.md", STATUTE.encode())})
        assert indexed.status_code == 200, indexed.text
        yield Server(app, client)


@pytest.fixture(autouse=True)
def server_survives(server: Server) -> Iterator[None]:
    """After every test the server process is still alive and answers."""
    yield
    assert server.app.process is not None and server.app.process.poll() is None, server.app.log_tail()
    status = server.client.get("/status", timeout=10)
    assert status.status_code == 200 and "agentic_rag" in status.json()["pipelines"], status.text


# --- what every answer must satisfy -------------------------------------------------------------------------------

def human_readable(detail: Any) -> bool:
    """FastAPI's own 422 detail is a list of errors with a ``msg``; ours is a sentence."""
    if isinstance(detail, str):
        return bool(detail.strip())
    return isinstance(detail, list) and bool(detail) and all(
        isinstance(e, dict) and isinstance(e.get("msg"), str) and e["msg"].strip() for e in detail)


def check_answer(response: httpx.Response) -> None:
    """Never a 5xx or a traceback; every 4xx says what was wrong."""
    summary = f"{response.request.method} {response.request.url.path} -> {response.status_code}: {response.text[:500]}"
    assert response.status_code < 500, summary
    assert "Traceback (most recent call last)" not in response.text, summary
    if response.status_code >= 400:
        assert response.headers.get("content-type", "").startswith("application/json"), summary
        assert human_readable(response.json().get("detail")), summary


def read_stream(response: httpx.Response) -> list[Any]:
    """The data events of a finished server-sent-event stream (raises when the stream breaks off)."""
    events = []
    for line in response.iter_lines():
        if line.startswith("data: ") and line != "data: [DONE]":
            events.append(json.loads(line[len("data: "):]))
    return events


def askable(query: str) -> bool:
    """A question the API must take: something visible (not only spaces, NUL or zero-width characters), valid
    Unicode (no lone surrogate), within the limit."""
    return (any(c.isprintable() and not c.isspace() for c in query)
            and not any("\ud800" <= c <= "\udfff" for c in query) and len(query.strip()) <= MAX_QUERY_CHARS)


def post(server: Server, path: str, **kwargs: Any) -> httpx.Response:
    response = server.client.post(path, **kwargs)
    check_answer(response)
    return response


# --- strategies -------------------------------------------------------------------------------------------------

SCALARS = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False),
                    st.text(max_size=20))
JUNK = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                     st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                    max_leaves=12)
HUGE = st.builds(lambda ch, n: ch * n, st.sampled_from(["同", "a", " ", "\u3000", "𝔘", "\x00"]),
                 st.sampled_from([MAX_QUERY_CHARS, MAX_QUERY_CHARS + 1, 20_000, 100_000]))
QUERY = st.one_of(st.sampled_from(["处理个人信息需要同意吗", "同意", "第二条规定了什么", "  查阅 ", "个人信息\n权益"]),
                  st.text(max_size=40), HUGE, st.sampled_from(["", "   ", "\n\t", "\u3000"]))
TOP_K = st.one_of(st.integers(-3, MAX_TOP_K + 3),
                  st.sampled_from([0, 1, MAX_TOP_K, 10**30, -(10**30), True, False, 1.0, 2.5, "5", " 7 ", "٣", "1e3",
                                   "", "ten", None]), JUNK)
VALID_FILTER_VALUES: list[dict[str, Any] | None] = [
    None, {},
    {"field": "meta.law", "operator": "==", "value": LAW},
    {"field": "meta.law", "operator": "!=", "value": "别的法"},
    {"field": "meta.article_no", "operator": "in", "value": ["第一条", "第二条"]},
    {"operator": "AND", "conditions": [{"field": "meta.law", "operator": "==", "value": LAW},
                                       {"field": "meta.chapter", "operator": "==", "value": "第一章 总则"}]},
]
VALID_FILTERS = st.sampled_from(VALID_FILTER_VALUES)
BAD_FILTERS = st.one_of(
    st.sampled_from([
        {"field": 1, "operator": "nope"},
        {"field": "meta.law", "operator": "nope", "value": LAW},
        {"field": "meta.law", "operator": "in", "value": LAW},
        {"field": "meta.law", "operator": ">", "value": "x"},
        {"field": "meta.law", "operator": "=="},
        {"operator": "AND", "conditions": "x"},
        {"operator": "AND", "conditions": [1]},
        {"operator": "XOR", "conditions": []},
        {"operator": "NOT", "conditions": [{"field": 1, "operator": "==", "value": 1}]},
        {"field": "meta.law"}, {"conditions": []}, [], "meta.law == x",
    ]),
    st.fixed_dictionaries({"field": JUNK, "operator": JUNK}, optional={"value": JUNK, "conditions": JUNK}),
    st.fixed_dictionaries({"operator": st.sampled_from(["AND", "OR", "NOT"]),
                           "conditions": st.lists(JUNK, max_size=3)}),
    JUNK,
)
KB_NAME = st.one_of(st.none(), st.just(DEFAULT_KB), st.sampled_from(SCRATCH_KBS),
                    st.from_regex(NAME_RE, fullmatch=True),
                    st.sampled_from(["", "../x", "a/b", "kb__sources", "x" * 65, "名字", "statutes\n", "kb\n"]),
                    st.text(max_size=20))
# mostly the cheap retrieval; the modes that call the (scripted) LLM stay a minority
MODE = st.one_of(st.just("retrieve"), st.just("retrieve"), st.just("retrieve"), st.sampled_from(MODES),
                 st.sampled_from(["magic", "", "RAG", " rag", "retrieve\n"]), JUNK)

UNSET = object()


def without_unset(draws: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in draws.items() if v is not UNSET}


def maybe(strategy: st.SearchStrategy[Any], weight: int = 4) -> st.SearchStrategy[Any]:
    """A field that is usually present (``weight`` in ``weight + 1``) and sometimes missing."""
    return st.one_of(*[strategy] * weight, st.just(UNSET))


VALID_QUERY = st.one_of(st.sampled_from(["处理个人信息需要同意吗", "同意", "第二条规定了什么", "个人信息\n权益"]),
                        st.text(min_size=1, max_size=30).filter(str.strip))
CHEAP_MODE = st.one_of(st.just("retrieve"), st.just("retrieve"), st.sampled_from(MODES))


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[dict[str, Any]],
            weird: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    """A valid payload with one or two fields made weird or removed, so that each weird value gets past the others."""
    payload = dict(draw(base))
    for name in draw(st.lists(st.sampled_from(sorted(weird)), min_size=1, max_size=2, unique=True)):
        if draw(st.integers(0, 5)) == 0:
            payload.pop(name, None)
        else:
            payload[name] = draw(weird[name])
    return payload


VALID_RUN = st.fixed_dictionaries({"query": VALID_QUERY, "mode": CHEAP_MODE},
                                  optional={"top_k": st.integers(1, MAX_TOP_K), "filters": VALID_FILTERS,
                                            "knowledge_base": st.sampled_from([None, DEFAULT_KB])})
RUN_PAYLOAD = st.one_of(
    VALID_RUN,
    *[mutated(VALID_RUN, {"query": st.one_of(QUERY, JUNK), "mode": MODE, "top_k": TOP_K, "filters": BAD_FILTERS,
                          "knowledge_base": st.one_of(KB_NAME, JUNK), "extra": JUNK})] * 4,
    st.fixed_dictionaries({}, optional={"query": JUNK, "mode": JUNK, "top_k": JUNK, "filters": JUNK}),
    JUNK,
)


def plainly_valid_run(payload: Any) -> bool:
    return (isinstance(payload, dict) and isinstance(payload.get("query"), str)
            and askable(payload["query"]) and payload.get("mode", "agentic") in MODES
            and type(payload.get("top_k", 10)) is int and 1 <= payload.get("top_k", 10) <= MAX_TOP_K
            and payload.get("filters") in VALID_FILTER_VALUES and payload.get("knowledge_base") in (None, DEFAULT_KB)
            and "extra" not in payload)


def plainly_invalid_run(payload: Any) -> bool:
    if not isinstance(payload, dict):
        return True
    query, mode, top_k = payload.get("query", UNSET), payload.get("mode", "agentic"), payload.get("top_k", 10)
    return (query is UNSET or (isinstance(query, str) and not askable(query))
            or (isinstance(mode, str) and mode not in MODES)
            or (type(top_k) is int and not 1 <= top_k <= MAX_TOP_K)
            or (isinstance(payload.get("knowledge_base"), str) and not NAME_RE.fullmatch(payload["knowledge_base"])))


# --- /agentic_rag/run ---------------------------------------------------------------------------------------------

@settings(FUZZ, max_examples=120)
@given(payload=RUN_PAYLOAD)
@example(payload={"query": "同意", "mode": "retrieve", "filters": {"field": 1, "operator": "nope"}})
@example(payload={"query": "同意", "mode": "retrieve",
                  "filters": {"field": "meta.law", "operator": "in", "value": "x"}})
@example(payload={"query": "同意", "mode": "retrieve", "top_k": 3, "filters": VALID_FILTER_VALUES[4]})
def test_run_endpoint(server: Server, payload: Any) -> None:
    response = post(server, "/agentic_rag/run", json=payload)
    if plainly_valid_run(payload):
        assert response.status_code == 200, (payload, response.text[:500])
    if plainly_invalid_run(payload):
        assert 400 <= response.status_code < 500, (payload, response.text[:500])
    if response.status_code == 200:
        result = response.json()["result"]
        assert result["mode"] == payload.get("mode", "agentic")
        if result["mode"] == "retrieve":
            assert len(result["documents"]) <= int(payload.get("top_k", 10))
            assert all(d["key"].startswith(LAW) for d in result["documents"])
        else:
            assert isinstance(result["answer"], str) and result["answer"]


# --- /v1/chat/completions -----------------------------------------------------------------------------------------

CONTENT = st.one_of(QUERY, st.sampled_from(["那第二条呢？", "那么第三条呢", "如果不同意呢"]), JUNK,
                    st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=10)}),
                             max_size=2))
ROLE = st.one_of(st.sampled_from(["user", "user", "assistant", "system", "tool"]), JUNK)
MESSAGE = st.one_of(
    st.fixed_dictionaries({"role": st.just("user"), "content": QUERY}),
    st.fixed_dictionaries({}, optional={"role": ROLE, "content": CONTENT, "name": st.text(max_size=5)}),
)
MESSAGES = st.one_of(st.lists(MESSAGE, max_size=4), st.lists(st.one_of(MESSAGE, JUNK), max_size=3), JUNK)
CONVERSATION = st.builds(
    lambda history, last: [*history, {"role": "user", "content": last}],
    st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system"]), "content": VALID_QUERY}),
             max_size=3),
    st.one_of(VALID_QUERY, st.sampled_from(["那第二条呢？", "那么第三条呢", "如果不同意呢"])))


@st.composite
def odd_conversations(draw: st.DrawFn) -> list[Any]:
    """A valid conversation with one odd message put in somewhere (no role, no content, odd types, not a dict)."""
    messages: list[Any] = draw(CONVERSATION)
    odd = draw(st.one_of(MESSAGE, JUNK, st.sampled_from([{"role": "user"}, {"content": "x"}, {"role": None},
                                                         {"role": "user", "content": None}, {}])))
    messages.insert(draw(st.integers(0, len(messages))), odd)
    return messages


VALID_CHAT = st.fixed_dictionaries({"model": st.just("agentic_rag"), "messages": CONVERSATION},
                                   optional={"mode": CHEAP_MODE, "stream": st.booleans(),
                                             "top_k": st.integers(1, MAX_TOP_K), "filters": VALID_FILTERS,
                                             "knowledge_base": st.sampled_from([None, DEFAULT_KB])})
CHAT_BODY = st.one_of(
    VALID_CHAT,
    *[mutated(VALID_CHAT, {
        "model": st.one_of(st.sampled_from(["index", "knowledge_bases", "nope", "", "agentic_rag "]), JUNK),
        "messages": st.one_of(odd_conversations(), odd_conversations(), MESSAGES), "stream": JUNK, "mode": MODE,
        "knowledge_base": st.one_of(KB_NAME, JUNK), "top_k": TOP_K, "filters": BAD_FILTERS, "temperature": JUNK,
    })] * 4,
    st.fixed_dictionaries({}, optional={"model": JUNK, "messages": MESSAGES, "stream": JUNK}),
    JUNK,
)
USER_QUESTION = {"role": "user", "content": "处理个人信息需要同意吗"}


def has_user_question(body: dict[str, Any]) -> bool:
    messages = body.get("messages")
    return isinstance(messages, list) and any(
        isinstance(m, dict) and m.get("role") == "user" and str(m.get("content", "")).strip() for m in messages)


def plainly_invalid_chat(body: Any) -> bool:
    return (not isinstance(body, dict) or body.get("model", UNSET) != "agentic_rag" or not has_user_question(body)
            or (isinstance(body.get("mode"), str) and body["mode"] not in CHAT_MODES))


def plainly_valid_chat(body: Any) -> bool:
    if not isinstance(body, dict) or body.get("model") != "agentic_rag" or not isinstance(body.get("messages"), list):
        return False
    messages = body["messages"]
    well_formed = all(isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                      for m in messages)
    last_user = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"][-1:]
    return (well_formed and bool(last_user) and askable(last_user[0]["content"])
            and body.get("mode", "agentic") in CHAT_MODES and type(body.get("top_k", 10)) is int
            and 1 <= body.get("top_k", 10) <= MAX_TOP_K and body.get("filters") in VALID_FILTER_VALUES
            and body.get("knowledge_base") in (None, DEFAULT_KB) and type(body.get("stream", False)) is bool)


@settings(FUZZ, max_examples=100)
@given(body=CHAT_BODY)
@example(body={"model": "agentic_rag", "messages": [USER_QUESTION], "mode": "retrieve"})  # 400: chat needs an answer
@example(body={"model": "agentic_rag", "messages": [USER_QUESTION], "mode": "retrieve", "stream": True})
@example(body={"model": "agentic_rag", "messages": [USER_QUESTION], "knowledge_base": 5})
@example(body={"model": "agentic_rag",
               "messages": [USER_QUESTION, {"content": "x"}, {"role": "user", "content": "那第二条呢"}]})
@example(body={"model": "agentic_rag", "messages": [{"role": "user"}, {"role": "user", "content": "那第二条呢"}]})
@example(body={"model": "agentic_rag", "messages": [USER_QUESTION], "filters": {"field": 1, "operator": "nope"}})
def test_chat_completions(server: Server, body: Any) -> None:
    with server.client.stream("POST", "/v1/chat/completions", json=body) as response:
        streaming = response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        if streaming:
            try:
                events = read_stream(response)
            except httpx.RemoteProtocolError as error:
                pytest.fail(f"the stream broke off ({error}) for {body!r}")
            assert events, body
            assert events[-1]["choices"][0]["finish_reason"] == "stop", events[-3:]
            text = "".join((e.get("choices") or [{}])[0].get("delta", {}).get("content") or "" for e in events)
            assert "Traceback" not in text
        else:
            response.read()
            check_answer(response)
    if plainly_valid_chat(body):
        assert response.status_code == 200, (body, "" if streaming else response.text[:500])
    if plainly_invalid_chat(body):
        assert 400 <= response.status_code < 500, body
    if response.status_code == 200 and not body.get("stream"):
        reply = response.json()
        assert reply["choices"][0]["message"]["content"], reply


# --- /knowledge_bases/run -----------------------------------------------------------------------------------------

DELETABLE = st.one_of(st.sampled_from(SCRATCH_KBS), st.from_regex(NAME_RE, fullmatch=True),
                      st.sampled_from(["", "../x", "kb__sources", "x" * 65, "名字", "kb\n", f"{SCRATCH_KBS[0]}\n"]),
                      st.text(max_size=20)).filter(lambda name: name.strip() != DEFAULT_KB)
KB_PAYLOAD = st.one_of(
    st.fixed_dictionaries({"action": maybe(st.one_of(st.sampled_from(["list", "delete", "delete", "drop", "LIST", ""]),
                                                     JUNK), 6),
                           "name": maybe(st.one_of(DELETABLE, JUNK.filter(lambda v: v != DEFAULT_KB)), 4)}
                          ).map(without_unset),
    JUNK,
)


@settings(FUZZ, max_examples=50)
@given(payload=KB_PAYLOAD)
@example(payload={"action": "delete", "name": "kb\n"})
def test_knowledge_bases(server: Server, payload: Any) -> None:
    response = post(server, "/knowledge_bases/run", json=payload)
    action = payload.get("action", "list") if isinstance(payload, dict) else None
    if isinstance(payload, dict) and action == "list" and (payload.get("name") is None or
                                                            isinstance(payload.get("name"), str)):
        assert response.status_code == 200, response.text
        assert DEFAULT_KB in [kb["name"] for kb in response.json()["result"]["knowledge_bases"]]
    elif isinstance(action, str) and action not in ("list", "delete"):
        assert 400 <= response.status_code < 500
    elif action == "delete" and isinstance(payload.get("name"), str):
        name = payload["name"]
        assert response.status_code in ((200, 404) if name in SCRATCH_KBS else (404,) if NAME_RE.fullmatch(name)
                                        else (400,)), (name, response.text)
    listed = server.client.post("/knowledge_bases/run", json={"action": "list"}).json()["result"]["knowledge_bases"]
    default = next(kb for kb in listed if kb["name"] == DEFAULT_KB)
    assert (default["documents"], default["sources"]) == (4, 1)  # never touched by the fuzzing


# --- /index/run ---------------------------------------------------------------------------------------------------

SMALL_TEXT = st.one_of(
    st.text(min_size=1, max_size=40).filter(lambda t: t.strip() and "\x00" not in t).map(str.encode),
    st.builds(lambda n, body: f"第{n}条 {body}\n第{n}条之一 {body}又一条".encode(),
              st.sampled_from(["一", "2", "十二", "零"]),
              st.text(alphabet="个人信息同意处理。", min_size=1, max_size=12)),
    st.sampled_from([STATUTE.encode()[:60], "\ufeff# 标题\n正文。".encode(), b"plain ascii text"]),
)
SMALL_BYTES = st.one_of(
    SMALL_TEXT,
    st.binary(max_size=64),
    st.sampled_from([b"", b"\xef\xbb\xbf", b" \n", b"a\x00b", "第一条 甲".encode("gbk"), b"\xff\xfe"]),
)
UPLOAD_NAME = st.sampled_from(["a.txt", "手册.md", "x", "no suffix", "dir/y.md", "../z.txt"])
NO_SUCH_LAWS = st.lists(st.text(min_size=1, max_size=10).map(lambda s: f"不存在的{s}"), min_size=1, max_size=2)


def stored_articles(server: Server, knowledge_base: str, source: str) -> set[tuple[str, str]]:
    """(key, text) of every document of one source in a knowledge base."""
    response = post(server, "/agentic_rag/run", json={
        "query": "内容", "mode": "retrieve", "top_k": MAX_TOP_K, "knowledge_base": knowledge_base,
        "filters": {"field": "meta.source", "operator": "==", "value": source}})
    assert response.status_code == 200, response.text
    return {(d["key"], d["text"]) for d in response.json()["result"]["documents"]}


@settings(FUZZ, max_examples=15)
@given(knowledge_base=st.one_of(st.sampled_from(SCRATCH_KBS), st.sampled_from(SCRATCH_KBS),
                                st.sampled_from(["../x", "名字", "k" * 65, "kb\n"])),
       laws=st.one_of(st.just([]), st.just([]), st.just([]), NO_SUCH_LAWS),
       files=st.one_of(*[st.lists(st.tuples(UPLOAD_NAME, SMALL_TEXT), min_size=1, max_size=2)] * 2,
                       st.lists(st.tuples(UPLOAD_NAME, SMALL_BYTES), max_size=2)))
@example(knowledge_base=SCRATCH_KBS[0], laws=[], files=[("a.txt", "第1十条 内容。".encode())])  # mixed numerals
@example(knowledge_base="kb\n", laws=[], files=[("a.txt", "内容。".encode())])  # a name with a line break
@example(knowledge_base=SCRATCH_KBS[1], laws=[],  # one file name twice in one upload
         files=[("a.txt", "第一条 甲。\n第二条 乙。".encode()), ("a.txt", "第一条 丙。".encode())])
def test_index_uploads(server: Server, knowledge_base: str, laws: list[str], files: list[tuple[str, bytes]]) -> None:
    form = {"knowledge_base": knowledge_base, "wait": "true", **({"laws": laws} if laws else {})}
    response = post(server, "/index/run", data=form, files=[("files", f) for f in files] or None)
    documents = []
    for name, data in files:
        try:
            documents.append(text_document(data, PurePosixPath(name).name))  # the server sees the base name
        except FileLoadError:
            documents.append(None)
    sources = [doc.meta["source"] for doc in documents if doc]
    if laws or not files or None in documents or not NAME_RE.fullmatch(knowledge_base) or len(set(sources)) < len(
            sources):  # two files with one name would overwrite each other's articles: refused
        assert 400 <= response.status_code < 500, response.text
        return
    # valid UTF-8 text into a valid knowledge base is indexed, whatever the text says, and all of it is kept
    assert response.status_code == 200, (files, response.text)
    results = response.json()["result"]["results"]
    assert sorted(r["source"] for r in results) == sorted(doc.meta["source"] for doc in documents if doc)
    expected = {(d.meta["key"], d.content) for d in StatuteSplitter().run(documents=documents)["documents"]}
    stored = set()
    for result in results:
        assert result["action"] in ("added", "replaced", "unchanged")
        articles = stored_articles(server, knowledge_base, result["source"])
        assert result["count"] == len(articles), (result, articles)
        stored |= articles
    assert stored == expected, (files, results)


# --- raw bodies and the OpenAPI schema ----------------------------------------------------------------------------

CONTENT_TYPES = st.sampled_from(["application/json", "application/json; charset=latin-1", "text/plain",
                                 "multipart/form-data; boundary=xyz", "multipart/form-data",
                                 "application/x-www-form-urlencoded", "application/octet-stream", ""])
RAW_BODY = st.one_of(st.binary(max_size=200), st.text(max_size=100).map(str.encode),
                     st.sampled_from([b"", b"{", b"[]", b"null", b'{"query": "\xff"}', b"--xyz\r\n\r\n--xyz--",
                                      b'{"query": "' + "同".encode() * 30_000 + b'"}', b"\xef\xbb\xbf{}"]))


class Operation(NamedTuple):
    method: str
    path: str
    fields: tuple[str, ...]  # the properties of its request body


@pytest.fixture(scope="module")
def operations(server: Server) -> list[Operation]:
    """Every operation in /openapi.json that takes a request body."""
    schema = server.client.get("/openapi.json").json()
    found = []
    for path, methods in schema["paths"].items():
        for method, spec in methods.items():
            if "requestBody" not in spec or "{" in path:
                continue
            body = next(iter(spec["requestBody"].get("content", {}).values()), {}).get("schema", {})
            if "$ref" in body:
                body = schema["components"]["schemas"][body["$ref"].rsplit("/", 1)[1]]
            found.append(Operation(method.upper(), path, tuple(body.get("properties", {}))))
    assert {o.path for o in found} >= {"/agentic_rag/run", "/index/run", "/knowledge_bases/run", "/v1/chat/completions"}
    return found


@settings(FUZZ, max_examples=50)
@given(data=st.data(), body=RAW_BODY, content_type=CONTENT_TYPES)
def test_raw_bodies_on_every_operation(server: Server, operations: list[Operation], data: st.DataObject, body: bytes,
                                       content_type: str) -> None:
    operation = data.draw(st.sampled_from(operations))
    headers = {"content-type": content_type} if content_type else {}
    # a connection of its own: one request's junk must not decide how the next one is read
    response = httpx.request(operation.method, f"{server.app.base_url}{operation.path}", content=body,
                             headers=headers, timeout=120)
    check_answer(response)


@settings(FUZZ, max_examples=40)
@given(data=st.data())
def test_schema_shaped_json_on_every_operation(server: Server, operations: list[Operation],
                                               data: st.DataObject) -> None:
    operation = data.draw(st.sampled_from(operations))
    value = st.one_of(JUNK, QUERY, st.sampled_from(["agentic_rag", "list", "retrieve"]))
    fields = {name: maybe(value, 2) for name in operation.fields
              if not (operation.path == "/knowledge_bases/run" and name == "name")}
    payload = without_unset(data.draw(st.fixed_dictionaries(fields)))
    if operation.path == "/knowledge_bases/run" and payload.get("action") == "delete":
        payload["name"] = data.draw(DELETABLE)
    check_answer(server.client.request(operation.method, operation.path, json=payload))


# --- filters, Unicode and sizes: 2,000 requests (issue 63, item 3) ---------------------------------------------

SURROGATES = st.sampled_from(["\ud800", "\udfff", "\udc80", "\ud83d"])  # lone halves: JSON can carry them
INVISIBLE = st.sampled_from(["\x00", "\u200b", "\u200d", "\ufeff", "\u2028", "\u00ad", "\x7f", "\u3000", "\ue000"])
ANY_TEXT = st.text(st.characters(codec=None, exclude_categories=()), max_size=30)  # surrogates included
UNICODE_QUERY = st.one_of(
    VALID_QUERY, ANY_TEXT, HUGE,
    st.lists(INVISIBLE, min_size=1, max_size=6).map("".join),
    st.builds(lambda text, bad, at: text[:at] + bad + text[at:], VALID_QUERY, SURROGATES, st.integers(0, 30)),
    st.builds(lambda text, pad: pad + text + pad, VALID_QUERY, st.lists(INVISIBLE, max_size=3).map("".join)),
)
FIELD = st.one_of(st.sampled_from(["meta.law", "meta.article_no", "meta.source", "meta.valid_from", "meta.chapter",
                                   "content", "id", "", " ", "meta.", "meta.law\x00", "x" * 300]), ANY_TEXT, JUNK)
VALUE = st.one_of(JUNK, ANY_TEXT, st.sampled_from([LAW, "2021-11-01", "2021-11-01T00:00:00", 10**30, -(10**30), 2**63,
                                                   float("inf"), float("-inf"), float("nan"), 1e308, [], [LAW],
                                                   [[LAW]], [{"a": 1}], {"a": 1}, "\ud800"]),
                  st.lists(st.one_of(SCALARS, ANY_TEXT), max_size=5))
OPERATOR = st.one_of(st.sampled_from(["==", "!=", ">", ">=", "<", "<=", "in", "not in", "AND", "OR", "NOT"]), JUNK,
                     st.sampled_from(["=", "IN", "and", " ==", "contains", "$eq"]))
COMPARISON = st.fixed_dictionaries({"field": FIELD, "operator": OPERATOR, "value": VALUE},
                                   optional={"conditions": JUNK, "extra": JUNK})
FILTER = st.recursive(
    COMPARISON,
    lambda inner: st.fixed_dictionaries({"operator": st.one_of(st.sampled_from(["AND", "OR", "NOT"]), OPERATOR),
                                         "conditions": st.one_of(st.lists(inner, max_size=3), inner, JUNK)},
                                        optional={"field": FIELD, "value": VALUE}),
    max_leaves=10)


def nested(condition: Any, depth: int) -> Any:
    for _ in range(depth):
        condition = {"operator": "NOT", "conditions": [condition]}
    return condition


DEEP_FILTER = st.builds(nested, st.one_of(st.sampled_from(VALID_FILTER_VALUES[2:]), COMPARISON),
                        st.sampled_from([7, 8, 9, 50, 200, 900]))
WIDE_FILTER = st.builds(lambda n: {"operator": "OR", "conditions": [VALID_FILTER_VALUES[2]] * n},
                        st.sampled_from([199, 200, 201, 5000]))
ANY_FILTER = st.one_of(VALID_FILTERS, FILTER, FILTER, DEEP_FILTER, WIDE_FILTER, BAD_FILTERS)


@settings(FUZZ, max_examples=2000)
@given(query=UNICODE_QUERY, filters=ANY_FILTER, top_k=st.one_of(st.integers(1, MAX_TOP_K), TOP_K),
       as_of=st.one_of(st.none(), st.none(), st.sampled_from(["2021-11-01", "2021-02-30", "\ud800"]), ANY_TEXT))
@example(query="\ud800个人信息", filters=None, top_k=5, as_of=None)  # 内部错误（dense）
@example(query="同意", filters={"field": "meta.law", "operator": "==", "value": {"a": 1}}, top_k=5, as_of=None)  # bm25
@example(query="同意", filters=nested(VALID_FILTER_VALUES[2], 200), top_k=5, as_of=None)  # maximum recursion depth
@example(query="\x00\u200b", filters=None, top_k=5, as_of=None)  # counted as a question
def test_filters_unicode_and_sizes_never_fail_the_server(server: Server, query: str, filters: Any, top_k: Any,
                                                         as_of: Any) -> None:
    payload = {"query": query, "mode": "retrieve", "top_k": top_k, "filters": filters, "as_of": as_of}
    # JSON with \u escapes: lone surrogates travel as JSON allows, and so do NaN and Infinity (Python reads them)
    response = post(server, "/agentic_rag/run", content=json.dumps(payload).encode(),
                    headers={"content-type": "application/json"})
    plainly_valid = (askable(query) and filters in VALID_FILTER_VALUES and type(top_k) is int
                     and 1 <= top_k <= MAX_TOP_K and as_of in (None, "2021-11-01"))
    if plainly_valid:
        assert response.status_code == 200, (payload, response.text[:300])
    if not askable(query):
        assert 400 <= response.status_code < 500, (payload, response.text[:300])
    if response.status_code == 200:
        assert len(response.json()["result"]["documents"]) <= top_k
