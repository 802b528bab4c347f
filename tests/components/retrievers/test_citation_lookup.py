"""CitationLookup on the two-law fixture store: the run's rankings, citation forms and how a citation's law is
resolved, and a law held only in versions that ended before ``as_of``. The basic citation forms, filters, a version
gap before a law took effect, `names_in` and serialisation are in test_retrieval_paths.py."""

import pytest

from components.retrievers.citation_lookup import CitationLookup, VersionGap, names_in
from helpers.statutes.versions import OPEN_END

LAW_A = "示例信息保护法"
LAW_B = "示例交通法"


def keys(docs) -> list[str]:
    return [d.meta["key"] for d in docs]


def test_run_gives_one_citation_ranking_per_query_and_the_first_ones_documents(fixture_store) -> None:
    out = CitationLookup(document_store=fixture_store).run(queries=["示例交通法第二条", "机动车能停哪里"])
    first, second = out["rankings"]
    assert (first.path, first.query, keys(first.documents)) == ("citation", "示例交通法第二条", [f"{LAW_B}第二条"])
    assert (second.path, second.query, second.documents) == ("citation", "机动车能停哪里", [])
    assert out["documents"] == first.documents
    assert CitationLookup(document_store=fixture_store).run(queries=[]) == {"rankings": [], "documents": []}


def test_articles_come_in_the_order_cited_once_each_across_laws(fixture_store) -> None:
    lookup = CitationLookup(document_store=fixture_store)
    assert keys(lookup.find("示例交通法第二条和示例信息保护法第一条，再看示例交通法第二条")) == [
        f"{LAW_B}第二条", f"{LAW_A}第一条"]
    assert keys(lookup.find("示例信息保护法第三条、第1条")) == [f"{LAW_A}第三条", f"{LAW_A}第一条"]


def test_citation_forms(fixture_store) -> None:
    lookup = CitationLookup(document_store=fixture_store)
    for query, expected in [
        ("示例交通法 第 2 条", [f"{LAW_B}第二条"]),  # spaces around the number
        ("《示例交通法》第二条", [f"{LAW_B}第二条"]),
        ("中华人民共和国示例交通法第一条", [f"{LAW_B}第一条"]),  # a prefix the stored name lacks is dropped
        ("示例信息保护法第十三条 之 一", [f"{LAW_A}第十三条之一"]),
        ("示例交通法第九条", []),  # an article the law lacks
        ("示例交通法第0条和第1条", [f"{LAW_B}第一条"]),  # 第0条 is no article: skipped, not fatal
        ("示例交通法第100000条", []),  # nor is one past 99999
    ]:
        assert keys(lookup.find(query)) == expected, query


def test_a_law_whose_articles_were_deleted_no_longer_counts(fixture_store) -> None:
    """Once 示例交通法's articles are gone (a source re-indexed under another title leaves the same state), a bare
    “第二条” is no longer ambiguous, and a question naming 示例交通法 gets no “held in no version” gap: it is not
    held at all."""
    lookup = CitationLookup(document_store=fixture_store)
    assert keys(lookup.find("第二条")) == []  # two laws: ambiguous
    fixture_store.delete_by_filter({"field": "meta.law", "operator": "==", "value": LAW_B})
    assert keys(lookup.find("第二条")) == [f"{LAW_A}第二条"]
    assert lookup.version_gaps("示例交通法第一条", "2020-01-01") == []


def test_a_law_held_only_in_versions_that_ended_is_a_gap_after_their_end(fixture_store) -> None:
    for ids, batch in fixture_store.scroll_sources({"file:a.md"}):
        fixture_store.set_metas([(point_id, {**doc.meta, "in_force": False, "valid_from": 20100101,
                                             "valid_to": 20201231})
                                 for point_id, doc in zip(ids, batch, strict=True)])
    lookup = CitationLookup(document_store=fixture_store)
    cited = "示例信息保护法第二条"
    assert lookup.version_gaps(cited, "2022-01-01") == [VersionGap(LAW_A, 20220101, 20100101, 20201231)]
    assert lookup.version_gaps(cited, "2020-12-31") == [VersionGap(LAW_A, 20201231, 20100101, 20201231)]
    assert lookup.version_gaps("示例信息保护法第二条", "2015-06-01") == []
    assert keys(lookup.find("示例信息保护法第二条", as_of="2015-06-01")) == [f"{LAW_A}第二条"]
    assert keys(lookup.find("示例信息保护法第二条")) == []  # none in force today


def test_a_gap_for_a_law_with_no_dates_is_never_reported(fixture_store) -> None:
    """Articles without version dates apply on every day."""
    assert CitationLookup(document_store=fixture_store).version_gaps("示例交通法第一条", "1990-01-01") == []


def test_a_malformed_as_of_is_refused(fixture_store) -> None:
    with pytest.raises(ValueError, match="as_of must be a date written YYYY-MM-DD"):
        CitationLookup(document_store=fixture_store).version_gaps("示例交通法第一条", "2020-13-01")


def test_names_in_reads_each_law_once_at_its_first_mention() -> None:
    laws = ["中华人民共和国民法典", "中华人民共和国刑法"]
    assert names_in("刑法和民法典，还有刑法", laws) == ["中华人民共和国刑法", "中华人民共和国民法典"]
    assert names_in("没有提到法律名称", laws) == []
    assert names_in("刑", laws) == []


def test_open_end_is_the_held_to_of_a_law_still_in_force(fixture_store) -> None:
    for ids, batch in fixture_store.scroll_sources({"file:b.md"}):
        fixture_store.set_metas([(point_id, {**doc.meta, "in_force": True, "valid_from": 20200101,
                                             "valid_to": OPEN_END})
                                 for point_id, doc in zip(ids, batch, strict=True)])
    gap, = CitationLookup(document_store=fixture_store).version_gaps("示例交通法", "2019-01-01")
    assert gap == VersionGap(LAW_B, 20190101, 20200101, OPEN_END)
