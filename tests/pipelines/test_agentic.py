"""Every branch of the agentic pipeline, against a scripted OpenAI-compatible server and a SerpAPI-shaped one."""

import json

import pytest

from application.rag import AgenticRAG
from config.settings import Settings
from harness.llm_script import ANSWERER, JUDGE, REWRITER, judge
from harness.serpapi_server import ScriptedSerpAPIServer

QUESTION = "公司收集我的个人信息需要我同意吗"
PIPL = "中华人民共和国个人信息保护法"
REWRITE = ('{"variants": ["个人信息处理者处理个人信息是否应当取得个人同意"], "keywords": ["个人信息", "同意"], '
           '"domain": "个人信息保护"}')
REWRITE_2 = ('{"variants": ["处理个人信息无需取得个人同意的情形"], "keywords": ["例外", "合同所必需"], '
             '"domain": "个人信息保护"}')
GOOD_ANSWER = f"【相关法条】《{PIPL}》第十四条：基于个人同意处理个人信息的……【免责声明】仅供参考。"
WEB_RESULTS = [{"title": "个人信息保护法解读", "link": "https://example.cn/pipl",
                "snippet": "收集个人信息一般需要取得同意。"}]


@pytest.fixture
def make_rag(pipl_store, e5_model, monkeypatch):
    def make() -> AgenticRAG:
        monkeypatch.setenv("EMBEDDING_MODEL", str(e5_model))
        return AgenticRAG(pipl_store, Settings.from_env())
    return make


def decisions(result):
    return [r["decision"] for r in result.trace["rounds"]]


def test_greeting_is_answered_without_retrieval(llm, make_rag):
    result = make_rag().ask("你好！")
    assert result.situation == "chitchat"
    assert "法律" in result.answer
    assert result.trace["route"]["route"] == "chitchat"
    assert result.trace["rounds"] == [] and result.citations == []
    assert llm.requests == []  # no LLM call, no retrieval


def test_pass_in_round_one_searches_the_question_as_asked(llm, make_rag):
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result) == ["pass"]
    round1 = result.trace["rounds"][0]
    assert round1["queries"] == [QUESTION] and round1["rewrite"]["status"] == "skipped"
    assert llm.calls(REWRITER) == []
    assert round1["evaluation"]["total"] == 36 and round1["evaluation"]["passed"]
    assert round1["retrieved"] and {"key", "score", "paths"} <= set(round1["retrieved"][0])
    assert result.situation == "sufficient" and not result.needs_human
    assert [c["key"] for c in result.citations] == [f"{PIPL}第十四条"]
    assert result.citations[0]["verified"] and result.unverified_citations == []
    assert result.trace["llm_calls"] == {"rewriter": 0, "judge": 1, "answer": 1, "router": 0}
    assert result.trace["web"] is None


def test_rewrite_first_round_setting_rewrites_before_round_one(llm, make_rag, monkeypatch):
    monkeypatch.setenv("REWRITE_FIRST_ROUND", "true")
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    round1 = result.trace["rounds"][0]
    assert round1["queries"][0] == QUESTION and len(round1["queries"]) == 3
    assert "个人信息处理者处理个人信息是否应当取得个人同意" in round1["queries"]
    assert result.trace["llm_calls"] == {"rewriter": 1, "judge": 1, "answer": 1, "router": 0}


def test_a_long_question_is_rewritten_before_round_one_and_a_short_one_is_not(llm, make_rag, monkeypatch):
    monkeypatch.setenv("LONG_QUESTION_CHARS", "30")
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    story = "我在一家网店买过东西，最近老是接到推销电话，对方能叫出我的名字和地址。" + QUESTION
    rag = make_rag()
    long_round1 = rag.ask(story).trace["rounds"][0]
    assert (long_round1["queries"][0] == story
            and "个人信息处理者处理个人信息是否应当取得个人同意" in long_round1["queries"])
    assert len(llm.calls(REWRITER)) == 1
    short_round1 = rag.ask(QUESTION).trace["rounds"][0]
    assert short_round1["queries"] == [QUESTION] and len(llm.calls(REWRITER)) == 1


