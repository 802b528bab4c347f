"""`components.retrievers.store_search` on the two-law fixture store (Qdrant Edge): the searches and facets of
`StoreSearch`, the law names it keeps fresh (`LawNames`), an article read by key in the version asked for
(`held_articles`) and an amendment shown as the article it amends (`shown_as_amended`). BM25 scores on both
engines are in test_retrieval_paths.py."""

from dataclasses import replace
from typing import Any

import pytest
from haystack import Document

from components.retrievers import store_search
from components.retrievers.store_search import LawNames, StoreSearch, held_articles, shown_as_amended
from helpers.statutes.versions import version_filter

LAW_A = "示例信息保护法"
LAW_B = "示例交通法"
ONLY_B = {"field": "meta.law", "operator": "==", "value": LAW_B}


def keys(docs: list[Document]) -> list[str]:
    return [d.meta["key"] for d in docs]


def rewrite_meta(store: Any, article: str, **changes: Any) -> None:
    """Change the meta of the stored article ``article`` (a key) in place (text and vectors kept)."""
    for ids, batch in store.scroll_sources({"file:a.md", "file:b.md"}):
        store.set_metas([(point_id, {**doc.meta, **changes}) for point_id, doc in zip(ids, batch, strict=True)
                         if doc.meta["key"] == article])


def stored(store: Any, key: str, score: float) -> Document:
    doc, = store.filter_documents({"field": "meta.key", "operator": "==", "value": key})
    return replace(doc, score=score)


# --- StoreSearch ---------------------------------------------------------------------------------------------------


def test_bm25_without_terms_searches_nothing(fixture_store) -> None:
    search = StoreSearch(fixture_store)
    assert search.bm25([], top_k=5) == []
    assert keys(search.bm25(["停放"], top_k=5)) == [f"{LAW_B}第一条"]


def test_holds_and_values_answer_by_payload(fixture_store) -> None:
    search = StoreSearch(fixture_store)
    assert search.holds(ONLY_B)
    assert not search.holds({"field": "meta.law", "operator": "==", "value": "不存在的法"})
    assert sorted(search.values("meta.article_no", ONLY_B)) == ["第一条", "第二条"]
    assert search.values("meta.article_no", {"field": "meta.law", "operator": "==", "value": "不存在的法"}) == []


def test_the_law_names_are_sorted_and_read_again_after_a_write(fixture_store) -> None:
    search = StoreSearch(fixture_store)
    assert search.laws() == [LAW_B, LAW_A]  # sorted by code point: 交 before 信
    rewrite_meta(fixture_store, f"{LAW_B}第一条", law="示例道路法")
    assert "示例道路法" in search.laws()


def test_a_law_left_with_no_articles_is_no_longer_named(fixture_store) -> None:
    search = StoreSearch(fixture_store)
    fixture_store.delete_by_filter(ONLY_B)
    assert search.laws() == [LAW_A]


# --- LawNames ------------------------------------------------------------------------------------------------------


class Facet:
    """A facet that counts its reads and answers what ``names`` holds at the time."""

    def __init__(self, names: list[str]) -> None:
        self.names, self.reads = names, 0

    def __call__(self) -> list[str]:
        self.reads += 1
        return list(self.names)


def test_law_names_are_read_once_until_the_write_count_moves() -> None:
    facet, written = Facet(["乙法", "甲法"]), [3]
    names = LawNames(facet, lambda: written[0])
    assert names.names() == ["乙法", "甲法"] and names.names() == ["乙法", "甲法"]
    assert facet.reads == 1
    facet.names.append("丙法")
    written[0] += 1
    assert names.names() == ["丙法", "乙法", "甲法"] and facet.reads == 2


