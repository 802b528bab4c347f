"""`provisioning.training_pairs`: reading a pairs file, its digest, the articles by key. The one-line errors of a bad
pairs file and `check_gold` are in tests/provisioning/test_evaluator_training.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from haystack import Document
from haystack.document_stores.in_memory import InMemoryDocumentStore

from provisioning.training_pairs import (
    MIN_PAIRS,
    Pair,
    TrainingDataError,
    articles_by_key,
    jsonl_objects,
    load_pairs,
    pairs_digest,
)

PIPL = "中华人民共和国个人信息保护法"


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "pairs.jsonl"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def filler(n: int = MIN_PAIRS) -> list[str]:
    return [json.dumps({"query": f"问题{i}", "gold": [f"{PIPL}第{i}条"]}, ensure_ascii=False) for i in range(n)]


def test_json_lines_come_with_their_line_numbers_and_blank_lines_are_skipped(tmp_path: Path) -> None:
    path = write(tmp_path, ['{"a": 1}', "", "   ", "[1, 2]", "not json", '"text"'])
    items, bad = jsonl_objects(path, "pairs file")
    assert items == [(1, {"a": 1}), (4, [1, 2]), (6, "text")]
    assert bad == ["line 5: not JSON"]
    with pytest.raises(TrainingDataError, match="^questions file not found: "):
        jsonl_objects(tmp_path / "missing.jsonl", "questions file")


def test_a_pair_keeps_its_qid_a_stripped_query_and_each_gold_key_once(tmp_path: Path) -> None:
    first = {"query": "  处理敏感个人信息需要什么  ", "gold": [f"{PIPL}第二十九条", f"{PIPL}第二十八条",
                                                              f"{PIPL}第二十九条"], "qid": 17, "source": "STARD"}
    pairs = load_pairs(write(tmp_path, [json.dumps(first, ensure_ascii=False), *filler()]))
    assert pairs[0] == Pair("处理敏感个人信息需要什么", (f"{PIPL}第二十九条", f"{PIPL}第二十八条"), "17")
    assert pairs[1].qid == "2"  # no qid: its line number
    assert len(pairs) == MIN_PAIRS + 1


def test_a_bad_file_names_the_count_and_three_examples(tmp_path: Path) -> None:
    lines = ['{"query": "", "gold": ["x"]}', '{"query": "问", "gold": [""]}', "{oops", '{"query": "问", "gold": [1]}',
             *filler()]
    with pytest.raises(TrainingDataError) as raised:
        load_pairs(write(tmp_path, lines))
    message = str(raised.value)
    assert message.startswith(f"{tmp_path / 'pairs.jsonl'}: 4 malformed line(s), e.g. ")
    # the lines that are not JSON are named first (they are found while reading), then the others in order
    assert message.endswith("e.g. line 3: not JSON; line 1: no 'query' text; line 2: 'gold' must be a non-empty "
                            "list of article keys")
    assert "line 4" not in message and "\n" not in message


def test_the_digest_follows_the_pairs_and_their_order() -> None:
    pairs = [Pair("问一", ("甲法第一条",)), Pair("问二", ("乙法第二条", "乙法第三条"))]
    digest = pairs_digest(pairs)
    assert len(digest) == 16 and int(digest, 16) >= 0
    assert pairs_digest([Pair("问一", ("甲法第一条",), "other-qid"), pairs[1]]) == digest  # the qid is no input
    assert pairs_digest(pairs[::-1]) != digest
    assert pairs_digest([pairs[0], Pair("问二", ("乙法第二条",))]) != digest
    assert pairs_digest([]) == pairs_digest([])


def test_articles_by_key_reads_every_keyed_document() -> None:
    store = InMemoryDocumentStore()
    store.write_documents([Document(content="第十三条 ……", meta={"key": f"{PIPL}第十三条"}),
                           Document(content="第十三条 （旧）", meta={"key": f"{PIPL}第十三条@2021-11-01"}),
                           Document(content="a note without a key", meta={"law": PIPL}),
                           Document(content="empty key", meta={"key": ""})])
    found = articles_by_key(store)
    assert sorted(found) == [f"{PIPL}第十三条", f"{PIPL}第十三条@2021-11-01"]
    assert found[f"{PIPL}第十三条"].content == "第十三条 ……"
