"""StatuteSplitter: one Document per statute article, with law / chapter / section / article metadata.

Usage::

    from haystack import Document
    from components.preprocessors.statute_splitter import StatuteSplitter

    splitter = StatuteSplitter()
    text = "示例法\\n第一章 总则\\n第一条 为了……制定本法。\\n第一条之一 ……"
    docs = splitter.run(documents=[Document(content=text, meta={"law": "示例法", "source": "file:示例法.txt"})])
    print([d.meta["key"] for d in docs["documents"]])  # ['示例法第一条', '示例法第一条之一']
"""


import hashlib
import re
from dataclasses import dataclass, field

from haystack import Document, component, logging

from helpers.statutes.labels import article_key
from helpers.statutes.numerals import CN_NUMERAL_CHARS, cn_to_int

logger = logging.getLogger(__name__)

_NUM = rf"(?:[{CN_NUMERAL_CHARS}]+|[0-9]{{1,6}})"  # Chinese or Arabic, not mixed; no absurdly long numbers
ARTICLE_RE = re.compile(rf"^\s*(第({_NUM})条(?:之([{CN_NUMERAL_CHARS}]+))?)(?:[\s　:：、.．]+|(?=\S))(.*)$")
CHAPTER_RE = re.compile(rf"^\s*(第{_NUM}[编分]?章)(?:[\s　]+(.*))?$")
SECTION_RE = re.compile(rf"^\s*(第{_NUM}节)(?:[\s　]+(.*))?$")
SENTENCE_END_RE = re.compile(r"(?<=[。！？；!?;])")


def _article_number(match: re.Match[str]) -> tuple[int, int]:
    """(article, 之 suffix) of an article marker; (0, 0) — never a new article — when it is not a real number."""
    try:
        return cn_to_int(match.group(2)), cn_to_int(match.group(3)) if match.group(3) else 0
    except ValueError:
        return 0, 0


def document_id(source: str, key: str) -> str:
    """Stable id of an article: the same source and key always give the same id (idempotent re-index)."""
    return hashlib.sha256(f"{source}\x1f{key}".encode()).hexdigest()


def _heading(match: re.Match[str]) -> str:
    title = (match.group(2) or "").strip()
    return f"{match.group(1)} {title}".strip()


@dataclass
class _Article:
    article_no: str
    chapter: str | None
    section: str | None
    lines: list[str] = field(default_factory=list)


@component
class StatuteSplitter:
    """Splits statute texts by article (第…条, including 第X条之一) and other texts by paragraph.

    Input documents are whole texts with ``meta["law"]`` (the title; falls back to the first line) and
    ``meta["source"]``. A document whose meta already has ``article_no`` is an article (for example one row
    of the statute database) and only gets its ``key`` and stable ``id``; one of a version no longer in force
    (``in_force`` False, with its ``version_date``) is keyed ``law + article_no + "@" + version_date``. Every output
    document has meta
    ``law, chapter, section, article_no, key, source, status``.
    """

    def __init__(self, max_paragraph_chars: int = 600, default_status: str = "现行有效") -> None:
        """
        :param max_paragraph_chars: size cap of one chunk for texts that have no article numbering.
        :param default_status: ``status`` for texts that do not say theirs.
        """
        if max_paragraph_chars < 50:
            raise ValueError("max_paragraph_chars must be at least 50")
        self.max_paragraph_chars = max_paragraph_chars
        self.default_status = default_status

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Split every input document; articles keep the order in which they appear."""
        output: list[Document] = []
        for doc in documents:
            if doc.meta.get("article_no"):
                output.append(self._finish(doc.content or "", dict(doc.meta)))
            else:
                output.extend(self._split_text(doc))
        return {"documents": output}

    def _finish(self, content: str, meta: dict) -> Document:
        meta.setdefault("chapter", None)
        meta.setdefault("section", None)
        meta.setdefault("status", self.default_status)
        meta["source"] = meta.get("source") or f"law:{meta['law']}"
        older = meta.get("in_force") is False and meta.get("version_date")  # an older version: its own key
        meta["key"] = article_key(meta["law"], meta["article_no"], meta["version_date"] if older else None)
        return Document(id=document_id(meta["source"], meta["key"]), content=content.strip(), meta=meta)

    def _split_text(self, doc: Document) -> list[Document]:
        lines = [line.rstrip() for line in (doc.content or "").splitlines()]
        base = {k: v for k, v in doc.meta.items() if k not in {"chapter", "section", "article_no", "key"}}
        if not base.get("law"):
            first = next((line.strip().lstrip("#").strip() for line in lines if line.strip()), "")
            base["law"] = first[:60] or "未命名文档"
        articles = self._articles(lines)
        if not articles:
            return self._paragraphs(lines, base)
        return [
            self._finish("\n".join(a.lines), {**base, "chapter": a.chapter, "section": a.section,
                                               "article_no": a.article_no})
            for a in articles
            if "".join(a.lines).strip()
        ]

    @staticmethod
    def _articles(lines: list[str]) -> list[_Article]:
        """Group lines into articles; a marker only counts when its number does not go backwards."""
        articles: list[_Article] = []
        chapter: str | None = None
        section: str | None = None
        last_number = (0, 0)
        for line in lines:
            if (match := CHAPTER_RE.match(line)) and len(line.strip()) <= 40:
                chapter, section = _heading(match), None
                continue
            if (match := SECTION_RE.match(line)) and len(line.strip()) <= 40:
                section = _heading(match)
                continue
            match = ARTICLE_RE.match(line)
            if match and (number := _article_number(match)) > last_number:
                last_number = number
                articles.append(_Article(match.group(1).replace(" ", ""), chapter, section, [match.group(4)]))
                continue
            if articles:
                articles[-1].lines.append(line)
        return articles

    def _paragraphs(self, lines: list[str], base: dict) -> list[Document]:
        pieces: list[str] = []
        for paragraph in re.split(r"\n\s*\n", "\n".join(lines)):
            paragraph = paragraph.strip()
            while len(paragraph) > self.max_paragraph_chars:
                cut = self._cut_point(paragraph)
                pieces.append(paragraph[:cut].strip())
                paragraph = paragraph[cut:].strip()
            if paragraph:
                pieces.append(paragraph)
        chunks: list[str] = []
        for piece in pieces:
            if chunks and len(chunks[-1]) + len(piece) + 1 <= self.max_paragraph_chars:
                chunks[-1] = f"{chunks[-1]}\n{piece}"
            else:
                chunks.append(piece)
        return [
            self._finish(chunk, {**base, "chapter": None, "section": None, "article_no": f"第{i}段"})
            for i, chunk in enumerate(chunks, start=1)
        ]

    def _cut_point(self, text: str) -> int:
        """Last sentence end within the cap, or the cap itself when a sentence is longer than that."""
        ends = [m.start() for m in SENTENCE_END_RE.finditer(text[: self.max_paragraph_chars]) if m.start() > 0]
        return ends[-1] if ends else self.max_paragraph_chars
