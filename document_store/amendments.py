"""Amendment instruments (修正案, 决定) that rewrite articles of a law kept as one consolidated text.

laws.db keeps the 刑法 as its 2020 consolidated text (status 已被修改) and each 刑法修正案 as its own law whose
条目 are instructions: "将刑法第二百六十四条修改为：…", "在刑法第一百三十三条后增加一条，作为第一百三十三条之一：…".
This module reads such an instruction: which articles it changes, whether it replaces the whole article, and the
new text. `StatuteDB` uses it to link each article to its amendments and to show the text in force.

Usage::

    from document_store.amendments import parse_instruction
    change = parse_instruction("将刑法第二百六十四条修改为：“盗窃公私财物……”", "刑法")
    change.targets, change.whole, change.new_text   # (("第二百六十四条",), True, "盗窃公私财物……")
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.statutes.numerals import CN_NUMERAL_CHARS

_ARTICLE = rf"第[{CN_NUMERAL_CHARS}]+条(?:之[{CN_NUMERAL_CHARS}]+)?"
_ARTICLE_RE = re.compile(_ARTICLE)
_HEAD_END_RE = re.compile(r"[：:\"“]")
_QUOTES = "\"“”"


@dataclass(frozen=True)
class Change:
    """What one instruction does to the amended law."""

    targets: tuple[str, ...]  # article numbers of the amended law, e.g. ("第一百三十三条之一",)
    whole: bool  # the article's whole text is replaced (or a new article added) by `new_text`
    new_text: str  # the quoted text that follows the instruction ("" for a deletion)


def parse_instruction(text: str, law_short: str) -> Change | None:
    """The change an amending article makes to ``law_short`` (the law's name without 中华人民共和国), or None
    when the text is not an instruction to amend that law (e.g. "依照刑法第X条的规定追究刑事责任")."""
    match = _HEAD_END_RE.search(text)
    head = text[: match.start()] if match else text
    if not re.match(rf"^\s*(?:将|在|删去|删除){re.escape(law_short)}第", head):
        return None
    added = re.search(rf"作为({_ARTICLE})", head)
    targets = (added.group(1),) if added else tuple(dict.fromkeys(_ARTICLE_RE.findall(head)))
    if not targets:
        return None
    whole = bool(added) or bool(re.search(r"(?:该条|条)修改为$", head.strip()))
    body = text[match.end():] if match else ""
    lines = [line.strip().strip(_QUOTES).strip() for line in body.splitlines()]
    return Change(targets, whole, "\n".join(line for line in lines if line))
