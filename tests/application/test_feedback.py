"""Answer feedback (issue 50, item 4): durable records, a kill loses nothing written, articles resolved in the
knowledge base, pairs that `train` reads, and the CLI round trip from `ask` to `train --with-feedback`."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from application.feedback import (
    DOWN,
    FEEDBACK_FILE,
    UP,
    AnsweredQuestion,
    AnswerRegistry,
    FeedbackLog,
    UnknownAnswerError,
    parse_verdict,
    resolve_article,
)
from config.settings import Settings
from harness.llm_script import ANSWERER, JUDGE, REWRITER, judge
from harness.openai_server import ScriptedOpenAIServer
from helpers.records.result import RAGResult
from interfaces.cli import main
from provisioning.training_pairs import load_pairs
from tests.support.training import PIPL, pairs_file, pipl_pairs

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "公司收集我的个人信息需要我同意吗"


def answered(question: str = QUESTION, cited: tuple[str, ...] = (f"{PIPL}第十三条",)) -> AnsweredQuestion:
    result = RAGResult(answer="需要。", mode="rag", trace={}, knowledge_base="statutes",
                       citations=[{"type": "statute", "key": key} for key in cited],
                       evidence=[{"key": f"{PIPL}第十三条"}, {"key": f"{PIPL}第十四条"}])
    return AnsweredQuestion.of(result, question)


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_record_keeps_the_question_the_evidence_and_the_answer(tmp_path):
    log = FeedbackLog(tmp_path / "feedback.jsonl")
    given = answered()
    record = log.add(given, DOWN, f"{PIPL}第十四条", source="cli")
    assert record["answer_id"] == given.answer_id and len(given.answer_id) == 32
    assert record["evidence"] == [f"{PIPL}第十三条", f"{PIPL}第十四条"] and record["answer"] == "需要。"
    assert log.records() == [record]
    assert log.pairs() == [{"query": QUESTION, "gold": [f"{PIPL}第十四条"]}]


def test_pairs_come_from_named_articles_and_from_what_a_thumbs_up_answer_cited(tmp_path):
    log = FeedbackLog(tmp_path / "feedback.jsonl")
    log.add(answered("问一"), UP)
    log.add(answered("问二"), DOWN)  # a 👎 alone says what is wrong, not what is right: no pair
    log.add(answered("问三"), None, f"{PIPL}第十五条")
    log.add(answered("问三"), DOWN, f"{PIPL}第十五条")  # the same pair twice is one pair
    assert log.pairs() == [{"query": "问一", "gold": [f"{PIPL}第十三条"]},
                           {"query": "问三", "gold": [f"{PIPL}第十五条"]}]
    assert log.pairs("another") == []
    count = log.export(tmp_path / "pairs.jsonl")
    assert count == 2 and [json.loads(line)
                           for line in (tmp_path / "pairs.jsonl").read_text().splitlines()] == log.pairs()


def test_feedback_needs_a_verdict_or_an_article(tmp_path):
    with pytest.raises(ValueError, match="needs a verdict"):
        FeedbackLog(tmp_path / "f.jsonl").add(answered(), None)
    assert [parse_verdict(v) for v in ("up", "👍", " DOWN ", "👎", None, "")] == [UP, UP, DOWN, DOWN, None, None]
    with pytest.raises(ValueError, match="verdict must be one of"):
        parse_verdict("meh")


def test_a_torn_last_record_is_skipped_and_the_next_one_starts_its_own_line(tmp_path):
    log = FeedbackLog(tmp_path / "feedback.jsonl")
    first = log.add(answered("问一"), UP)
    with open(log.path, "ab") as handle:  # what a kill in the middle of a write leaves
        handle.write(b'{"feedback_id": "torn", "question": "')
    second = log.add(answered("问二"), UP)
    assert [r["feedback_id"] for r in log.records()] == [first["feedback_id"], second["feedback_id"]]


def test_a_kill_during_writes_loses_no_record_that_was_written(tmp_path):
    path = tmp_path / "feedback.jsonl"
    script = ("import sys\nfrom pathlib import Path\n"
              "from application.feedback import UP, AnsweredQuestion, FeedbackLog\n"
              "log = FeedbackLog(Path(sys.argv[1]))\nfor i in range(100000):\n"
              "    log.add(AnsweredQuestion(str(i), f'问{i}', '需要。', ('k',) * 20, ('k',), 'statutes', 'rag'), UP)\n"
              "    print(i, flush=True)\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(path)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert child.stdout is not None
    confirmed = -1
    deadline = time.monotonic() + 60
    while confirmed < 50 and time.monotonic() < deadline:
        confirmed = int(child.stdout.readline())
    child.send_signal(signal.SIGKILL)
    child.wait()
    records = FeedbackLog(path).records()
    questions = [r["question"] for r in records]
    assert questions[:confirmed + 1] == [f"问{i}" for i in range(confirmed + 1)]  # every acknowledged record is there
    assert len(records) >= confirmed + 1


def test_the_registry_keeps_the_newest_answers():
    registry = AnswerRegistry(size=2)
    results = [RAGResult(answer=str(i), mode="rag", trace={}) for i in range(3)]
    ids = [registry.remember(result, f"问{i}").answer_id for i, result in enumerate(results)]
    assert [r.answer_id for r in results] == ids and len(set(ids)) == 3
    assert registry.get(ids[2]).question == "问2"
    with pytest.raises(UnknownAnswerError, match="newest 2 answers"):
        registry.get(ids[0])
    with pytest.raises(ValueError):
        AnswerRegistry(size=0)


def test_the_registry_on_disk_survives_a_restart_and_stays_small(tmp_path):
    """Issue 63, item 7: feedback on an answer from before a restart was a 404, while the UI restores that answer."""
    path = tmp_path / "feedback" / "answers.jsonl"
    first = AnswerRegistry(size=3, path=path)
    ids = [first.remember(RAGResult(answer=f"答{i}", mode="rag", trace={}), f"问{i}").answer_id for i in range(7)]
    with path.open("ab") as handle:
        handle.write(b'{"answer_id": "torn')  # a kill mid-line
    again = AnswerRegistry(size=3, path=path)  # the server restarted
    assert [again.get(i).question for i in ids[-3:]] == ["问4", "问5", "问6"]
    with pytest.raises(UnknownAnswerError):
        again.get(ids[3])
    later = again.remember(RAGResult(answer="答7", mode="rag", trace={}), "问7").answer_id
    assert AnswerRegistry(size=3, path=path).get(later).answer == "答7"  # written on a line of its own
    assert len(path.read_bytes().splitlines()) <= 2 * 3  # rewritten with the newest once it held twice as many
    with pytest.raises(UnknownAnswerError) as error:
        again.get("x" * 1_000_000)
    assert len(str(error.value)) < 200  # a 1 MB id is not echoed back


@pytest.fixture
def pipl_store(settings, capsys):
    assert run_cli(capsys, "index", "--laws", PIPL, "--collection", "pipl", "--quiet")[0] == 0
    from pipelines.stores import open_document_store

    store = open_document_store(settings, "pipl")
    yield store
    store.close()


@pytest.mark.parametrize(("text", "key"), [("个人信息保护法第十四条", f"{PIPL}第十四条"),
                                           (f"《{PIPL}》第14条", f"{PIPL}第十四条")])
def test_an_article_is_named_as_a_citation_and_resolved_in_the_knowledge_base(pipl_store, text, key):
    assert resolve_article(pipl_store, text) == key


@pytest.mark.parametrize("text", ["民法典第一条", "个人信息保护法第九百条", "随便", "", "法" * 101])
def test_an_article_the_knowledge_base_does_not_hold_is_refused(pipl_store, text):
    with pytest.raises(ValueError, match="article"):
        resolve_article(pipl_store, text)


def test_cli_ask_then_feedback_then_train_with_it(settings, capsys, tmp_path, monkeypatch, pipl_store):
    """`ask` keeps its answer; `feedback --last 👎 --article …` records it with the resolved key; `--export` writes
    pairs `train --pairs` reads; `train --with-feedback` trains on them too."""
    pipl_store.close()  # the CLI opens it
    monkeypatch.setenv("EVALUATOR_MODEL", str(tmp_path / "models" / "relevance-evaluator"))
    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ADAPTED_EMBEDDING_MODEL", str(tmp_path / "models" / "e5-small-statutes"))
    code, _, err = run_cli(capsys, "feedback", "down")
    assert code == 2 and "ask a question first" in err and err.count("\n") == 1
    with ScriptedOpenAIServer() as llm:
        llm.add_rule(REWRITER, '{"variants": ["处理个人信息应当取得个人同意"], "keywords": ["同意"]}')
        llm.add_rule(JUDGE, judge(9))
        llm.add_rule(ANSWERER, f"需要。依据《{PIPL}》第十三条。")
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        code, out, err = run_cli(capsys, "ask", QUESTION, "--mode", "rag", "--collection", "pipl", "--json")
    assert code == 0, err
    answer_id = json.loads(out)["answer_id"]
    code, out, err = run_cli(capsys, "feedback", "--last", "👎", "--article", "个人信息保护法第十四条")
    assert code == 0, err
    assert f"feedback recorded on answer {answer_id}" in out and f"{PIPL}第十四条" in out
    code, _, err = run_cli(capsys, "feedback", "--last", "--article", "民法典第一条")
    assert code == 2 and "unknown article" in err and err.count("\n") == 1
    code, _, err = run_cli(capsys, "feedback", "--last")
    assert code == 2 and "needs a verdict" in err
    records = FeedbackLog(Settings.from_env().data_dir / FEEDBACK_FILE).records()
    assert [(r["answer_id"], r["verdict"], r["article"], r["knowledge_base"]) for r in records] == [
        (answer_id, DOWN, f"{PIPL}第十四条", "pipl")]
    assert records[0]["question"] == QUESTION and records[0]["evidence"]

    exported = tmp_path / "feedback_pairs.jsonl"
    code, out, _ = run_cli(capsys, "feedback", "--export", str(exported))
    assert code == 0 and "wrote 1 pair(s)" in out
    assert exported.read_text(encoding="utf-8").strip() == json.dumps(
        {"query": QUESTION, "gold": [f"{PIPL}第十四条"]}, ensure_ascii=False)
    both = pairs_file(tmp_path, pipl_pairs() + [json.loads(exported.read_text(encoding="utf-8"))], "both.jsonl")
    assert len(load_pairs(both)) == 61  # the export is `--pairs` input

    code, out, err = run_cli(capsys, "train", "--pairs", str(pairs_file(tmp_path, pipl_pairs())), "--collection",
                             "pipl", "--with-feedback", "--quiet")
    assert code == 0, err
    assert "with 1 pair(s) from feedback" in out and "relevance evaluator trained" in out
