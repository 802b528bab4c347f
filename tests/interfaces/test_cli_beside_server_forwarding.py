"""`interfaces.cli_beside_server` in process, against a scripted app server over real HTTP: which commands are sent to
the `serve` that owns the embedded knowledge base, what they send, what they print, and what is refused before any
request. The same commands beside a real server are in tests/serving/test_cli_beside_server.py."""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs

import pytest

from application.feedback import AnsweredQuestion, load_last_answer, save_last_answer
from config.settings import Settings
from document_store.errors import StoreLockedError
from document_store.text_files import FileLoadError
from interfaces import cli_beside_server
from interfaces.cli import build_parser
from interfaces.cli_beside_server import beside_server, refuse_beside_server
from interfaces.server_client import ServerRequestError
from interfaces.server_record import write_server_record
from tests.support.scripted_app import ScriptedApp

PIPL = "中华人民共和国个人信息保护法"
QUESTION = "公司收集我的个人信息需要我同意吗"
LOCKED = StoreLockedError("the store is in use by another process")


@dataclasses.dataclass
class Beside:
    app: ScriptedApp
    settings: Settings
    data: Path


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Beside]:
    """A scripted server recorded as the owner of the knowledge bases under ``tmp_path``."""
    for name in ("API_KEY", "QDRANT_URL", "QDRANT_PATH"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setattr(cli_beside_server, "JOB_POLL_SECONDS", 0.01)
    with ScriptedApp() as app:
        app.reply("GET", "/status", 200, {"status": "Up!", "pipelines": ["agentic_rag"]})
        settings = Settings.from_env()
        write_server_record(settings.qdrant_path, app.origin)
        yield Beside(app, settings, tmp_path / "data")


def args(*argv: str) -> argparse.Namespace:
    return build_parser(extensions=()).parse_args(list(argv))


def sent(app: ScriptedApp, method: str, path: str) -> list:
    return [r for r in app.requests if (r.method, r.path) == (method, path)]


def test_a_writer_is_refused_while_this_projects_server_owns_the_store(served: Beside) -> None:
    for command in (["index", "--laws", "民法典"], ["reweight"]):
        with pytest.raises(StoreLockedError, match="are served by `serve`"):
            refuse_beside_server(args(*command), served.settings)
    refuse_beside_server(args("search", QUESTION), served.settings)  # a reader: sent to the server when locked
    remote = dataclasses.replace(served.settings, qdrant_url="http://qdrant:6333")  # a Qdrant server has no owner
    refuse_beside_server(args("index"), remote)


def test_without_a_running_server_nothing_is_refused_and_in_use_stays_in_use(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, qdrant_path=tmp_path / "qdrant")
    refuse_beside_server(args("index"), settings)
    with pytest.raises(StoreLockedError) as raised:
        beside_server(args("search", QUESTION), settings, LOCKED)
    assert raised.value is LOCKED


def test_a_command_the_server_cannot_run_says_how_to_run_it(served: Beside) -> None:
    with pytest.raises(StoreLockedError) as raised:
        beside_server(args("reweight"), served.settings, LOCKED)
    assert str(raised.value) == (f"the knowledge base at {served.settings.qdrant_path} is served by `serve` (pid "
                                 f"{os.getpid()}, {served.app.origin}): stop it to run `reweight`")
    with pytest.raises(StoreLockedError, match=r"stop it to run `ask` with --pipeline \(without it, `ask` asks the "
                                               r"server\)$"):
        beside_server(args("ask", QUESTION, "--pipeline", "yaml_pipelines/agentic.yaml"), served.settings, LOCKED)
    assert sent(served.app, "POST", "/agentic_rag/run") == []


def test_ask_is_answered_by_the_server_and_kept_for_feedback(served: Beside, capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEY", "k-123")
    settings = Settings.from_env()
    answer = {"answer": "需要。", "mode": "rag", "trace": {}, "situation": "sufficient", "answer_id": "srv-1",
              "knowledge_base": "pipl", "citations": [{"type": "statute", "key": f"{PIPL}第十四条"}]}
    served.app.reply("POST", "/agentic_rag/run", 200, {"result": answer})
    beside_server(args("ask", f"  {QUESTION} ", "--mode", "rag", "--collection", "pipl", "--as-of", "2022-01-01",
                       "--json"), settings, LOCKED)
    out, err = capsys.readouterr()
    assert f"(the knowledge base is served by `serve` at {served.app.origin}: asking it)" in err
    assert json.loads(out)["answer_id"] == "srv-1"
    [request] = sent(served.app, "POST", "/agentic_rag/run")
    assert request.json() == {"query": QUESTION, "mode": "rag", "knowledge_base": "pipl", "as_of": "2022-01-01"}
    assert request.headers["Authorization"] == "Bearer k-123"
    kept = load_last_answer(served.data)
    assert (kept.answer_id, kept.question, kept.cited) == ("srv-1", QUESTION, (f"{PIPL}第十四条",))


def test_search_asks_the_servers_retrieve_mode_and_prints_as_search_does(served: Beside,
                                                                         capsys: pytest.CaptureFixture[str]) -> None:
    documents = [{"score": 0.5, "paths": ["bm25"], "key": f"{PIPL}第十四条", "version_mark": "",
                  "text": "第十四条 同意"}]
    served.app.reply("POST", "/agentic_rag/run", 200, {"result": {
        "documents": documents, "warnings": ["stale weights"], "trace": {"total_seconds": 0.02}}})
    beside_server(args("search", QUESTION, "--top-k", "3"), served.settings, LOCKED)
    out, err = capsys.readouterr()
    assert out.splitlines()[:2] == [f"1 results for '{QUESTION}' (hybrid, 20 ms)", f" 1. 0.5000 [bm25] {PIPL}第十四条"]
    assert "warning: stale weights" in err
    assert sent(served.app, "POST", "/agentic_rag/run")[0].json() == {
        "query": QUESTION, "mode": "retrieve", "top_k": 3, "knowledge_base": None, "as_of": None}


@pytest.mark.parametrize(("argv", "message"), [
    (["search", QUESTION, "--mode", "bm25"], ("the running server searches hybrid only; use --mode hybrid, or stop "
                                              "it to search --mode bm25")),
    (["search", QUESTION, "--top-k", "0"], "--top-k must be between 1 and 100, got 0"),
    (["search", "   "], "the query is empty"),
    (["ask", "\u200b"], "the query is empty"),
    (["index", "--laws", "民法典", "--versions"], ("the running server indexes the laws in force only: stop it "
                                                  "to index with --versions")),
])
def test_bad_input_is_refused_before_any_request(served: Beside, argv: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(")):
        beside_server(args(*argv), served.settings, LOCKED)
    assert [r.path for r in served.app.requests] == ["/status"]  # only the check that the server runs


def test_a_file_that_cannot_be_indexed_is_refused_before_the_upload(served: Beside, tmp_path: Path) -> None:
    good, bad = tmp_path / "手册.md", tmp_path / "图片.png"
    good.write_text("第一条 内容", encoding="utf-8")
    bad.write_bytes(b"\x89PNG")
    with pytest.raises(FileLoadError):
        beside_server(args("index", "--files", str(good), str(bad)), served.settings, LOCKED)
    assert sent(served.app, "POST", "/index/run") == []


def test_stats_are_the_servers(served: Beside, capsys: pytest.CaptureFixture[str]) -> None:
    served.app.reply("POST", "/knowledge_bases/run", 200, {"result": {
        "name": "pipl", "where": "data/qdrant", "documents": 74, "sources": [], "models": "e5", "judge": "LLM",
        "bm25": None, "warnings": []}})
    beside_server(args("stats", "--collection", "pipl"), served.settings, LOCKED)
    assert "knowledge base 'pipl' at data/qdrant: 74 documents" in capsys.readouterr().out
    assert sent(served.app, "POST", "/knowledge_bases/run")[0].json() == {"action": "stats", "name": "pipl"}


def test_feedback_on_the_last_answer_is_recorded_by_the_server(served: Beside,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    save_last_answer(served.data, AnsweredQuestion("srv-7", QUESTION, "需要。", (), (), None, "rag"))
    served.app.reply("POST", "/feedback", 201, {"answer_id": "srv-7", "question": QUESTION, "verdict": "down",
                                                "article": f"{PIPL}第十四条"})
    beside_server(args("feedback", "👎", "--article", "个人信息保护法第十四条"), served.settings, LOCKED)
    assert sent(served.app, "POST", "/feedback")[0].json() == {"answer_id": "srv-7", "verdict": "👎",
                                                                "article": "个人信息保护法第十四条"}
    assert capsys.readouterr().out == (f"feedback recorded on answer srv-7 ({QUESTION}): 👎、the right article is "
                                       f"{PIPL}第十四条\n")


def test_index_is_a_job_of_the_server_followed_to_its_end(served: Beside, tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    handbook = tmp_path / "员工手册.md"
    handbook.write_text("第一条 员工应当遵守考勤制度。\n第二条 年休假按国家规定执行。\n", encoding="utf-8")
    served.app.reply("POST", "/index/run", 200, {"result": {"job_id": "j1", "status": "queued"}})
    for state in ({"status": "running", "progress": {"done": 0, "total": 0}},
                  {"status": "running", "progress": {"done": 1, "total": 2}},
                  {"status": "done", "progress": {"done": 2, "total": 2}, "knowledge_base": "handbook",
                   "results": [{"action": "added", "count": 2, "source": "file:员工手册.md"}]}):
        served.app.reply("GET", "/index/jobs/j1", 200, {"job_id": "j1", **state})
    beside_server(args("index", "--collection", "handbook", "--files", str(handbook)), served.settings, LOCKED)
    out, err = capsys.readouterr()
    assert out.splitlines() == ["added          2  file:员工手册.md", "indexed into 'handbook' by the server"]
    assert "(index job j1 of the server)" in err and "indexing 1/2" in err and "indexing 2/2" in err
    upload = sent(served.app, "POST", "/index/run")[0]
    assert "员工手册.md".encode() in upload.body and handbook.read_bytes() in upload.body
    assert b'name="knowledge_base"\r\n\r\nhandbook' in upload.body
    assert b'name="laws"' not in upload.body  # files only: no default laws
    assert len(sent(served.app, "GET", "/index/jobs/j1")) == 3


def test_index_without_laws_or_files_sends_the_default_laws_quietly(served: Beside,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    served.app.reply("POST", "/index/run", 200, {"result": {"job_id": "j2", "status": "done", "results": [],
                                                            "knowledge_base": "statutes"}})
    beside_server(args("index", "--quiet"), served.settings, LOCKED)
    form = parse_qs(sent(served.app, "POST", "/index/run")[0].body.decode())  # no files: a urlencoded form
    assert form == {"knowledge_base": ["statutes"], "laws": list(served.settings.default_laws)}
    assert sent(served.app, "GET", "/index/jobs/j2") == []  # ended already: not polled
    assert capsys.readouterr().err == "(the knowledge base is served by `serve` at " + served.app.origin + (
        ": asking it)\n(index job j2 of the server)\n")


def test_a_failed_index_job_is_an_error_with_its_reason(served: Beside) -> None:
    served.app.reply("POST", "/index/run", 200, {"result": {"job_id": "j3", "status": "queued"}})
    served.app.reply("GET", "/index/jobs/j3", 200, {"job_id": "j3", "status": "failed", "error": "No space left"})
    with pytest.raises(ServerRequestError, match="^the server's index job j3 failed: No space left$"):
        beside_server(args("index", "--laws", "民法典", "--quiet"), served.settings, LOCKED)
