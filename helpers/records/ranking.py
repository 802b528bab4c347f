"""`Ranking`: one ranked result list of one retrieval path for one query (what RRF fuses).

Usage::

    Ranking(path="bm25", query="个人信息 同意", documents=[doc1, doc2])
"""

from __future__ import annotations

from dataclasses import dataclass, field

from haystack import Document


@dataclass
class Ranking:
    """Documents in rank order (rank 1 first) as returned by ``path`` for ``query``."""

    path: str
    query: str
    documents: list[Document] = field(default_factory=list)
