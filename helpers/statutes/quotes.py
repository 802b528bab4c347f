"""Statute quotes: whether a quoted span is the article's text, and which part of a long article to show.

Quotes are compared after NFKC, with whitespace and punctuation removed (a model that writes ``，`` for ``；`` or
drops a line break quotes correctly); an excerpt is fine, and ``……`` (or ``...``) marks left-out text, so
“个人信息处理者……方可处理个人信息” matches when both pieces occur in that order.

Usage::

    from helpers.statutes.quotes import is_excerpt, excerpt
    is_excerpt("试用期不得超过二个月", article_text)          # True for 劳动合同法第十九条
    text, partial = excerpt(long_article_text, hint="试用期 一年")  # the lead and the paragraph that matters
"""

from __future__ import annotations

import re
import unicodedata

ELLIPSIS_RE = re.compile(r"…+|\.{3,}|⋯+")
EXCERPT_CHARS = 240  # an article longer than this is shown as an excerpt: its lead and the part the question needs
SENTENCE_END_RE = re.compile(r"(?<=[。！？；])")


def normalise(text: str) -> str:
    """NFKC, without whitespace and punctuation (letters, digits and CJK characters kept)."""
    text = unicodedata.normalize("NFKC", text)
    return "".join(ch for ch in text if not (ch.isspace() or unicodedata.category(ch)[0] in "PS"))


def is_excerpt(quote: str, article: str) -> bool:
    """Whether ``quote`` is ``article``'s text (all of it or an excerpt; ``……`` gaps allowed, pieces in order)."""
    pieces = [normalise(p) for p in ELLIPSIS_RE.split(quote)]
    pieces = [p for p in pieces if p]
    if not pieces:
        return False
    target, start = normalise(article), 0
    for piece in pieces:
        found = target.find(piece, start)
        if found < 0:
            return False
        start = found + len(piece)
    return True


def _bigrams(text: str) -> set[str]:
    text = normalise(text)
    return {text[i:i + 2] for i in range(len(text) - 1)}


def _units(article: str) -> list[tuple[int, str]]:
    """(paragraph number, text): paragraphs, with a paragraph longer than `EXCERPT_CHARS` split into sentences."""
    units: list[tuple[int, str]] = []
    for number, paragraph in enumerate(p for p in article.split("\n") if p.strip()):
        pieces = [paragraph] if len(paragraph) <= EXCERPT_CHARS else SENTENCE_END_RE.split(paragraph)
        units.extend((number, piece) for piece in pieces if piece.strip())
    return units


def excerpt(article: str, hint: str = "", limit: int = EXCERPT_CHARS) -> tuple[str, bool]:
    """``article`` itself when short; otherwise its first paragraph (or sentence) and the ones sharing most
    character pairs with ``hint`` (the question, the answer so far), up to ``limit`` characters, in the article's
    order, with ``……`` where text is left out. Returns the text and whether it is an excerpt."""
    if len(article) <= limit:
        return article, False
    units = _units(article)
    wanted = _bigrams(hint)
    keep = {0}
    size = len(units[0][1])
    for i in sorted(range(1, len(units)), key=lambda i: (-len(_bigrams(units[i][1]) & wanted), i)):
        if not wanted & _bigrams(units[i][1]) or size + len(units[i][1]) > limit:
            continue
        keep.add(i)
        size += len(units[i][1])
    for i in sorted(keep - {0}) + [0]:  # a kept lead-in (…下列人员：) brings its items while they fit
        j = i + 1
        while units[i][1].rstrip().endswith("：") and j < len(units) and units[j][1].lstrip().startswith(("（", "(")):
            if j not in keep:
                if size + len(units[j][1]) > limit:
                    break
                keep.add(j)
                size += len(units[j][1])
            j += 1
    if len(keep) == len(units):
        return article, False
    parts, previous = [], -1
    for i in sorted(keep):
        if parts:
            parts.append("……" if i != previous + 1 else "\n" if units[i][0] != units[previous][0] else "")
        parts.append(units[i][1])
        previous = i
    return "".join(parts) + ("……" if previous < len(units) - 1 else ""), True
