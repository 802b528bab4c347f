"""Citation extraction and verification: every 《法名》第X条 / [网页n] in an answer must point at given evidence;
one that points at a statute version no longer in force is marked (`helpers.statutes.versions.version_mark`).

Usage::

    from helpers.statutes.citations import verify_citations
    checked = verify_citations("依据《个人信息保护法》第十三条……", evidence)
    checked.verified, checked.unverified, checked.text
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from haystack import Document

from helpers.records.contracts import is_web
from helpers.statutes.labels import LAW_NAME_PREFIX, article_no
from helpers.statutes.numerals import CN_NUMERAL_CHARS
from helpers.statutes.versions import version_mark

LAW_CITATION_RE = re.compile(
    rf"《([^》]{{1,40}})》\s*(?:第\s*([{CN_NUMERAL_CHARS}\d]+)\s*条(?:\s*之\s*([{CN_NUMERAL_CHARS}]+))?)?"
)
WEB_CITATION_RE = re.compile(r"\[网页(\d+)\]")
BARE_ARTICLE_RE = re.compile(rf"第\s*([{CN_NUMERAL_CHARS}\d]+)\s*条(?:\s*之\s*([{CN_NUMERAL_CHARS}]+))?")
LAW_NAME_ENDINGS = ("法", "法典", "条例", "规定", "决定", "解释", "办法", "细则", "》")
UNVERIFIED_MARK = "〔未核实〕"
NOT_ARTICLES_AFTER = ("建议", "意见", "理由", "途径", "路径", "思路", "办法", "措施", "经验")  # 第一条建议: a count


@dataclass
class CitationCheck:
    text: str
    verified: list[Document] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    mentions: dict[str, list[str]] = field(default_factory=dict)  # document id → the strings in text citing it


def _same_law(cited: str, law: str) -> bool:
    cited = cited.strip().removeprefix(LAW_NAME_PREFIX)
    return bool(cited) and law.removeprefix(LAW_NAME_PREFIX) == cited


def _article(number: str, suffix: str | None) -> str | None:
    try:
        return article_no(number, suffix)
    except ValueError:
        return None


def cited_article(match: re.Match[str], local: list[Document]) -> Document | None:
    """The evidence article a `LAW_CITATION_RE` match with an article number names, or ``None``."""
    law, number, suffix = match.group(1), match.group(2), match.group(3)
    article = _article(number, suffix) if number else None
    return next((d for d in local if article and d.meta.get("article_no") == article
                 and _same_law(law, str(d.meta.get("law", "")))), None)


def law_in_context(text: str, position: int, context: str = "") -> str | None:
    """The law a bare ``第X条`` at ``position`` of ``text`` refers to by context: the last one named in 《》 before
    it, in ``text`` or else in ``context`` (what the answer said before ``text``)."""
    for source in (text[:position], context):
        named = [m.group(1) for m in LAW_CITATION_RE.finditer(source)]
        if named:
            return named[-1]
    return None


def bare_article_target(match: re.Match[str], text: str, local: list[Document],
                        context: str = "") -> tuple[bool, Document | None]:
    """What a bare ``第X条`` (a `bare_citations` match in ``text``) cites: (whether it could be checked, the evidence
    article). Its law is the one named before it (`law_in_context`), else the only law of the evidence; the
    article must be that law's in ``local`` (``None``: unverified). With no law to go by, it is unverified when no
    evidence article has that number, whatever the law, and not checkable otherwise (it could be another law's)."""
    number = _article(match.group(1), match.group(2))
    if number is None:
        return False, None
    law = law_in_context(text, match.start(), context)
    laws = {str(d.meta.get("law", "")) for d in local}
    if law is None and len(laws) == 1:
        law = next(iter(laws))
    if law is not None:
        return True, next((d for d in local if d.meta.get("article_no") == number
                           and _same_law(law, str(d.meta.get("law", "")))), None)
    return not any(d.meta.get("article_no") == number for d in local), None


def verify_citations(text: str, evidence: list[Document], model_wrote: bool = True,
                     context: str = "") -> CitationCheck:
    """Mark citations that point at nothing in ``evidence``; collect the evidence that is cited.

    In what the model wrote, a bare ``第X条`` is checked against the law it refers to (`bare_article_target`;
    ``context`` is the answer's text before ``text``). ``model_wrote=False`` is for the store's own text: there
    "依照《中华人民共和国行政诉讼法》提起诉讼" and "依照第十条" are the statute's wording, not claims about the
    evidence (about 2% of all articles name another law like this), so a law named without an article and a bare
    article are left unflagged; an article it cites (《…》第X条) is still checked."""
    local = [d for d in evidence if not is_web(d)]
    web = [d for d in evidence if is_web(d)]
    check = CitationCheck(text=text)

    def resolve(match: re.Match[str], doc: Document | None, named_law_only: bool = False) -> str:
        """Keep a citation that points at evidence (recording it), flag one that does not."""
        if doc is None and not named_law_only:
            check.unverified.append(match.group(0))
            return match.group(0) + UNVERIFIED_MARK
        if doc is not None:
            if doc not in check.verified:
                check.verified.append(doc)
            found = check.mentions.setdefault(doc.id, [])
            if match.group(0) not in found:
                found.append(match.group(0))
            return match.group(0) + version_mark(doc.meta)  # a version not in force today says so
        return match.group(0)

    def law_citation(match: re.Match[str]) -> str:
        if match.group(2) is None:  # a law named without an article: fine if any evidence is from that law
            same_law = any(_same_law(match.group(1), str(d.meta.get("law", ""))) for d in local)
            return resolve(match, None, named_law_only=same_law or not model_wrote)
        return resolve(match, cited_article(match, local))

    def web_citation(match: re.Match[str]) -> str:
        return resolve(match, next((d for d in web if d.meta.get("evidence_label") == f"网页{match.group(1)}"), None))

    def bare_citation(match: re.Match[str], text: str) -> str:
        checkable, doc = bare_article_target(match, text, local, context)
        return resolve(match, doc) if checkable else match.group(0)

    text = LAW_CITATION_RE.sub(law_citation, text)
    if model_wrote:
        pieces, position = [], 0
        for match in bare_citations(text):
            pieces += [text[position:match.start()], bare_citation(match, text)]
            position = match.end()
        text = "".join(pieces) + text[position:]
    check.text = WEB_CITATION_RE.sub(web_citation, text)
    return check


def bare_citations(text: str, end: int | None = None) -> list[re.Match[str]]:
    """``第X条`` citations without a law name: not part of a ``《法名》第X条``, nor right after an unbracketed law
    name (“民法典第五条”), which could be any law, nor a count of something else (“第一条建议”), nor one already
    marked."""
    named = [m.span() for m in LAW_CITATION_RE.finditer(text, 0, len(text) if end is None else end)]
    return [m for m in BARE_ARTICLE_RE.finditer(text, 0, len(text) if end is None else end)
            if not any(start <= m.start() < stop for start, stop in named)
            and not text[:m.start()].rstrip().endswith(LAW_NAME_ENDINGS)
            and not text.startswith(NOT_ARTICLES_AFTER, m.end()) and not text.startswith(UNVERIFIED_MARK, m.end())]