def test_fail_then_rewrite_with_the_note_then_pass(llm, make_rag):
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少同意的例外情形"), judge(9)])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result) == ["retry", "pass"]
    [rewrite_call] = llm.calls(REWRITER)  # only after the judge said what is missing
    prompt = rewrite_call["messages"][-1]["content"]
    assert "缺少同意的例外情形" in prompt and f"- {QUESTION}" in prompt
    round2 = result.trace["rounds"][1]
    assert round2["feedback"] == "缺少同意的例外情形"
    assert round2["queries"][0] == QUESTION and "个人信息处理者处理个人信息是否应当取得个人同意" in round2["queries"]
    assert result.trace["llm_calls"] == {"rewriter": 1, "judge": 2, "answer": 1, "router": 0}
    assert result.trace["best_round"] == 2 and result.situation == "sufficient"


def test_a_later_round_fuses_the_question_above_its_rewrites(llm, make_rag, monkeypatch):
    monkeypatch.setenv("QUESTION_WEIGHT", "1000")  # the question's own rankings decide the order
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少同意的例外情形"), judge(9)])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    rounds = make_rag().ask(QUESTION).trace["rounds"]
    assert len(rounds[1]["queries"]) > 1
    top = [[r["key"] for r in entry["retrieved"]][:5] for entry in rounds]
    assert top[1] == top[0]


# a worse round 2 leaves round 1's evidence; a tie is no improvement either (the loop stops) but keeps round 2's,
# which searched the rewrites as well as the original
@pytest.mark.parametrize(("second_score", "best_round"), [(4, 1), (5, 2)])
def test_round_without_improvement_stops_early_and_web_is_skipped_without_key(llm, make_rag, second_score,
                                                                             best_round):
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少罚则"), judge(second_score, "仍缺少罚则")])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result) == ["retry", "web_search"]
    assert len(llm.calls(JUDGE)) == 2  # no third round
    assert result.trace["best_round"] == best_round
    assert result.trace["web"]["status"] == "skipped_no_key"
    assert "SERPAPI_API_KEY" in result.answer
    assert result.situation == "partial" and result.needs_human
    assert result.answer.splitlines()[0] == "知识库未能确定：仍缺少罚则"  # the judge's last note, said first
    # the answer also lists articles the model did not quote; citations say which ones the model wrote
    by_model = {c["key"]: c["by_model"] for c in result.citations}
    assert by_model.pop(f"{PIPL}第十四条") is True
    assert "检索到的其他相关法条" in result.answer and by_model and not any(by_model.values())


def test_three_failing_rounds_then_web_search_answer_cites_the_web(llm, make_rag, monkeypatch):
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2, REWRITE.replace("是否", "需否")])
    llm.add_rule(JUDGE, [judge(2, "缺少A"), judge(3, "缺少B"), judge(4, "缺少C")])
    llm.add_rule(ANSWERER, f"根据《{PIPL}》第十四条和[网页1]，一般需要同意。")
    with ScriptedSerpAPIServer(results=WEB_RESULTS) as serp:
        monkeypatch.setenv("SERPAPI_API_KEY", "test-key")
        monkeypatch.setenv("SERPAPI_BASE_URL", serp.base_url)
        result = make_rag().ask(QUESTION)
        assert serp.requests[0]["q"] == QUESTION
    assert decisions(result) == ["retry", "retry", "web_search"]
    assert result.trace["web"]["status"] == "ok"
    assert result.situation == "supplemented"
    web = [c for c in result.citations if c["type"] == "web"]
    assert web and web[0]["url"] == "https://example.cn/pipl" and web[0]["verified"]
    answer_prompt = llm.calls(ANSWERER)[0]["messages"][-1]["content"]
    assert answer_prompt.index("《中华人民共和国个人信息保护法》") < answer_prompt.index("[网页1]")  # statutes first


def test_serpapi_error_is_explained_not_raised(llm, make_rag, monkeypatch):
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, [judge(5, "缺少A"), judge(4, "缺少B")])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    with ScriptedSerpAPIServer(status=500, error="internal error") as serp:
        monkeypatch.setenv("SERPAPI_API_KEY", "test-key")
        monkeypatch.setenv("SERPAPI_BASE_URL", serp.base_url)
        result = make_rag().ask(QUESTION)
    assert result.trace["web"]["status"] == "error"
    assert "500" in result.trace["web"]["message"] and "500" in result.answer
    assert "test-key" not in str(result)
    assert result.citations  # the local evidence is still there


def test_llm_timeout_returns_the_retrieved_articles(llm, make_rag):
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER, delay=3)  # LLM_TIMEOUT is 2 s
    result = make_rag().ask(QUESTION)
    assert "语言模型暂时不可用" in result.answer and "超时" in result.answer
    assert len(result.citations) == 5 and result.needs_human


