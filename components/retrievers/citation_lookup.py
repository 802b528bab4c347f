"""CitationLookup: answers exact citations (“个人信息保护法第十三条”, “民法典1032条”, “第13条”) by metadata lookup.

Usage::

    from components.retrievers.citation_lookup import CitationLookup
    lookup = CitationLookup(document_store=store)
    rankings = lookup.run(queries=["民法典第1032条是怎么规定的"])["rankings"]
    rankings[0].documents[0].meta["key"]   # '中华人民共和国民法典第一千零三十二条'
    # [VersionGap(law='中华人民共和国商标法', ...)] if not held
    lookup.version_gaps("商标法第十条", as_of="2010-01-01")
"""

import re
from dataclasses import dataclass
from typing import Any

from haystack import Document, component, default_to_dict

from components.retrievers.store_search import SearchingComponent
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.knowledge_bases import from_dict_sharing_store
from helpers.records.ranking import Ranking
from helpers.statutes.labels import LAW_NAME_PREFIX, article_no
from helpers.statutes.numerals import CN_NUMERAL_CHARS
from helpers.statutes.versions import OPEN_END, parse_as_of, version_filter, with_versions

_NUM = rf"(\d+|[{CN_NUMERAL_CHARS}]+)"
CITATION_RE = re.compile(
    rf"(?:《?([\u4e00-\u9fff（）()]{{1,40}}?(?:法典|法|条例|规定|决定|解释))》?)?\s*第?\s*{_NUM}\s*条(?:\s*之\s*([{CN_NUMERAL_CHARS}]+))?"
)


@dataclass(frozen=True)
class VersionGap:
    """A law a query names that the knowledge base holds, but in no version in force on ``as_of``: a search on that
    day finds none of its articles. Dates are ``YYYYMMDD`` integers; ``held_from`` is the earliest day a held
    version took effect, ``held_to`` the latest day one stopped applying (`OPEN_END`: one is still in force)."""

    law: str
    as_of: int
    held_from: int
    held_to: int


def names_in(query: str, laws: list[str]) -> list[str]:
    """The laws of ``laws`` that ``query`` names, by full name or without the 中华人民共和国 prefix, in the order
    named; where names overlap (保险法 inside 社会保险法) only the longest counts."""
    candidates = sorted(((name, law) for law in laws for name in {law, law.removeprefix(LAW_NAME_PREFIX)}),
                        key=lambda candidate: -len(candidate[0]))
    taken = [False] * len(query)
    first: dict[str, int] = {}
    for name, law in candidates:
        start = query.find(name)
        while start != -1:
            end = start + len(name)
            if not any(taken[start:end]):
                taken[start:end] = [True] * len(name)
                first[law] = min(first.get(law, start), start)
            start = query.find(name, start + 1)
    return sorted(first, key=first.__getitem__)


@component
class CitationLookup(SearchingComponent):
    """Finds the articles a query cites explicitly; a citation without a law name resolves only when the
    knowledge base (or the ``law`` filter) leaves a single law.

    :param document_store: the store written by the indexing pipeline (searched by a payload filter on
        ``meta.key``).
    """

    def __init__(self, document_store: KnowledgeBaseStore) -> None:
        self._bind_search(document_store)

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(self, document_store=self.document_store.to_dict())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "CitationLookup":
        return from_dict_sharing_store(cls, data)

    def _resolve_law(self, mention: str | None, laws: list[str], filters: dict[str, Any] | None) -> str | None:
        if mention:
            # The regex may swallow leading words ("根据个人信息保护法"): try ever shorter suffixes.
            for start in range(len(mention)):
                name = mention[start:]
                for candidate in (name, LAW_NAME_PREFIX + name):
                    if candidate in laws:
                        return candidate
            return None
        if filters and filters.get("field") == "meta.law" and filters.get("operator") == "==":
            return str(filters["value"])
        return laws[0] if len(laws) == 1 else None

    def _citations(self, query: str, laws: list[str],
                   filters: dict[str, Any] | None) -> list[tuple[str, re.Match[str]]]:
        """Each citation of ``query`` whose law resolves, with that law."""
        cited: list[tuple[str, re.Match[str]]] = []
        previous: str | None = None  # “民法典第5条和第6条”: the second citation inherits the law
        for match in CITATION_RE.finditer(query):
            law = self._resolve_law(match.group(1), laws, filters) if match.group(1) or not previous else previous
            previous = law or previous
            if law is not None:
                cited.append((law, match))
        return cited

    def find(self, query: str, filters: dict[str, Any] | None = None, as_of: str | None = None) -> list[Document]:
        """The cited articles present in the knowledge base (and allowed by ``filters``), in the order they are
        cited: an explicitly cited article outside the filter is not evidence either. Each is the version in
        force (on ``as_of``, ``YYYY-MM-DD``, when given)."""
        keys: list[str] = []
        for law, match in self._citations(query, self._search.laws(), filters):
            try:
                keys.append(law + article_no(match.group(2), match.group(3)))
            except ValueError:
                continue
        return self._search.articles(keys, with_versions(filters, as_of)) if keys else []

    def _laws_named(self, query: str, filters: dict[str, Any] | None) -> list[str]:
        """The laws of the knowledge base ``query`` names, or cites without a name (“第十条” resolved as `find`
        resolves it), in the order named."""
        laws = self._search.laws()
        return list(dict.fromkeys([*names_in(query, laws), *(law for law, _ in self._citations(query, laws, filters))]))

    def version_gaps(self, query: str, as_of: str | None, filters: dict[str, Any] | None = None) -> list[VersionGap]:
        """The laws ``query`` names that the knowledge base holds in no version in force on ``as_of``
        (``YYYY-MM-DD``; none without it). Payload queries on ``meta.law`` only: one per named law, two facets more
        for each one missing; nothing is scanned."""
        day = parse_as_of(as_of)
        if day is None:
            return []
        gaps = []
        for law in self._laws_named(query, filters):
            of_law = {"field": "meta.law", "operator": "==", "value": law}
            if self._search.holds({"operator": "AND", "conditions": [of_law, version_filter(as_of)]}):
                continue
            starts = [int(value) for value in self._search.values("meta.valid_from", of_law)]
            ends = [int(value) for value in self._search.values("meta.valid_to", of_law)]
            gaps.append(VersionGap(law, day, min(starts, default=0), max(ends, default=OPEN_END)))
        return gaps

    @component.output_types(rankings=list[Ranking], documents=list[Document])
    def run(self, queries: list[str], filters: dict[str, Any] | None = None,
            as_of: str | None = None) -> dict[str, Any]:
        """:returns: one ``citation`` ranking per query (empty when it cites nothing) and the first one's docs."""
        rankings = [Ranking("citation", q, self.find(q, filters, as_of)) for q in queries]
        return {"rankings": rankings, "documents": rankings[0].documents if rankings else []}
