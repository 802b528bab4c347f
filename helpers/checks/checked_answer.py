"""`CheckedAnswer`: what the answer check (`helpers.checks.answer_check.AnswerChecker`) made of one answer: the checked
text, the evidence it cites, and counts of what was rendered, replaced, relabelled, flagged and dropped.

Usage::

    checked = AnswerChecker(evidence, query).check(model_text)
    checked.text, checked.verified, checked.report()   # report() goes into trace["answer_checks"]
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from haystack import Document


@dataclass
class CheckedAnswer:
    """The checked text, the evidence it cites, and what the check did (`report` goes into the trace)."""

    text: str
    verified: list[Document] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    mentions: dict[str, list[str]] = field(default_factory=dict)
    rendered: list[str] = field(default_factory=list)  # keys of the articles written from the store
    excerpts: int = 0
    quotes_checked: int = 0
    quotes_replaced: list[str] = field(default_factory=list)  # the model's quotes that were not the article's
    quotes_relabelled: list[str] = field(default_factory=list)  # "<label written> → <label of the quoted text>"
    quotes_flagged: list[str] = field(default_factory=list)
    numbers_checked: int = 0
    numbers_flagged: list[str] = field(default_factory=list)
    sections_dropped: list[str] = field(default_factory=list)
    cut_off: str = ""  # the unfinished sentence left out of a reply cut at the token limit

    def report(self) -> dict[str, Any]:
        return {"rendered_articles": self.rendered, "excerpts": self.excerpts, "quotes_checked": self.quotes_checked,
                "quotes_replaced": self.quotes_replaced, "quotes_relabelled": self.quotes_relabelled,
                "quotes_flagged": self.quotes_flagged,
                "numbers_checked": self.numbers_checked, "numbers_flagged": self.numbers_flagged,
                "sections_dropped": self.sections_dropped, "cut_off": self.cut_off}