def test_non_json_from_the_llm_falls_back_and_fails_the_judge(llm, make_rag):
    llm.add_rule(REWRITER, "我觉得可以这样改写：个人信息同意")
    llm.add_rule(JUDGE, "证据很好，给满分！")
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    round1, round2 = result.trace["rounds"]
    assert round2["rewrite"]["status"] == "fallback" and round2["queries"] == [QUESTION]
    assert round1["evaluation"]["passed"] is False and "JSON" in round1["evaluation"]["error"]
    assert result.situation == "partial"
    assert "评估失败" in llm.calls(ANSWERER)[0]["messages"][-1]["content"]


def test_citation_to_an_article_outside_the_evidence_is_flagged(llm, make_rag):
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, f"依据《{PIPL}》第十四条，以及《个人信息保护法》第九十九条。")
    result = make_rag().ask(QUESTION)
    assert result.unverified_citations == ["《个人信息保护法》第九十九条"]
    assert "第九十九条〔未核实〕" in result.answer
    assert [c["key"] for c in result.citations] == [f"{PIPL}第十四条"]


def test_rag_mode_is_one_retrieval_and_no_judge(llm, make_rag):
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION, mode="rag")
    assert result.trace["rounds"] == [] and result.situation == "unjudged"
    assert llm.calls(JUDGE) == [] and llm.calls(REWRITER) == []
    assert result.trace["llm_calls_total"] == 1


def test_filters_reach_every_round(llm, make_rag):
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少A"), judge(9)])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    only = {"field": "meta.article_no", "operator": "in", "value": ["第十三条", "第十四条"]}
    result = make_rag().ask(QUESTION, filters=only)
    for entry in result.trace["rounds"]:
        assert {r["key"] for r in entry["retrieved"]} <= {f"{PIPL}第十三条", f"{PIPL}第十四条"}
    assert len(result.trace["rounds"]) == 2


RANKER = "相关性评估员"  # the LLM reranker's system prompt
YES = [("是", -0.05), ("否", -3.0)]


def test_round_two_reranks_a_widened_pool_with_the_llm(llm, make_rag, monkeypatch):
    """ROUND_RERANKER=llm: round 1 is the fused order at no extra call; round 2 widens the pool the judge failed
    and the LLM's yes/no reranker orders it (one call per article, counted in the trace)."""
    monkeypatch.setenv("ROUND_RERANKER", "llm")
    monkeypatch.setenv("ROUND_RERANK_DEPTH", "20")
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少撤回同意的规定"), judge(9)])
    llm.add_rule((RANKER, "》第二十九条"), "是", top_logprobs=YES)
    llm.add_rule(RANKER, "否", top_logprobs=[("否", -0.05), ("是", -3.0)])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result) == ["retry", "pass"]
    first, second = result.trace["rounds"]
    place = [[r["key"] for r in entry["retrieved"]].index(f"{PIPL}第二十九条") for entry in (first, second)]
    assert place[1] < place[0]  # the article the LLM vouches for rises (fused with the search's order)
    scored = len(llm.calls(RANKER))
    assert scored >= 20  # the fused top 20, and the neighbours of its best three that were not in it
    assert result.trace["llm_calls"]["reranker"] == scored
    assert len(second["retrieved"]) == len(first["retrieved"]) == 10


def test_the_widened_pool_keeps_the_filters(llm, make_rag, monkeypatch):
    monkeypatch.setenv("ROUND_RERANKER", "llm")
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少A"), judge(9)])
    llm.add_rule(RANKER, "否", top_logprobs=[("否", -0.05), ("是", -3.0)])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    only = {"field": "meta.article_no", "operator": "in", "value": ["第十三条", "第十四条"]}
    result = make_rag().ask(QUESTION, filters=only)
    assert {r["key"] for r in result.trace["rounds"][1]["retrieved"]} == {f"{PIPL}第十三条", f"{PIPL}第十四条"}
    assert len(llm.calls(RANKER)) == 2  # neighbours 十二, 十五, 十六 are outside the filter: not scored


def test_same_question_is_served_from_the_cache(llm, make_rag):
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    rag = make_rag()
    first = rag.ask(QUESTION)
    calls = len(llm.requests)
    again = rag.ask(QUESTION + "？ ")
    assert len(llm.requests) == calls and again.trace["cached"] and again.answer == first.answer


