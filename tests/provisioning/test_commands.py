"""`provisioning.commands`: the tooling's commands on the product's command line. `train --with-feedback` end to end
is in tests/application/test_feedback.py, `serve` with and without `prepare` in
tests/interfaces/test_cli_serve_stack.py, `demo` in tests/interfaces/test_cli.py; here the pairs that feedback adds
and the options each command takes."""

from __future__ import annotations

from pathlib import Path

import pytest

from application.feedback import FEEDBACK_FILE, AnsweredQuestion, FeedbackLog
from config.settings import Settings
from interfaces.cli import build_parser
from provisioning.commands import TOOLING, with_feedback
from provisioning.training_pairs import Pair
from tests.support.training import PIPL, pairs_file, pipl_pairs


def answered(answer_id: str, question: str, knowledge_base: str, cited: tuple[str, ...] = ()) -> AnsweredQuestion:
    return AnsweredQuestion(answer_id, question, "……", (), cited, knowledge_base, "rag")


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Feedback on three answers from the default knowledge base and one from ``handbook``."""
    settings = Settings(data_dir=tmp_path, training_pairs=str(pairs_file(tmp_path, pipl_pairs())))
    log = FeedbackLog(tmp_path / FEEDBACK_FILE)
    log.add(answered("a1", "同意可以撤回吗", "statutes"), "down", f"{PIPL}第十五条")
    log.add(answered("a2", "敏感个人信息是什么", "statutes", (f"{PIPL}第二十八条",)), "up")
    log.add(answered("a3", "随便问问", "statutes"), "down")  # a 👎 without an article gives no pair
    log.add(answered("a4", "年休假几天", "handbook"), None, "员工手册第二条")
    return settings


def test_feedback_pairs_follow_the_training_pairs_for_the_default_knowledge_base(
        settings: Settings, capsys: pytest.CaptureFixture[str]) -> None:
    pairs = with_feedback(settings, None, None)  # no --pairs: TRAINING_PAIRS
    assert len(pairs) == 62 and pairs[0].query == pipl_pairs()[0]["query"]
    assert pairs[-2:] == [Pair("同意可以撤回吗", (f"{PIPL}第十五条",), "feedback-1"),
                          Pair("敏感个人信息是什么", (f"{PIPL}第二十八条",), "feedback-2")]
    assert capsys.readouterr().out == f"with 2 pair(s) from feedback ({settings.data_dir / FEEDBACK_FILE})\n"


def test_feedback_pairs_of_the_collection_trained_for(settings: Settings, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    other = pairs_file(tmp_path, pipl_pairs(55), "other.jsonl")
    pairs = with_feedback(settings, str(other), "handbook")
    assert len(pairs) == 56 and pairs[-1] == Pair("年休假几天", ("员工手册第二条",), "feedback-1")
    assert capsys.readouterr().out.startswith("with 1 pair(s) from feedback")


def test_no_feedback_adds_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings = Settings(data_dir=tmp_path)
    pairs = with_feedback(settings, str(pairs_file(tmp_path, pipl_pairs())), None)
    assert len(pairs) == 60 and not any(p.qid.startswith("feedback-") for p in pairs)
    assert capsys.readouterr().out.startswith("with 0 pair(s) from feedback")


def test_the_tooling_commands_and_their_options() -> None:
    parser = build_parser(extensions=(TOOLING,))
    assert set(TOOLING.commands) == {"setup", "train", "demo", "prepare", "serve"}
    setup = parser.parse_args(["setup"])
    assert (setup.no_llm, setup.no_train) == (False, False)
    assert parser.parse_args(["setup", "--no-llm"]).no_llm is True
    train = parser.parse_args(["train"])
    assert (train.pairs, train.collection, train.quiet, train.with_feedback) == (None, None, False, False)
    train = parser.parse_args(["train", "--pairs", "p.jsonl", "--collection", "pipl", "--quiet"])
    assert (train.pairs, train.collection, train.quiet) == ("p.jsonl", "pipl", True)
    assert parser.parse_args(["demo", "加班费怎么算"]).query == "加班费怎么算"
    assert parser.parse_args(["serve", "--no-prepare", "--port", "1500"]).port == 1500


def test_prepare_takes_no_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        build_parser(extensions=(TOOLING,)).parse_args(["prepare", "--quiet"])
    assert raised.value.code == 2 and "unrecognized arguments: --quiet" in capsys.readouterr().err
