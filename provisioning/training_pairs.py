"""Labelled question–article pairs for training: loading and validation.

A pairs file has one JSON object per line, ``{"query": str, "gold": [article key, ...]}`` (other fields are
kept, e.g. STARD's ``qid``). Every problem is a one-line `TrainingDataError` and nothing is trained.

Usage::

    pairs = load_pairs("training_data/stard/stard_train_with_criminal.jsonl")
    check_gold(pairs, set(articles_by_key(store)))  # every gold key must be in the knowledge base
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from haystack import Document

    from document_store.knowledge_base_store import KnowledgeBaseStore

MIN_PAIRS = 50
DEFAULT_PAIRS = Path(__file__).resolve().parents[1] / "training_data" / "stard" / "stard_train_with_criminal.jsonl"


class TrainingDataError(ValueError):
    """The pairs cannot be trained on (the message says why, in one line)."""


@dataclass(frozen=True)
class Pair:
    query: str
    gold: tuple[str, ...]
    qid: str = ""


def jsonl_objects(path: Path, what: str) -> tuple[list[tuple[int, Any]], list[str]]:
    """The parsed non-blank lines of a JSON-lines file as (line number, value), and the lines that are not JSON;
    a one-line `TrainingDataError` when the file is missing or unreadable."""
    if not path.is_file():
        raise TrainingDataError(f"{what} not found: {path}")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as error:
        raise TrainingDataError(f"cannot read {path} as UTF-8 text: {error}") from error
    items, bad = [], []
    for number, line in enumerate(lines, start=1):
        if line.strip():
            try:
                items.append((number, json.loads(line)))
            except json.JSONDecodeError:
                bad.append(f"line {number}: not JSON")
    return items, bad


def load_pairs(path: str | Path) -> list[Pair]:
    """Read and check a pairs file; raises `TrainingDataError` on a missing, unreadable or malformed file."""
    path = Path(path)
    items, bad = jsonl_objects(path, "pairs file")
    pairs = []
    for number, item in items:
        query = item.get("query") if isinstance(item, dict) else None
        gold = item.get("gold") if isinstance(item, dict) else None
        if not isinstance(query, str) or not query.strip():
            bad.append(f"line {number}: no 'query' text")
        elif not isinstance(gold, list) or not gold or not all(isinstance(g, str) and g for g in gold):
            bad.append(f"line {number}: 'gold' must be a non-empty list of article keys")
        else:
            pairs.append(Pair(query.strip(), tuple(dict.fromkeys(gold)), str(item.get("qid", number))))
    if bad:
        raise TrainingDataError(f"{path}: {len(bad)} malformed line(s), e.g. {'; '.join(bad[:3])}")
    if len(pairs) < MIN_PAIRS:
        raise TrainingDataError(f"{path}: {len(pairs)} usable pairs; at least {MIN_PAIRS} are needed to train")
    return pairs


def check_gold(pairs: list[Pair], keys: set[str], collection: str = "the collection") -> None:
    """Every gold key must name an article of the collection the model is trained against."""
    missing = sorted({key for pair in pairs for key in pair.gold if key not in keys})
    if missing:
        raise TrainingDataError(f"{len(missing)} gold key(s) are not in {collection}, e.g. "
                                f"{', '.join(missing[:3])}; index those laws or fix the keys")


def pairs_digest(pairs: list[Pair]) -> str:
    text = "\n".join(f"{p.query}\t{','.join(p.gold)}" for p in pairs)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def articles_by_key(store: KnowledgeBaseStore) -> dict[str, Document]:
    """Every stored article by its ``meta.key`` (every version: older versions' keys carry their date), read in
    one pass (for training and studies that need the texts of given articles)."""
    return {str(doc.meta["key"]): doc for doc in store.filter_documents() if doc.meta.get("key")}
