"""The answer check: statute text from the store, every quote and number checked, no empty sections.

A small model cannot be trusted to copy statute text or figures, and it does not have to: the evidence holds the
exact text. `AnswerChecker` reads the model's answer a piece at a time (a header, a sentence, or a line that holds a
citation), so a stream is checked as it arrives and the streamed text is the checked text:

- **【相关法条】 is rendered from the evidence**: the model names articles there; each one found in the evidence is
  written as ``《法名》第X条：<its exact text>`` (a long article as its lead and the part the question needs,
  marked ``（节选）``), in the order the model named them; whatever the model wrote as their text is discarded
  (counted as a replaced quote where it was not the article's). An article not in the evidence stays as its label
  with 〔未核实〕 and no text.
- **A quote the model writes elsewhere** (``《法名》第X条：…`` or ``《法名》第X条规定“…”``, or a bare ``第X条：…``
  when all the evidence is from one law) must be the named article's text (`helpers.statutes.quotes.is_excerpt`).
  One that is not is relabelled when it is the text of exactly one other evidence article (the right text under the
  wrong label: 第十五条 → 第十四条, 《劳动法》 → 《劳动合同法》), else replaced by the named article's text, or
  flagged 〔引文不符〕 when that article is not in the evidence. 【相关法条】 follows the same rule.
- **Every quantity** the model states (`helpers.statutes.quantities`: 六个月, 一千元, 十六周岁, 30%) must occur in the
  evidence or the question; one that does not is flagged 〔未见依据〕.
- **Citations** are verified as `helpers.statutes.citations.verify_citations` does (〔未核实〕); text quoted from the
  store is the statute's own wording, so only article citations inside it are checked.
- **A section left empty** (its text removed by a guard, or never written) is dropped with its header.

Usage::

    checker = AnswerChecker(evidence, query="签一年的劳动合同，试用期最长多久")
    checked = checker.check(model_text)
    checked.text, checked.verified, checked.unverified, checked.report()
    # streaming: out = checker.feed(chunk) for each chunk, then checker.finish()
"""

from __future__ import annotations

import re

from haystack import Document

from helpers.checks.checked_answer import CheckedAnswer
from helpers.checks.prompt_guard import SECTION_HEADER
from helpers.records.contracts import is_web
from helpers.statutes.citations import (
    LAW_CITATION_RE,
    UNVERIFIED_MARK,
    CitationCheck,
    bare_article_target,
    bare_citations,
    cited_article,
    verify_citations,
)
from helpers.statutes.labels import article_no, citation_label, key_label
from helpers.statutes.quantities import quantities
from helpers.statutes.quotes import excerpt, is_excerpt, normalise
from helpers.statutes.versions import version_mark

HEADER_RE = re.compile(rf"^[ \t#>*\-]*{SECTION_HEADER}[ \t*]*")
STATUTE_SECTION = "相关法条"
UNCHECKED_SECTIONS = ("免责声明",)  # the stock disclaimer states no facts
QUOTE_MISMATCH = "〔引文不符〕"
NO_BASIS = "〔未见依据〕"
EXCERPT_MARK = "（节选）"
QUOTE_MARKS = {"“": "”", "「": "」", "『": "』", '"': '"'}
QUOTE_LEAD_RE = re.compile(r"[ \t]*(?:中|的)?(?:明确)?(?:规定|指出|写明|载明)?[ \t]*([:：])?[ \t]*")
LIST_PREFIX_RE = re.compile(r"[ \t\-*•·>]*(?:\d+[.、)]|[（(][一二三四五六七八九十\d]+[）)])?[ \t]*")
SENTENCE_RE = re.compile(r"[^。！？!?\n]*[。！？!?]?")
SENTENCE_END_RE = re.compile(r"[。！？!?]+[”」』\"）)]*")
MIN_QUOTE = 4  # shorter "quotes" (a word after a colon) are not checked
MIN_OWNED_QUOTE = 10  # a quote at least this long, of exactly one other evidence article, is that article's text