def test_what_a_caller_does_to_a_result_does_not_reach_the_next_cache_hit(llm, make_rag):
    """Issue 19, bug 1: the chat API writes its follow-up note into the returned trace; the cache must not keep it."""
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    rag = make_rag()
    first = rag.ask(QUESTION)
    first.trace["condensed"] = {"condensed": True, "from": "另一个用户的追问"}
    first.citations.clear()
    again = rag.ask(QUESTION)
    assert again.trace["cached"] and "condensed" not in again.trace and again.citations
    again.trace["condensed"] = {"condensed": True}
    assert "condensed" not in rag.ask(QUESTION).trace


def test_an_answer_the_model_could_not_write_is_not_cached(llm, make_rag, monkeypatch):
    monkeypatch.setenv("LLM_COOLDOWN", "0")
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER, status=503)
    rag = make_rag()
    down = rag.ask(QUESTION)
    assert "语言模型暂时不可用" in down.answer and "InternalServerError" in down.answer_error
    llm.rules.pop()
    llm.add_rule(ANSWERER, GOOD_ANSWER)  # the model is back
    again = rag.ask(QUESTION)
    assert not again.trace.get("cached") and again.answer_error is None
    assert again.answer.startswith(f"【相关法条】\n《{PIPL}》第十四条：基于个人同意处理个人信息的")


def test_nothing_relevant_gives_an_honest_short_reply_without_inventing(llm, make_rag):
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(0, "知识库中没有关于商标注册的规定"))
    result = make_rag().ask("商标注册需要多长时间")
    assert result.situation == "none" and result.needs_human
    assert "没有找到足以回答" in result.answer and "商标注册" in result.answer
    assert result.citations == [] and llm.calls(ANSWERER) == []


def test_live_steps_report_each_stage_in_order_and_match_the_result(llm, make_rag):
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(5, "缺少同意的例外情形"), judge(9)])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    steps = []
    result = make_rag().ask(QUESTION, on_step=steps.append)
    stages = [s["stage"] for s in steps]
    assert stages[0] == "route" and stages[-1] == "answer"
    assert [s["decision"] for s in steps if s["stage"] == "decision"] == ["retry", "pass"]
    rewrites = [s for s in steps if s["stage"] == "rewrite"]
    assert [r["round"] for r in rewrites] == [1, 2] and rewrites[1]["feedback"] == "缺少同意的例外情形"
    assert rewrites[0]["queries"] == result.trace["rounds"][0]["queries"]
    paths = {s["path"] for s in steps if s["stage"] == "retrieve"}
    assert paths == {"citation", "bm25", "dense"}
    judged = [s for s in steps if s["stage"] == "judge"]
    assert [j["total"] for j in judged] == [20, 36] and judged[0]["missing"] == "缺少同意的例外情形"
    assert set(judged[1]["scores"]) == {"relevance", "completeness", "accuracy", "coverage"}
    # every retrieval of a round comes after that round's rewrite and before its judge
    first_judge = stages.index("judge")
    assert stages.index("rewrite") < stages.index("retrieve") < stages.index("fuse") < first_judge
    assert decisions(result) == ["retry", "pass"] and result.situation == "sufficient"
    assert result.trace["best_round"] == 2
    assert [t["key"] for t in [s for s in steps if s["stage"] == "fuse"][1]["top"]] == [
        r["key"] for r in result.trace["rounds"][1]["retrieved"][:5]]


def test_live_steps_of_a_greeting_and_of_a_cached_answer(llm, make_rag):
    rag = make_rag()
    steps = []
    rag.ask("你好！", on_step=steps.append)
    assert steps == [{"stage": "route", "route": "chitchat", "decided_by": "rule"}]
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    rag.ask(QUESTION, mode="rag")
    steps.clear()
    rag.ask(QUESTION, mode="rag", on_step=steps.append)
    assert [s["stage"] for s in steps] == ["cache"]


