"""What part of a question the evidence does not settle, in one line (no LLM call).

A consultation tells a story and asks one thing, usually in its last clause (…请问是不是过了起诉期). When the judged
evidence fails, the line names that point and the question's words no judged passage contains, so the rewriter's
next round searches for them and the answer can say what the knowledge base did not settle.

Usage::

    from helpers.checks.unsettled import unsettled_note
    unsettled_note("朋友被取保候审两个月了还没起诉，是不是过了起诉期", words, passages)
    # '问题中“是不是过了起诉期”没有得到检索到的法条的直接回答（法条未涉及：起诉期）'
"""

from __future__ import annotations

import re

CLAUSE_END = re.compile(r"[，,。！!？?；;\n]+")
ASKS = re.compile(r"[吗呢？?]|是否|是不是|能否|可否|可不可以|能不能|会不会|怎么|怎样|如何|多少|什么|哪些|哪个|几")
MAX_POINT_CHARS = 40
MAX_WORDS = 4
NOTHING_FOUND = "没有检索到任何相关法条"
UNSETTLED_PREFIX = "知识库未能确定："  # how an answer that says what is not settled begins
UNSETTLED = UNSETTLED_PREFIX + "{missing}\n\n"
MAX_UNSETTLED_CHARS = 120


def question_point(query: str) -> str:
    """The clause that asks (the last one with a question word), else the last clause; at most 40 characters."""
    clauses = [c.strip() for c in CLAUSE_END.split(query) if c.strip()]
    if not clauses:
        return ""
    asking = [c for c in clauses if ASKS.search(c)]
    point = (asking or clauses)[-1]
    return point if len(point) <= MAX_POINT_CHARS else point[: MAX_POINT_CHARS - 1] + "…"


def uncovered_words(words: list[str], texts: list[str]) -> list[str]:
    """The question's words (in question order, once each) that none of ``texts`` contains."""
    lowered = [t.lower() for t in texts]
    return [w for w in dict.fromkeys(words) if not any(w in t for t in lowered)]


def unsettled_note(query: str, words: list[str], texts: list[str]) -> str:
    """One line: the question's point the evidence does not settle and, first from that point, the words no passage
    holds. ``words``: the question's content words (tokenised, stopwords removed); ``texts``: the judged passages."""
    if not texts:
        return NOTHING_FOUND
    point = question_point(query)
    missing = uncovered_words(words, texts)
    missing = [w for w in missing if w in point] + [w for w in missing if w not in point]
    # a word inside a longer missing word says nothing more (取保 inside 取保候审)
    missing = [w for w in missing if not any(w != other and w in other for other in missing)][:MAX_WORDS]
    detail = f"（法条未涉及：{'、'.join(missing)}）" if missing else "（检索到的法条相关性不足）"
    return f"问题中“{point}”没有得到检索到的法条的直接回答{detail}"


def unsettled_line(missing: str) -> str:
    """The judge's note on what is missing as an answer's first line (one line, at most 120 characters), or ``""``."""
    line = " ".join(missing.split())
    line = line if len(line) <= MAX_UNSETTLED_CHARS else line[: MAX_UNSETTLED_CHARS - 1] + "…"
    return UNSETTLED.format(missing=line) if line else ""
