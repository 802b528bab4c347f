"""Amendment instruments (修正案, 决定) that rewrite articles of a law kept as one consolidated text.

laws.db keeps the 刑法 as its 2020 consolidated text (status 已被修改) and each 刑法修正案 as its own law whose
条目 are instructions: "将刑法第二百六十四条修改为：…", "在刑法第一百三十三条后增加一条，作为第一百三十三条之一：…".
This module reads such an instruction: which articles it changes, whether it replaces the whole article, and the
new text. `StatuteDB` uses it to link each article to its amendments and to show the text in force.

Usage::

    from document_store.amendments import parse_instruction
    change = parse_instruction("将刑法第二百六十四条修改为：“盗窃公私财物……”", "刑法")
    change.targets, change.whole, change.new_text   # (("第二百六十四条",), True, "盗窃公私财物……")
    change.text_for("第二百六十四条")                 # that article's part of an instruction naming several
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.statutes.numerals import CN_NUMERAL_CHARS

_ARTICLE = rf"第[{CN_NUMERAL_CHARS}]+条(?:之[{CN_NUMERAL_CHARS}]+)?"
_ARTICLE_RE = re.compile(_ARTICLE)
_ADDED_RE = re.compile(rf"作为({_ARTICLE}(?:[、和]{_ARTICLE})*)")  # 增加二条，作为第X条之一、第X条之二
_WHOLE_RE = re.compile(rf"(?:该条|{_ARTICLE})修改为$")  # not 第X条第一款修改为
_HEADED_RE = re.compile(rf"({_ARTICLE})(?:\s+|$)(.*)")  # a line of the new text opening with its article's number
_HEAD_END_RE = re.compile(r"[：:\"“]")
_QUOTES = "\"“”"


@dataclass(frozen=True)
class Change:
    """What one instruction does to the amended law."""

    targets: tuple[str, ...]  # article numbers of the amended law, e.g. ("第一百三十三条之一",)
    whole: bool  # the article's whole text is replaced (or a new article added) by `new_text`
    new_text: str  # the quoted text that follows the instruction ("" for a deletion)

    def text_for(self, target: str) -> str:
        """The new text of one target: with several, its own lines (from the one its number opens, the number
        dropped, to the next target's); `new_text` when there is one target or no line opens with its number."""
        if len(self.targets) == 1:
            return self.new_text
        owner, lines = None, []
        for line in self.new_text.splitlines():
            headed = _HEADED_RE.match(line)
            if headed and headed.group(1) in self.targets:
                owner, line = headed.group(1), headed.group(2)
            if owner == target and line:
                lines.append(line)
        return "\n".join(lines) or self.new_text


def parse_instruction(text: str, law_short: str) -> Change | None:
    """The change an amending article makes to ``law_short`` (the law's name without 中华人民共和国), or None
    when the text is not an instruction to amend that law (e.g. "依照刑法第X条的规定追究刑事责任")."""
    match = _HEAD_END_RE.search(text)
    head = text[: match.start()] if match else text
    if not re.match(rf"^\s*(?:将|在|删去|删除){re.escape(law_short)}第", head):
        return None
    added = _ADDED_RE.search(head)
    targets = tuple(dict.fromkeys(_ARTICLE_RE.findall(added.group(1) if added else head)))
    if not targets:
        return None
    whole = bool(added) or bool(_WHOLE_RE.search(head.strip()))
    body = text[match.end():] if match else ""
    lines = [line.strip().strip(_QUOTES).strip() for line in body.splitlines()]
    return Change(targets, whole, "\n".join(line for line in lines if line))
