"""What a pair reader sees of an article: its 《法名》第X条 label and its first sentences, not its whole text.

The decisive part of a statute article is nearly always its first sentence (the rule; later sentences add
exceptions and details), and an LLM reading on 2 cores pays for every token, so the rerankers show the label and
the text up to ``max_chars``, cut at the last sentence end inside that window when there is one.

Usage::

    from helpers.statutes.passages import passage
    # "《中华人民共和国个人信息保护法》第十三条 符合下列情形之一的，个人信息处理者方可处理个人信息：……"
    passage(doc, 80)
"""

from __future__ import annotations

from haystack import Document

from helpers.statutes.labels import citation_label

SENTENCE_ENDS = "。；！？"
MIN_SHARE = 0.5  # a sentence end this early in the window would throw too much away: cut at the window instead


def first_sentences(text: str, max_chars: int) -> str:
    """``text`` up to ``max_chars``, ending at the last sentence end in that window when it lies in the window's
    second half; an ellipsis marks a cut text."""
    text = " ".join(text.split())
    if len(text) <= max_chars:
        return text
    window = text[:max_chars]
    end = max(window.rfind(mark) for mark in SENTENCE_ENDS)
    return window[: end + 1] if end + 1 >= max_chars * MIN_SHARE else window + "……"


def passage(doc: Document, max_chars: int) -> str:
    """The label of a statute article (or a file passage's title) and its first sentences."""
    label = citation_label(doc) if doc.meta.get("law") else str(doc.meta.get("title") or "")
    body = first_sentences(doc.content or "", max_chars)
    return f"{label} {body}" if label else body