def test_instructions_echoed_by_a_small_model_are_dropped_from_the_answer(llm, make_rag):
    """What the local 1.5B model did: it copied the partial-evidence instructions into its answer. The copied
    sentences go whole, and a section they leave empty goes with its header (issue 20: the old guard left
    fragments such as 【尚缺信息】还缺少关于)."""
    echo = ("【初步结论】先直接回答问题，写出证据能确定的结论和所依据的条文。\n"
            f"【初步结论】需要取得同意。依据《{PIPL}》第十四条。\n"
            "【尚缺信息】列出回答这个问题还要知道、证据里却没有的事实或规定。\n"
            "【建议】写提问者下一步具体可以怎么做，如补充说明哪些情况或换个问法。说明是否为敏感个人信息。")
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(6, "缺少例外"), judge(5, "缺少例外")])
    llm.add_rule(ANSWERER, echo)
    result = make_rag().ask(QUESTION)
    assert result.situation == "partial"
    preface, body = result.answer.split("\n\n", 1)
    assert preface == "知识库未能确定：缺少例外"  # the honest line comes first; the model's text follows it
    assert body.startswith(f"【初步结论】需要取得同意。依据《{PIPL}》第十四条。\n【建议】说明是否为敏感个人信息。")
    assert "【尚缺信息】" not in result.answer and "先直接回答" not in result.answer
    checks = result.trace["answer_checks"]
    assert checks["sentences_removed"] == 3 and checks["sections_dropped"] == ["初步结论", "尚缺信息"]


def test_instructions_echoed_while_streaming_are_dropped_from_the_stream_too(llm, make_rag):
    echo = f"【尚缺信息】列出回答这个问题还要知道、证据里却没有的事实或规定。\n依据《{PIPL}》第十四条，需要取得同意。"
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, [judge(6, "缺少例外"), judge(5, "缺少例外")])
    llm.add_rule(ANSWERER, echo)
    streamed: list[str] = []
    result = make_rag().ask(QUESTION, streaming_callback=lambda chunk: streamed.append(chunk.content))
    text = "".join(streamed)
    assert text.startswith("知识库未能确定：缺少例外\n\n【尚缺信息】\n依据") and "还需要的具体事实" not in text
    assert result.answer.startswith(text)  # what streamed is what the answer says


@pytest.fixture
def evaluator_judge(tiny_evaluator, monkeypatch):
    """The loop judged by the trained evaluator (a tiny one; the threshold set per test)."""
    monkeypatch.setenv("EVALUATOR_MODEL", str(tiny_evaluator))

    def use(judge: str, threshold: float) -> None:
        monkeypatch.setenv("JUDGE", judge)
        monkeypatch.setenv("EVALUATOR_THRESHOLD", str(threshold))
    return use


def test_evaluator_pass_costs_no_judge_call(llm, make_rag, evaluator_judge):
    evaluator_judge("evaluator", 0.001)
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result) == ["pass"] and result.situation == "sufficient"
    assert llm.calls(JUDGE) == [] and result.trace["llm_calls"]["judge"] == 0
    evaluation = result.trace["rounds"][0]["evaluation"]
    assert evaluation["judge"] == "evaluator" and evaluation["passed"]
    assert [p["key"] for p in evaluation["passages"]] == [r["key"] for r in result.trace["rounds"][0]["retrieved"][:5]]
    assert all(0.0 <= p["probability"] <= 1.0 for p in evaluation["passages"])
    assert result.scores["probability"] == evaluation["probability"]


def test_evaluator_fail_retries_with_its_own_note_and_no_llm_judge(llm, make_rag, evaluator_judge):
    evaluator_judge("evaluator", 0.999)
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result)[0] == "retry" and len(result.trace["rounds"]) >= 2
    assert llm.calls(JUDGE) == []
    # the evaluator's note names the question's point; it reaches the rewriter and, when no round passes, the answer
    note = f"问题中“{QUESTION}”没有得到检索到的法条的直接回答"
    assert note in llm.calls(REWRITER)[0]["messages"][-1]["content"]
    assert result.situation == "partial" and result.answer.startswith(f"知识库未能确定：{note}")


def test_both_calls_the_llm_judge_only_on_a_fail_and_passes_its_note_on(llm, make_rag, evaluator_judge):
    evaluator_judge("both", 0.999)
    llm.add_rule(REWRITER, [REWRITE, REWRITE_2])
    llm.add_rule(JUDGE, judge(9, "缺少同意的例外情形"))  # the LLM's scores do not decide, its note is used
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    rounds = result.trace["rounds"]
    assert decisions(result)[0] == "retry"
    assert len(llm.calls(JUDGE)) == len(rounds) == result.trace["llm_calls"]["judge"]
    assert "缺少同意的例外情形" in llm.calls(REWRITER)[0]["messages"][-1]["content"]
    assert rounds[0]["evaluation"]["llm_judge"]["total"] == 36.0 and not rounds[0]["evaluation"]["passed"]


