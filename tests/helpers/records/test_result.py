"""`RAGResult`, the one result type: every mode fills the same fields, and `to_dict` is its JSON form."""

import dataclasses
import json

from helpers.records.contracts import Mode
from helpers.records.result import RAGResult


def test_every_mode_has_the_same_fields_and_one_json_form():
    results = [RAGResult.chitchat("你好！", Mode.AGENTIC.value, {"rounds": []}),
               RAGResult.chitchat("你好！", Mode.AGENT.value, {"steps": []}),
               RAGResult.retrieval([{"key": "k", "score": 0.5}], {"query": "q"}),
               RAGResult(answer="需要同意。", mode=Mode.RAG.value, trace={}, situation="sufficient",
                         citations=[{"key": "k", "by_model": True}])]
    names = {f.name for f in dataclasses.fields(RAGResult)}
    for result in results:
        data = json.loads(json.dumps(result.to_dict(), ensure_ascii=False))
        assert set(data) == names
        assert data["mode"] in {m.value for m in Mode}
    assert [r.situation for r in results] == ["chitchat", "chitchat", "retrieve", "sufficient"]
    assert results[1].stop_reason == "chitchat" and results[0].stop_reason is None


def test_to_dict_is_a_copy():
    result = RAGResult(answer="a", mode=Mode.RAG.value, trace={"rounds": [1]})
    result.to_dict()["trace"]["rounds"].append(2)
    assert result.trace == {"rounds": [1]}
