"""The consultation-style dev set: the checks a retold question must pass, the typo it may get, and the committed
file (every story keeps its STARD question's gold)."""

import json

import pytest

from benchmarks.consultation_set import DEFAULT_OUT, TYPOS, clean, problems, with_typo
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES

GOLD = ["中华人民共和国劳动合同法第八十二条"]
SOURCE = "用人单位不签劳动合同要支付双倍工资吗？"
STORY = ("我去年三月进了一家小饭馆当服务员，老板一直说忙，到现在快一年了也没跟我签过任何纸面的东西。"
         "我听老乡说这种情况可以多要一份钱，是真的吗？")


@pytest.mark.parametrize(("story", "reason"), [
    (STORY, ""),
    ("太短了吧？", "length"),
    (STORY + "《劳动合同法》说的对吗？", "cites a law or an article"),
    (STORY.replace("是真的吗", "是不是第八十二条说的那样"), "cites a law or an article"),
    (STORY.replace("老乡说", "老乡说劳动合同法里"), "names 劳动合同法"),
    (STORY + "律师：可以的。", "writes the lawyer's reply too"),
    ("我想问一下，" + SOURCE + "我真的很着急，谢谢律师帮忙看一下。", "copies"),
    ("I worked in a restaurant for a year without a contract, can I get double pay? 可以吗", "not mostly Chinese"),
])
def test_a_story_is_refused_for_each_problem_and_a_real_retelling_passes(story, reason):
    found = problems(story, SOURCE, GOLD)
    assert found.startswith(reason) if reason else found == ""


def test_clean_keeps_the_story_alone():
    assert clean('咨询内容："我 家\n里的事"') == "我家里的事"


def test_the_typo_is_one_homophone_swap_fixed_by_the_question_id():
    stories = {qid: with_typo(STORY, qid) for qid in range(200)}
    swapped = {qid: typo for qid, (_, typo) in stories.items() if typo}
    assert 0.15 < len(swapped) / len(stories) < 0.35  # about a quarter
    for qid, typo in swapped.items():
        word, replacement = typo.split("→")
        assert TYPOS[word] == replacement
        text = stories[qid][0]
        assert len(text) == len(STORY) + len(replacement) - len(word) and text != STORY
    assert all(with_typo(STORY, qid) == stories[qid] for qid in range(200))


def test_the_committed_set_keeps_the_gold_of_the_question_it_retells():
    stard = {q["qid"]: q for q in load_queries(str(DEFAULT_QUERIES))}
    rows = [json.loads(line) for line in DEFAULT_OUT.read_text(encoding="utf-8").splitlines()]
    assert len(rows) >= 100 and len({r["qid"] for r in rows}) == len(rows)
    for row in rows:
        source = stard[row["qid"]]
        assert row["gold"] == source["gold"] and row["source_query"] == source["query"]
        assert problems(row["query"], source["query"], source["gold"]) == "", row["qid"]  # a typo keeps its length
        assert not row["typo"] or row["typo"].split("→")[1] in row["query"]
