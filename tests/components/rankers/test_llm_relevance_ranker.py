"""LLMRelevanceRanker against the scripted OpenAI-compatible server (real HTTP): every call for one question shares
its prompt prefix (what llama.cpp keeps in its KV cache), and each passage is its label and first sentences."""

from haystack import Document

from components.rankers.llm_relevance_ranker import LLMRelevanceRanker

LAW = "中华人民共和国个人信息保护法"
YES = [("是", -0.05), ("否", -3.0)]
NO = [("否", -0.05), ("是", -3.0)]


def article(n: int, text: str) -> Document:
    return Document(content=text, meta={"law": LAW, "article_no": f"第{n}条", "key": f"k{n}", "source": "law:pipl"})


DOCS = [article(1, "为了保护个人信息权益，制定本法。"),
        article(13, "处理个人信息应当取得个人同意。" + "例外情形说明很长，" * 30),
        article(44, "个人对其个人信息的处理享有知情权、决定权。")]


def prompt_text(request: dict) -> str:
    return "\n".join(m["content"] for m in request["messages"])


def test_every_candidate_shares_the_question_prefix_and_only_the_passage_differs(llm):
    llm.add_rule("第13条", "是", top_logprobs=YES)
    llm.add_rule("法条", "否", top_logprobs=NO)
    ranked = LLMRelevanceRanker(top_n=3, max_chars=30, max_workers=1).run(
        query="公司收集个人信息需要同意吗", documents=DOCS)["documents"]
    assert ranked[0].meta["key"] == "k13"
    prompts = [prompt_text(r) for r in llm.requests]
    assert len(prompts) == 3
    passages = [f"《{LAW}》第{n}条" for n in (1, 13, 44)]
    prefixes = {p[: p.index(label)] for p, label in zip(sorted(prompts, key=lambda p: next(
        i for i, label in enumerate(passages) if label in p)), passages, strict=True)}
    assert len(prefixes) == 1  # identical up to the passage: the KV cache serves it
    (prefix,) = prefixes
    assert prefix.index("公司收集个人信息需要同意吗") < len(prefix) and "只回答" in prefix
    long_prompt = next(p for p in prompts if "第13条" in p)
    assert "处理个人信息应当取得个人同意。" in long_prompt and "例外情形说明很长" not in long_prompt


def test_a_cancelled_run_stops_the_calls_of_every_worker(llm):
    """Issue 63, item 1: the scoring calls run in worker threads, which did not see the run's cancellation."""
    import pytest

    from helpers.records.cancellation import Cancellation, RunCancelled, cancelling

    llm.add_rule("法条", "否", top_logprobs=NO)
    ranker = LLMRelevanceRanker(top_n=3, max_workers=3)
    ranker.warm_up()
    cancel = Cancellation()
    cancel.cancel("the client disconnected")
    with cancelling(cancel), pytest.raises(RunCancelled, match="the client disconnected"):
        ranker.run(query="公司收集个人信息需要同意吗", documents=DOCS)
    assert llm.requests == []  # no worker made its call