def statute_text(text: str, evidence: list[Document]) -> str:
    """Text from the store: only the article citations inside it are checked (〔未核实〕 when not in ``evidence``);
    the laws it names are its own wording."""
    return verify_citations(text, evidence, model_wrote=False).text


def statute_entry(doc: Document, evidence: list[Document], hint: str = "") -> tuple[str, bool]:
    """``《法名》第X条：<text>`` for an article of the store (a long one as its marked excerpt for ``hint``; a version
    not in force today marked, e.g. 〔已失效〕), and whether it is an excerpt."""
    text, partial = excerpt(doc.content or "", hint=hint)
    label = citation_label(doc) + version_mark(doc.meta) + amendment_note(doc)
    return f"{label}{EXCERPT_MARK if partial else ''}：{statute_text(text, evidence)}", partial


def amendment_note(doc: Document) -> str:
    """``（经《…修正案（八）》条目三十九修改）`` for an article amended by separate instruments (meta ``amended_by``),
    naming those its text does not already name."""
    names = [key_label(key) for key in doc.meta.get("amended_by") or []]
    names = [name for name in names if name not in (doc.content or "")]
    return f"（经{'、'.join(names)}修改）" if names else ""


class AnswerChecker:
    """Checks one answer against its evidence (see the module docstring); one instance per answer."""

    def __init__(self, evidence: list[Document], query: str = "") -> None:
        self.evidence = evidence
        self.local = [d for d in evidence if not is_web(d)]
        self.query = query
        self.basis = {q.key for text in [query] + [d.content or "" for d in evidence] for q in quantities(text)}
        self.result = CheckedAnswer(text="")
        self._pending = ""  # the unfinished line
        self._section: str | None = None
        self._held: list[str] = []  # a header (and blank lines) waiting for its section's first text
        self._statutes: list[str] = []  # the lines of a 【相关法条】 section, rendered when it ends
        self._written = ""  # the model's text so far: a hint for which part of a long article matters
        self._at_line_start = True
        self._after_header = False

    # ---- driving -------------------------------------------------------------------------------------------

    def check(self, text: str, cut_off: bool = False) -> CheckedAnswer:
        """Check a whole answer (``cut_off``: the model stopped at its token limit, see `finish`)."""
        self.result.text = (self.feed(text) + self.finish(cut_off)).strip()
        return self.result

    def feed(self, chunk: str) -> str:
        """Take more of the answer; returns the checked text of the pieces it completed (`_next_cut`)."""
        self._pending += chunk
        out = []
        while (cut := self._next_cut()) is not None:
            piece, self._pending = self._pending[:cut], self._pending[cut:]
            out.append(self._piece(piece))
        return "".join(out)

    def finish(self, cut_off: bool = False) -> str:
        """The checked rest, at the end of the answer. ``cut_off``: the reply stopped at the token limit, so its
        unfinished last sentence is left out (recorded in ``CheckedAnswer.cut_off``), not shown as a fragment."""
        out = self.feed("")
        if cut_off and self._pending:
            ends = list(SENTENCE_END_RE.finditer(self._pending))
            keep = ends[-1].end() if ends else 0
            self.result.cut_off = self._pending[keep:].strip()
            self._pending = self._pending[:keep]
        if self._pending:
            out += self._piece(self._pending)
            self._pending = ""
        return out + self._close_section()

    def _next_cut(self) -> int | None:
        """Where the next piece of the pending text ends: a 【header】 on its own, else a sentence, or the line
        when a citation in it opens a quote, or each line in 【相关法条】 (rendered when the section ends);
        ``None`` while the piece is not complete yet."""
        text = self._pending
        header = HEADER_RE.match(text)
        if header:  # complete once something follows it (a trailing ** may still be arriving)
            return header.end() if header.end() < len(text) else None
        if text.lstrip(" \t#>*-").startswith("【") and "】" not in text and "\n" not in text:
            return None  # a header still arriving
        newline = text.find("\n")
        line_end = len(text) if newline < 0 else newline + 1
        next_header = text.find("【", 1, line_end)
        while next_header > 0 and not text[:next_header].strip(" \t#>*-"):
            next_header = text.find("【", next_header + 1, line_end)
        stop = next_header if next_header > 0 else line_end
        if newline < 0 and next_header <= 0:
            stop = -1  # the line goes on
        if self._section != STATUTE_SECTION:
            sentence = SENTENCE_END_RE.search(text, 0, stop if stop > 0 else len(text))
            if sentence and not self._quote_may_run_on(text, sentence.end()):
                return sentence.end()
        return stop if stop > 0 else None

    @staticmethod
    def _quote_may_run_on(text: str, end: int) -> bool:
        """Whether a citation before ``end`` introduces a quote (a colon or a quote mark follows it), which may
        run past this sentence: such a piece waits for its line to end."""
        for match in [m for m in LAW_CITATION_RE.finditer(text, 0, end) if m.group(2)] + bare_citations(text, end):
            lead = QUOTE_LEAD_RE.match(text, match.end())
            if lead and (lead.group(1) or text[lead.end():lead.end() + 1] in QUOTE_MARKS):
                return True
        return False

    def _piece(self, piece: str) -> str:
        at_line_start = self._at_line_start
        self._at_line_start = piece.endswith("\n")
        header = HEADER_RE.match(piece)
        if header:
            out = self._close_section()
            self._section = header.group(1).strip()
            self._held = [piece.rstrip(" \t") + ("\n" if self._section == STATUTE_SECTION and not
                                                   piece.endswith("\n") else "")]
            self._after_header = True
            return out
        if not piece.strip():
            if self._section == STATUTE_SECTION:
                return ""
            if self._held:
                self._held.append(piece)
                return ""
            return piece
        line_start, self._after_header = at_line_start or self._after_header, False
        return self._content(piece, line_start)

    def _content(self, text: str, line_start: bool) -> str:
        if self._section == STATUTE_SECTION:
            self._statutes.append(text)
            return ""
        checked = self._check_text(text, line_start)
        self._written += text
        if not checked.strip():
            return ""
        out = "".join(self._held) + checked
        self._held = []
        return out

    def _close_section(self) -> str:
        out = ""
        if self._section == STATUTE_SECTION and self._statutes:
            rendered = self._render("".join(self._statutes))
            self._statutes = []
            if rendered.strip():
                out = "".join(self._held) + rendered
                self._held = []
        if self._held and self._section:
            self.result.sections_dropped.append(self._section)
        self._held, self._section = [], None
        return out

    # ---- 【相关法条】 ----------------------------------------------------------------------------------------

    def _named_articles(self, section: str) -> list[tuple[re.Match[str], Document | None]]:
        """The articles a 【相关法条】 section names, in order: ``《法名》第X条``, and a bare ``第X条`` when exactly
        one law of the evidence has that article (a small model often leaves the law name out of a list)."""
        named = [(m, cited_article(m, self.local)) for m in LAW_CITATION_RE.finditer(section) if m.group(2)]
        named += [(m, docs[0]) for m, docs in self._bare_articles(section)
                  if len({d.meta.get("law") for d in docs}) == 1]
        return sorted(named, key=lambda pair: pair[0].start())

    def _bare_articles(self, text: str) -> list[tuple[re.Match[str], list[Document]]]:
        """Each bare ``第X条`` of ``text`` (`bare_citations`) with the evidence articles of that number."""
        found = []
        for match in bare_citations(text):
            try:
                number = article_no(match.group(1), match.group(2))
            except ValueError:
                continue
            found.append((match, [d for d in self.local if d.meta.get("article_no") == number]))
        return found

    def _render(self, section: str) -> str:
        """Each article the section names, with its exact text; a section naming none is checked as prose."""
        named = self._named_articles(section)
        if not named:
            return "".join(self._check_text(line, True) for line in section.splitlines(keepends=True))
        matches = [m for m, _ in named]
        lines, seen = [], set()
        for i, (match, doc) in enumerate(named):
            written = section[match.end():matches[i + 1].start() if i + 1 < len(matches) else len(section)]
            written = QUOTE_LEAD_RE.sub("", written, count=1).strip()
            first = SENTENCE_RE.match(written.lstrip("，,“「『\"")).group(0)  # the quote's head decides
            mismatch = len(normalise(first)) >= MIN_QUOTE and not (doc and is_excerpt(first, doc.content or ""))
            if mismatch and (owner := self._owner(first, doc)) is not None:
                self.result.quotes_relabelled.append(f"{match.group(0)} → {citation_label(owner)}")
                doc, mismatch = owner, False
            name = doc.id if doc is not None else match.group(0)
            if name in seen:
                continue
            seen.add(name)
            if doc is None:
                self.result.unverified.append(match.group(0))
                lines.append(match.group(0) + UNVERIFIED_MARK + "\n")
                continue
            if mismatch:
                self.result.quotes_replaced.append(f"{citation_label(doc)}：{written[:60]}")
            lines.append(self._statute_line(doc, hint=self.query + self._written + written))
        return "".join(lines)

    def _owner(self, quote: str, named: Document | None) -> Document | None:
        """The one evidence article, other than the one ``named``, whose text ``quote`` is (at least
        `MIN_OWNED_QUOTE` characters of it): the model quoted the right text under the wrong label."""
        if len(normalise(quote)) < MIN_OWNED_QUOTE:
            return None
        owners = [d for d in self.local if d is not named and is_excerpt(quote, d.content or "")]
        return owners[0] if len(owners) == 1 else None

    def _statute_line(self, doc: Document, hint: str) -> str:
        line, partial = statute_entry(doc, self.evidence, hint)
        self.result.excerpts += partial
        key = str(doc.meta.get("key") or citation_label(doc))
        if key not in self.result.rendered:
            self.result.rendered.append(key)
        self._record(doc, citation_label(doc))
        return line + "\n"

    # ---- quotes, citations and numbers in the model's prose --------------------------------------------------

    def _check_text(self, text: str, line_start: bool) -> str:
        """A piece of prose (``line_start``: it begins a line): its quotes checked, then the citations and numbers
        in what the model wrote."""
        pieces: list[tuple[str, bool]] = []  # (text, is it statute text)
        position = 0
        cited = self._cited(text)
        for i, (match, doc) in enumerate(cited):
            if match.start() < position:
                continue
            limit = cited[i + 1][0].start() if i + 1 < len(cited) else len(text.rstrip("\n"))
            span = self._quote_span(text, match, limit, doc, line_start)
            if span is None:
                continue
            start, end, close_end = span
            quote = text[start:end]
            if len(normalise(quote)) < MIN_QUOTE:
                continue
            self.result.quotes_checked += 1
            if not (doc and is_excerpt(quote, doc.content or "")) and (owner := self._owner(quote, doc)) is not None:
                # the right text under the wrong label: the label is corrected, the quote (and what follows that is
                # the same article's text) is kept as the store's text
                label = citation_label(owner) if match.group(0).startswith("《") else str(owner.meta["article_no"])
                self.result.quotes_relabelled.append(f"{match.group(0)} → {citation_label(owner)}")
                self._record(owner, label)
                start, end, close_end = self._quote_span(text, match, limit, owner, line_start) or span
                quote, doc = text[start:end], owner
                pieces.append((text[position:match.start()] + label, False))
                position = match.end()
            pieces.append((text[position:start], False))
            if doc is None:
                self.result.quotes_flagged.append(f"{match.group(0)}：{quote[:60]}")
                pieces += [(text[start:close_end], False), (QUOTE_MISMATCH, True)]
            elif is_excerpt(quote, doc.content or ""):
                pieces += [(quote, True), (text[end:close_end], False)]
            else:
                self.result.quotes_replaced.append(f"{citation_label(doc)}：{quote[:60]}")
                real, partial = excerpt(doc.content or "", hint=quote)
                self.result.excerpts += partial
                pieces += [(real, True), (text[end:close_end], False)]
            position = close_end
        pieces.append((text[position:], False))
        unchecked = self._section in UNCHECKED_SECTIONS
        return "".join(self._statute_text(piece) if statute else piece if unchecked else self._prose(piece)
                       for piece, statute in pieces)

    def _cited(self, text: str) -> list[tuple[re.Match[str], Document | None]]:
        """The article citations in ``text`` with the evidence article each names (``None``: not in the evidence):
        ``《法名》第X条``, and a bare ``第X条`` whose law is known (`bare_article_target`)."""
        cited = [(m, cited_article(m, self.local)) for m in LAW_CITATION_RE.finditer(text) if m.group(2)]
        targets = [(m, bare_article_target(m, text, self.local, self._written)) for m in bare_citations(text)]
        return sorted(cited + [(m, doc) for m, (checkable, doc) in targets if checkable], key=lambda p: p[0].start())

    def _quote_span(self, text: str, match: re.Match[str], limit: int, doc: Document | None,
                    line_start: bool) -> tuple[int, int, int] | None:
        """(start, end, end with the closing mark) of the quote attached to a citation, or ``None``.

        ``…第X条“…”`` quotes what is inside the marks. ``…第X条：…`` quotes the rest of the line when the citation
        starts the line (a list of articles), else the first sentence; a quote that is the article's text extends
        over the following sentences that are too (the rest is the model's own reasoning)."""
        lead = QUOTE_LEAD_RE.match(text, match.end())
        after = lead.end() if lead else match.end()
        if after < limit and text[after] in QUOTE_MARKS:
            close = text.find(QUOTE_MARKS[text[after]], after + 1, limit)
            return (after + 1, close, close + 1) if close > 0 else (after + 1, limit, limit)
        if not (lead and lead.group(1)) or after >= limit:
            return None
        sentences = [m.span() for m in SENTENCE_RE.finditer(text, after, limit) if m.end() > m.start()]
        if not sentences:
            return None
        first_end = sentences[0][1]
        article = doc.content or "" if doc is not None else ""
        if not (doc is not None and is_excerpt(text[after:first_end], article)):
            starts_line = line_start and LIST_PREFIX_RE.fullmatch(text, 0, match.start()) is not None
            end = limit if starts_line else first_end
            return after, end, end
        end = first_end
        for start, stop in sentences[1:]:
            if not is_excerpt(text[after:stop], article):
                break
            end = stop
        return after, end, end

    def _prose(self, text: str) -> str:
        """The model's own words: citations verified, quantities without a basis flagged."""
        check = verify_citations(text, self.evidence, context=self._written)
        self._merge(check)
        text = check.text
        spans: dict[tuple[int, int], bool] = {}
        for quantity in quantities(text):
            self.result.numbers_checked += 1
            grounded = quantity.key in self.basis
            spans[(quantity.start, quantity.end)] = spans.get((quantity.start, quantity.end), True) and grounded
            if not grounded:
                self.result.numbers_flagged.append(text[quantity.start:quantity.end])
        for (_, end), grounded in sorted(spans.items(), reverse=True):
            if not grounded:
                text = text[:end] + NO_BASIS + text[end:]
        return text

    def _statute_text(self, text: str) -> str:
        return statute_text(text, self.evidence)

    def _record(self, doc: Document, mention: str) -> None:
        if doc not in self.result.verified:
            self.result.verified.append(doc)
        found = self.result.mentions.setdefault(doc.id, [])
        if mention not in found:
            found.append(mention)

    def _merge(self, check: CitationCheck) -> None:
        for doc in check.verified:
            for mention in check.mentions.get(doc.id, []):
                self._record(doc, mention)
        self.result.unverified += check.unverified
