"""AnswerFinalizer: checks the answer against the evidence, writes the fallbacks, assembles the result.

- the answer check (`helpers.checks.answer_check`): 【相关法条】 rendered from the store's text of the articles
  the model names, every quote the model writes checked against the article it names (replaced, or 〔引文不符〕), every
  quantity checked against the evidence (〔未见依据〕), sections left empty dropped; what it did is counted in
  ``trace["answer_checks"]``;
- citations that point at nothing in the evidence are flagged 〔未核实〕 and listed;
- when the answer cites no article, the evidence it was written from is listed as 参考法条 (article citations inside
  those quotes are checked too); when the evidence is
  only partial, the top articles it did not quote are listed too (it says what it found);
- the LLM failed → the retrieved articles are returned with a note that the model was unavailable, and the reason
  in ``answer_error``;
- situation ``none`` → a short honest reply: what is missing, how to rephrase, ``needs_human``;
- the ``preface`` (`EvidenceSelector`, for situations ``partial`` and ``supplemented``: what the knowledge base does
  not settle, `helpers.checks.unsettled.unsettled_line`) comes first, as the generator streamed it.

Usage::

    result = AnswerFinalizer().run(query=query, evidence=evidence, situation="sufficient", rounds=rounds,
                                   text=llm_text)["result"]
    result["answer"], result["citations"], result["needs_human"], result["trace"]
"""

from typing import Any

from haystack import Document, component

from helpers.checks.answer_check import AnswerChecker, statute_entry
from helpers.records.contracts import is_web
from helpers.records.result import RAGResult
from helpers.records.rounds import Round, WebOutcome, best_round, document_summary, loop_trace, still_missing
from helpers.statutes.labels import citation_label
from helpers.statutes.versions import version_mark

NO_ANSWER = (
    "抱歉，知识库中没有找到足以回答这个问题的法律依据，我不想给出没有依据的答案。\n"
    "{missing}建议：说明具体情形（涉及的主体、行为、时间、地点），或使用更正式的法律用语（例如“用人单位”“个人信息处理者”），"
    "也可以指明相关法律名称后再问一次。如问题紧急，请咨询专业律师。"
)
CUT_OFF = "\n\n（回答达到长度上限，未写完的最后一句已略去。）"
LLM_DOWN = "语言模型暂时不可用（{error}），无法生成解答。以下是检索到的相关法条，供您参考：\n"


def citation_of(doc: Document, verified: bool = True, mentions: list[str] | None = None) -> dict[str, Any]:
    """A citation or evidence entry; ``mentions`` are the exact strings of the answer that cite ``doc``."""
    if is_web(doc):
        return {"type": "web", "label": doc.meta.get("evidence_label"), "title": doc.meta.get("title"),
                "url": doc.meta.get("url"), "text": doc.content, "key": doc.meta.get("key"), "verified": verified,
                "mentions": mentions or []}
    meta = doc.meta
    return {"type": "statute", "key": meta.get("key"), "law": meta.get("law"),
            "article": meta.get("article_no"), "text": doc.content, "url": None, "verified": verified,
            "mentions": mentions or [], "in_force": meta.get("in_force") is not False,
            "version_mark": version_mark(meta), "version_date": meta.get("version_date"),
            "amended_by": meta.get("amended_by") or [], "found_via": meta.get("found_via")}


def article_label(doc: Document) -> str:
    return citation_label(doc)


def list_articles(documents: list[Document], evidence: list[Document], query: str = "") -> str:
    """The local articles as a quoted list (`helpers.checks.answer_check.statute_entry`: a long one as a marked excerpt,
    article citations inside the quotes checked like the model's own, so a text in the knowledge base that cites an
    article outside the evidence is flagged, not passed on as a source)."""
    return "\n".join(f"- {statute_entry(doc, evidence, query)[0]}" for doc in documents if not is_web(doc))


@component
class AnswerFinalizer:
    """Builds the final ``result``: answer, citations, judge scores, ``needs_human`` and the trace."""

    @component.output_types(result=RAGResult)
    def run(self, query: str, evidence: list[Document], situation: str, rounds: list[Round] | None = None,
            web: WebOutcome | None = None, documents: list[Document] | None = None, text: str = "",
            error: str = "", llm_calls: int = 0, seconds: float = 0.0, removed: int = 0,
            cut_off: bool = False, preface: str = "") -> dict[str, Any]:
        """:param query: the question the answer is for (quantities the user gave are not flagged);
        :param rounds: the judged rounds (agentic mode; their scores and trace go into the result);
        :param web: the web search's outcome, when there was one;
        :param documents: plain RAG mode's one retrieval (listed in the trace);
        :param removed: sentences the LLM call's guards removed (counted in the trace);
        :param cut_off: the model stopped at its token limit (its unfinished sentence is left out, and said so);
        :param preface: the answer's first line (`EvidenceSelector`: what the knowledge base does not settle)."""
        rounds = rounds or []
        missing_text = still_missing(rounds)
        needs_human = situation in ("none", "partial")
        mentions: dict[str, list[str]] = {}
        answer_error = None
        checked = AnswerChecker(evidence, query).check(text, cut_off) if text.strip() and not error else None
        if checked is not None and not checked.text:
            checked, error = None, "回答的内容全部被移除（复述了提示词）"
        if situation == "none":
            missing = f"还缺少：{missing_text}\n" if missing_text else ""
            answer, cited, unverified = NO_ANSWER.format(missing=missing), [], []
        elif error or not text.strip():
            answer_error = error or "空回复"
            answer = LLM_DOWN.format(error=answer_error) + list_articles(evidence, evidence, query)
            cited, unverified, needs_human = [d for d in evidence if not is_web(d)], [], True
        else:
            assert checked is not None
            answer, cited, unverified, mentions = checked.text, checked.verified, checked.unverified, checked.mentions
            if cut_off:
                answer += CUT_OFF
            local = [d for d in evidence if not is_web(d)][:3]
            if not any(not is_web(d) for d in cited) and local:
                answer += "\n\n参考法条：\n" + list_articles(local, evidence, query)
                cited = local + cited
            elif situation == "partial" and (found := [d for d in local if d not in cited]):
                # insufficient evidence: say what was found, not only what the model chose to quote
                answer += "\n\n检索到的其他相关法条：\n" + list_articles(found, evidence, query)
                cited = cited + found
        answer = preface + answer  # streamed first by the generator: what streamed stays the answer's start
        if web is not None and web.status != "ok" and web.message:
            answer += f"\n\n（说明：{web.message}）"
        best = best_round(rounds)
        route = {} if rounds else {"mode": "rag", "retrieved": [document_summary(d) for d in documents or []]}
        trace = loop_trace(query, rounds, web, situation if rounds else "rag", route, answer=(llm_calls, seconds))
        result = RAGResult(
            answer=answer,
            mode="",  # the caller knows which pipeline ran (`application.rag.answer_with` sets it)
            # by_model: the model wrote this citation; False for the article lists this stage appends
            citations=[{**citation_of(d, mentions=mentions.get(d.id) or [article_label(d)]),
                        "by_model": d.id in mentions}
                       for d in cited],
            unverified_citations=unverified,
            situation=situation,
            needs_human=needs_human,
            answer_error=answer_error,
            scores=best.verdict() if best is not None else None,
            evidence=[citation_of(d) for d in evidence],
            trace={**trace, "answer_checks": {**(checked.report() if checked else {}),
                                                      "sentences_removed": removed}},
        )
        return {"result": result}
