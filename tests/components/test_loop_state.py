"""The loop's state is immutable: each loop component returns a new one and leaves what it was given alone."""

import dataclasses

import pytest
from haystack import Document

from components.joiners.web_evidence_merger import WebEvidenceMerger
from components.routers.round_tracker import RoundTracker
from helpers.loop_state import LoopState

DOC = Document(content="处理个人信息应当取得个人同意。", meta={"key": "k13", "law": "法", "article_no": "第十三条"})


def test_the_state_cannot_be_changed_in_place():
    with pytest.raises(dataclasses.FrozenInstanceError):
        LoopState(query="问").round = 1  # type: ignore[misc]


def test_a_round_makes_a_new_state_from_its_sockets():
    before = LoopState(query="问")
    evaluation = {"total": 30.0, "passed": False, "missing": "例外情形", "llm_calls": 1, "seconds": 0.5}
    round_info = {"queries": ["问", "改写"], "rewrite": {"status": "ok"}}
    after = RoundTracker().run(state=before, documents=[DOC], evaluation=evaluation, round_info=round_info)["state"]
    assert before == LoopState(query="问")  # untouched
    assert (after.round, after.best_round, after.best_score, after.missing) == (1, 1, 30.0, "例外情形")
    assert after.rounds[0]["queries"] == ["问", "改写"] and after.rounds[0]["retrieved"][0]["key"] == "k13"
    assert after.llm_calls == {"judge": 1}
    merged = WebEvidenceMerger().run(state=after, documents=[], status="unavailable", message="没有密钥")["state"]
    assert after.web is None and merged.web["status"] == "unavailable"
