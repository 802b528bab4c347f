"""QueryRewriter: the original query plus 2–3 formal legal rewordings and keywords, different every round.

The LLM gives variants that keep the user's intent and add nothing the user did not say. In rounds after the
first it also gets the judge's note on what is missing and the queries already tried, and must produce new ones.
Unusable LLM output → the original query alone, with the reason recorded in the trace; never a crash.

``rewrite_first_round=False`` (the pipeline's default, setting ``REWRITE_FIRST_ROUND``) makes round 1 search the
original query alone, without an LLM call: the rewriter is only asked once the judge has said what is missing,
as in CRAG (retrieve, grade, then transform the query). A question that the first retrieval answers costs one
LLM call less, and every rewrite is aimed at a gap the judge named.

``long_question_chars`` (setting ``LONG_QUESTION_CHARS``, default 0 = off) can make an exception: a question at least
that long is treated as a story rather than a search query (我的朋友在公案机关办理了取保候审……是不是过了起诉期),
so round 1 already searches what it is about, in legal terms — the rewriter's variants and keywords beside the
question as asked.

Usage::

    rewriter = QueryRewriter()
    out = rewriter.run(query="公司收集我的个人信息需要我同意吗")
    out["queries"]   # ['公司收集我的个人信息需要我同意吗', '个人信息处理者处理个人信息是否应当取得个人同意', ...]
"""

import time
from typing import Any

from haystack import component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage

from helpers.checks.llm_json import parse_json_object
from helpers.records.rounds import Round, still_missing, tried_queries
from llm_access.call_policy import LLMComponent

SYSTEM = (
    "你是中国法律检索专家。把用户的问题改写成适合检索法律条文的查询。要求：\n"
    "1. variants：2到3个正式的法律表述，保持用户原意，不添加用户没有说的事实；\n"
    "2. keywords：3到6个法律关键词（如 个人信息 同意 个人信息处理者）；\n"
    "3. domain：所属法律领域（如 个人信息保护、劳动、婚姻家庭、合同）。\n"
    "用户讲的是一段经历时，先找出其中的法律关系、当事人身份和争议点，查询只写这些，不写与法律无关的细节。\n"
    '只输出 JSON：{"variants": ["..."], "keywords": ["..."], "domain": "..."}'
)
RETRY = (
    "\n\n上一轮检索的评估认为缺少：{missing}\n已经检索过的查询（不要重复）：\n{tried}\n"
    "请针对缺少的信息给出新的、不同的查询。"
)
FIRST_ROUND_NOTE = "第一轮先检索原问题，评估认为不足时再改写"
# off: on 289 real long questions the round-1 rewrite lost R@10 (research/reports/long_question_round1_study.md)
LONG_QUESTION_CHARS = 0
MAX_VARIANTS = 3
MAX_QUERY_CHARS = 200


@component
class QueryRewriter(LLMComponent):
    """Produces ``queries`` (original first) for the retrieval paths, and the round's ``plan`` for the tracker.

    Reads the rounds so far (none in round 1): the last judge's note on what is missing and the queries tried.

    :param chat_generator: the LLM; ``None`` = the factory's main model at warm-up.
    :param max_variants: rewordings kept per round (besides the original).
    :param rewrite_first_round: ask the LLM in round 1 too; ``False`` = round 1 searches the original alone.
    :param long_question_chars: round 1 rewrites a question at least this long even when ``rewrite_first_round``
        is off; ``0`` = never.
    """

    _params = ("max_variants", "rewrite_first_round", "long_question_chars")

    def __init__(self, chat_generator: OpenAIChatGenerator | None = None, role: str = "main",
                 max_variants: int = MAX_VARIANTS, rewrite_first_round: bool = False,
                 long_question_chars: int = LONG_QUESTION_CHARS) -> None:
        LLMComponent.__init__(self, chat_generator, role)
        if max_variants < 0:
            raise ValueError("max_variants must be >= 0")
        if long_question_chars < 0:
            raise ValueError(f"long_question_chars must be >= 0, got {long_question_chars}")
        self.max_variants = max_variants
        self.rewrite_first_round = rewrite_first_round
        self.long_question_chars = long_question_chars

    def rewrites_first_round(self, query: str) -> bool:
        """Whether round 1 asks the LLM for this question (always, or because the question is long)."""
        return self.rewrite_first_round or 0 < self.long_question_chars <= len(query.strip())

    @component.output_types(queries=list[str], query=str, plan=dict)
    def run(self, query: str, rounds: list[Round] | None = None) -> dict[str, Any]:
        """:param rounds: the rounds so far, from the loop (None in round 1).

        :returns: ``queries`` to search, ``query`` (the original, for the judge), and ``plan``: the round's number,
            queries, rewrite status, the feedback it answered and its LLM calls and seconds.
        """
        started = time.perf_counter()
        rounds = rounds or []
        tried = tried_queries(rounds)
        missing = still_missing(rounds)
        if not rounds and not self.rewrites_first_round(query):
            return self._emit(query, [query], {"status": "skipped", "reason": FIRST_ROUND_NOTE}, rounds, 0, started)
        prompt = f"用户问题：{query}"
        if rounds:
            listed = "\n".join(f"- {q}" for q in tried) or "（无）"
            prompt += RETRY.format(missing=missing or "（评估未说明）", tried=listed)
        call = self.chat([ChatMessage.from_system(SYSTEM), ChatMessage.from_user(prompt)],
                         {"temperature": 0.3 if rounds else 0, "max_tokens": 300,
                          "response_format": {"type": "json_object"}})
        parsed = parse_json_object(call.text)
        info: dict[str, Any] = {"status": "ok"}
        variants: list[str] = []
        if call.error:
            info = {"status": "fallback", "reason": call.error}
        elif parsed is None or not isinstance(parsed.get("variants"), list):
            info = {"status": "fallback", "reason": "改写结果不是预期的 JSON，只检索原问题"}
        else:
            seen = {query, *tried}
            for variant in parsed["variants"]:
                text = str(variant).strip()[:MAX_QUERY_CHARS]
                if text and text not in seen and len(variants) < self.max_variants:
                    variants.append(text)
                    seen.add(text)
            keywords = [str(k).strip() for k in parsed.get("keywords") or [] if str(k).strip()][:6]
            if keywords and " ".join(keywords) not in seen:
                variants.append(" ".join(keywords))
            info.update({"keywords": keywords, "domain": str(parsed.get("domain") or "")})
            if not variants:
                info = {"status": "fallback", "reason": "没有得到新的改写，只检索原问题"}
        return self._emit(query, [query, *variants], info, rounds, 1, started)

    @staticmethod
    def _emit(query: str, queries: list[str], info: dict[str, Any], rounds: list[Round], calls: int,
              started: float) -> dict[str, Any]:
        plan = {"round": len(rounds) + 1, "queries": queries, "rewrite": info,
                "feedback": still_missing(rounds), "llm_calls": calls,
                "seconds": round(time.perf_counter() - started, 3)}
        return {"queries": queries, "query": query, "plan": plan}