def test_both_passing_makes_no_judge_call(llm, make_rag, evaluator_judge):
    evaluator_judge("both", 0.001)
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert decisions(result) == ["pass"] and llm.calls(JUDGE) == []
    assert result.trace["llm_calls"] == {"rewriter": 0, "judge": 0, "answer": 1, "router": 0}


def test_the_answer_quotes_the_store_and_flags_what_it_cannot_back(llm, make_rag, pipl_store):
    """Issue 20, through the pipeline and the scripted LLM: the model's misquote of 第十四条 is replaced by the
    article's text, an invented figure is flagged, and what streams is the checked answer with the rendered
    section."""
    misquote = (f"【问题分析】需要同意。\n【相关法条】《{PIPL}》第十四条：收集个人信息一律须经书面同意。\n"
                f"【法律解释】依据《{PIPL}》第十四条，同意应在三十日内作出。\n【免责声明】仅供参考。")
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, misquote)
    streamed: list[str] = []
    result = make_rag().ask(QUESTION, streaming_callback=lambda chunk: streamed.append(chunk.content))
    article = next(d for d in pipl_store.filter_documents() if d.meta["article_no"] == "第十四条")
    assert f"【相关法条】\n《{PIPL}》第十四条：{article.content}\n" in result.answer
    assert "一律须经书面同意" not in result.answer
    assert "三十日〔未见依据〕内作出" in result.answer
    assert "".join(streamed) == result.answer  # the rendered section and the flag streamed as text
    checks = result.trace["answer_checks"]
    assert checks["rendered_articles"] == [f"{PIPL}第十四条"] and checks["numbers_flagged"] == ["三十日"]
    assert len(checks["quotes_replaced"]) == 1


def test_the_disclaimer_the_prompt_asks_for_is_not_taken_for_an_echo(llm, make_rag):
    """Found by benchmarks/answers.py: the echo guard removed the disclaimer the prompt tells the model to write
    (it is a prompt line), in 12 of 21 answers, and the empty 【免责声明】 went with it."""
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, f"【问题分析】需要同意。\n【相关法条】《{PIPL}》第十四条\n"
                           "【免责声明】本回答仅供参考，不构成正式法律意见。")
    result = make_rag().ask(QUESTION)
    assert result.answer.endswith("【免责声明】本回答仅供参考，不构成正式法律意见。")
    assert result.trace["answer_checks"]["sentences_removed"] == 0


@pytest.mark.parametrize("streaming", [False, True])
def test_an_answer_cut_at_the_token_limit_loses_its_fragment_not_its_sense(llm, make_rag, streaming):
    """benchmarks/answers.py: answers cut at max_tokens ended in “【注意事项】1. 《中华” or “不构成正式法律”."""
    cut = f"【问题分析】需要同意。依据《{PIPL}》第十四条。\n【注意事项】\n1. 《中华"
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, cut, finish_reason="length")
    streamed: list[str] = []
    callback = (lambda chunk: streamed.append(chunk.content)) if streaming else None
    result = make_rag().ask(QUESTION, streaming_callback=callback)
    assert result.answer.startswith(f"【问题分析】需要同意。依据《{PIPL}》第十四条。\n\n（回答达到长度上限")
    assert "《中华" not in result.answer.replace(f"《{PIPL}", "") and "【注意事项】" not in result.answer
    assert result.trace["answer_checks"]["cut_off"] == "1. 《中华"
    if streaming:
        assert result.answer.startswith("".join(streamed)) and "【注意事项】" not in "".join(streamed)


LOAN_QUESTION = "借条约定的利率超过上限怎么办"
LENDING_GAP = ("知识库未能确定：问题的决定性规则可能在《最高人民法院关于审理民间借贷案件适用法律若干问题的规定》中，"
               "本知识库未收录（可用 index --files 添加）")


@pytest.fixture
def covered_rag(make_rag, tiny_coverage, monkeypatch):
    monkeypatch.setenv("COVERAGE_CHECK", "on")
    monkeypatch.setenv("COVERAGE_MODEL", str(tiny_coverage))
    return make_rag