def test_without_a_write_count_law_names_are_read_again_after_the_recheck_interval(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that other processes write to gives no write count: the names may be a few seconds stale."""
    facet = Facet(["甲法"])
    names = LawNames(facet, lambda: None)
    names.names()
    facet.names.append("乙法")
    assert names.names() == ["甲法"] and facet.reads == 1  # within the interval
    monkeypatch.setattr(store_search, "LAWS_RECHECK_SECONDS", 0.0)
    assert names.names() == ["乙法", "甲法"] and facet.reads == 2


# --- held_articles -------------------------------------------------------------------------------------------------


def test_articles_by_key_in_the_order_asked_once_each_with_no_score(fixture_store) -> None:
    search = StoreSearch(fixture_store)
    found = search.articles([f"{LAW_B}第二条", f"{LAW_A}第一条", "不存在的法第一条", f"{LAW_B}第二条"])
    assert keys(found) == [f"{LAW_B}第二条", f"{LAW_A}第一条"]
    assert all(d.score is None for d in found)
    assert search.articles([f"{LAW_B}第二条", f"{LAW_A}第一条"], ONLY_B) == found[:1]


def test_an_article_held_in_two_versions_is_read_in_the_one_the_filter_allows(fixture_store) -> None:
    """The older version's key carries its date; it is found by law and article number."""
    rewrite_meta(fixture_store, f"{LAW_B}第一条", valid_from=20200101)
    rewrite_meta(fixture_store, f"{LAW_B}第二条", key=f"{LAW_B}第一条@20150101", article_no="第一条", in_force=False,
                 valid_from=20150101, valid_to=20200101)
    search = StoreSearch(fixture_store)
    current, = search.articles([f"{LAW_B}第一条"])
    assert current.meta["key"] == f"{LAW_B}第一条"
    older, = search.articles([f"{LAW_B}第一条"], version_filter("2016-06-01"))
    assert older.meta["key"] == f"{LAW_B}第一条@20150101" and older.content == "驾驶人应当遵守交通信号。"
    assert search.articles([f"{LAW_B}第一条"], version_filter("2010-01-01")) == []


def test_the_in_force_version_wins_whatever_order_the_engine_returns() -> None:
    current = Document(content="现行", meta={"key": "示例法第一条"})
    older = Document(content="旧版", meta={"key": "示例法第一条@20150101"})
    for answer in ([older, current], [current, older]):
        found = held_articles(["示例法第一条"], None, lambda condition, limit, answer=answer: answer)
        assert [d.content for d in found] == ["现行"]


def test_held_articles_asks_once_for_every_version_within_the_filters() -> None:
    asked: list[tuple[dict, int]] = []

    def matching(condition: dict, limit: int) -> list[Document]:
        asked.append((condition, limit))
        return []

    assert held_articles([], None, matching) == [] and asked == []  # no keys: no read
    held_articles(["示例法第一条", "示例法第二条", "示例法第一条"], ONLY_B, matching)
    (condition, limit), = asked
    assert limit == store_search.MAX_VERSIONS * 2  # room for every version of each distinct key
    assert condition["operator"] == "AND" and ONLY_B in condition["conditions"]  # within the run's filters


# --- shown_as_amended ----------------------------------------------------------------------------------------------


def test_an_amendment_found_stands_as_the_article_it_amends_in_its_place_and_with_its_score(fixture_store) -> None:
    rewrite_meta(fixture_store, f"{LAW_B}第二条", amends=[f"{LAW_A}第一条"])
    search = StoreSearch(fixture_store)
    found = [stored(fixture_store, f"{LAW_B}第一条", 0.9), stored(fixture_store, f"{LAW_B}第二条", 0.8)]
    shown = shown_as_amended(search, found, None)
    assert keys(shown) == [f"{LAW_B}第一条", f"{LAW_A}第一条"]
    assert shown[1].score == 0.8 and shown[1].meta["found_via"] == f"{LAW_B}第二条"
    assert shown[1].content == "为了保护个人信息权益，制定本法。"
    assert shown[0] is found[0]


def test_an_amended_article_found_twice_keeps_its_first_place(fixture_store) -> None:
    rewrite_meta(fixture_store, f"{LAW_B}第二条", amends=[f"{LAW_A}第一条"])
    search = StoreSearch(fixture_store)
    found = [stored(fixture_store, f"{LAW_B}第二条", 0.9), stored(fixture_store, f"{LAW_A}第一条", 0.5)]
    shown = shown_as_amended(search, found, None)
    assert keys(shown) == [f"{LAW_A}第一条"] and shown[0].score == 0.9


def test_an_amendment_whose_article_is_not_held_or_filtered_out_stays_as_it_is(fixture_store) -> None:
    rewrite_meta(fixture_store, f"{LAW_B}第二条", amends=["不存在的法第一条"])
    rewrite_meta(fixture_store, f"{LAW_B}第一条", amends=[f"{LAW_A}第一条"])
    search = StoreSearch(fixture_store)
    found = [stored(fixture_store, f"{LAW_B}第一条", 0.9), stored(fixture_store, f"{LAW_B}第二条", 0.8)]
    assert keys(shown_as_amended(search, found, ONLY_B)) == [f"{LAW_B}第一条", f"{LAW_B}第二条"]


def test_a_ranking_without_amendments_is_returned_as_it_is(fixture_store) -> None:
    found = [stored(fixture_store, f"{LAW_B}第一条", 0.9)]
    assert shown_as_amended(StoreSearch(fixture_store), found, None) is found