def test_uncovered_goes_straight_to_web_search_and_the_answer_says_what_is_missing_first(llm, covered_rag,
                                                                                        monkeypatch):
    """The judge passes on-topic articles, the coverage check finds the rule in a document the store lacks: no
    rewritten round, web search at once, the gap as the answer's first line, the verdict in trace and result."""
    llm.add_rule(REWRITER, REWRITE)
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, "根据[网页1]，超过部分不受保护。")
    with ScriptedSerpAPIServer(results=WEB_RESULTS) as serp:
        monkeypatch.setenv("SERPAPI_API_KEY", "test-key")
        monkeypatch.setenv("SERPAPI_BASE_URL", serp.base_url)
        result = covered_rag().ask(LOAN_QUESTION)
        assert [r["q"] for r in serp.requests] == [LOAN_QUESTION]
    assert decisions(result) == ["web_search"] and len(llm.calls(JUDGE)) == 1 and llm.calls(REWRITER) == []
    assert result.trace["verdict"] == "uncovered" and result.trace["web"]["status"] == "ok"
    evaluation = result.trace["rounds"][0]["evaluation"]
    assert evaluation["verdict"] == "uncovered" and evaluation["evidence_passed"] and not evaluation["passed"]
    assert evaluation["coverage"]["document"] == "最高人民法院关于审理民间借贷案件适用法律若干问题的规定"
    assert result.answer.splitlines()[0] == LENDING_GAP
    assert result.situation == "supplemented" and result.needs_human is False
    api = json.loads(json.dumps(result.to_dict(), ensure_ascii=False))  # what the REST API returns
    assert api["trace"]["verdict"] == api["scores"]["verdict"] == "uncovered"


def test_uncovered_without_a_web_key_still_answers_from_what_was_found_and_says_so(llm, covered_rag):
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = covered_rag().ask(LOAN_QUESTION)
    assert decisions(result) == ["web_search"] and result.trace["web"]["status"] == "skipped_no_key"
    assert result.answer.splitlines()[0] == LENDING_GAP
    assert result.situation == "partial" and result.needs_human and result.citations


def test_a_question_the_corpus_answers_passes_with_the_coverage_check_on(llm, covered_rag):
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = covered_rag().ask(QUESTION)
    assert decisions(result) == ["pass"] and result.trace["verdict"] == "pass"
    assert result.trace["rounds"][0]["evaluation"]["coverage"]["flagged"] is False
    assert result.situation == "sufficient"


LISTWISE = "你是法律检索助手"  # the listwise reranker's system prompt


def test_the_listwise_reranker_reorders_round_one_within_the_filters_and_is_traced(llm, make_rag, monkeypatch):
    """RERANKER=llm-listwise (the default with the embedded LLM): one call reads the fused candidates of round 1 and
    the article it names is judged and answered first; a filter still holds, and the call is in the trace."""
    monkeypatch.setenv("RERANKER", "llm-listwise")
    llm.add_rule(LISTWISE, "2")
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    only = {"field": "meta.article_no", "operator": "in", "value": ["第十三条", "第十四条", "第二十九条"]}
    result = make_rag().ask(QUESTION, filters=only)
    (listed,) = [r["messages"][-1]["content"] for r in llm.requests if LISTWISE in json.dumps(r, ensure_ascii=False)]
    second = listed.split("[2] ")[1].split("\n")[0]
    retrieved = result.trace["rounds"][0]["retrieved"]
    assert second.startswith(f"《{PIPL}》{retrieved[0]['key'].removeprefix(PIPL)}")  # what it named is first
    assert {r["key"] for r in retrieved} <= {f"{PIPL}{n}" for n in only["value"]} and "[4]" not in listed
    assert result.trace["llm_calls"]["reranker"] == 1


def test_auto_reranks_with_concurrent_yes_no_calls_with_an_api_model(llm, make_rag, monkeypatch):
    """RERANKER=auto with an API model (here LLM_BASE_URL): the pointwise reranker scores the fused top
    RERANK_TOP_N, one call per candidate."""
    monkeypatch.setenv("RERANKER", "auto")
    monkeypatch.setenv("RERANK_TOP_N", "6")
    llm.add_rule((RANKER, "》第十三条"), "是", top_logprobs=YES)
    llm.add_rule(RANKER, "否", top_logprobs=[("否", -0.05), ("是", -3.0)])
    llm.add_rule(JUDGE, judge(9))
    llm.add_rule(ANSWERER, GOOD_ANSWER)
    result = make_rag().ask(QUESTION)
    assert len(llm.calls(RANKER)) == 6 == result.trace["llm_calls"]["reranker"]
    assert result.trace["rounds"][0]["retrieved"][0]["key"] == f"{PIPL}第十三条"
