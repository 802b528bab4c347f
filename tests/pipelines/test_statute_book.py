"""The statute book as it stands on a date: the 刑法 on every retrieval path, amendments shown as the article they
amend, ``as_of`` on every path, superseded versions marked in answers, and an older store migrated in place."""

from dataclasses import replace

import pytest
from haystack import Document

from components.builders.answer_finalizer import citation_of
from components.retrievers.citation_lookup import CitationLookup
from components.retrievers.dense_retriever import DenseRetriever
from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from config.settings import Settings
from document_store.source_manifest import SourceManifest
from helpers.checks.answer_check import AnswerChecker
from helpers.statutes.versions import with_versions
from pipelines.embedders import text_embedder
from pipelines.indexing import Indexer, law_sources
from pipelines.stores import open_document_store

CRIMINAL = "中华人民共和国刑法"
TRADEMARK = "中华人民共和国商标法"
LAWS = ["刑法", "刑法修正案（八）", "刑法修正案（十二）", "商标法"]


@pytest.fixture(scope="module")
def settings(tmp_path_factory, e5_model):
    return Settings(qdrant_path=tmp_path_factory.mktemp("versions") / "qdrant", embedding_model=str(e5_model))


@pytest.fixture(scope="module")
def store(settings):
    """The 刑法 with two of its amendments, and both versions of the 商标法 (its 2019 text as an older version)."""
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources(LAWS, versions=True), progress=False)
    yield store
    store.close()


def keys(documents: list[Document]) -> list[str]:
    return [d.meta["key"] for d in documents]


@pytest.fixture(scope="module")
def retrievers(store, settings):
    found = {"citation": CitationLookup(document_store=store), "bm25": JiebaBM25Retriever(document_store=store),
             "dense": DenseRetriever(document_store=store, embedder=text_embedder(settings))}
    for retriever in found.values():
        retriever.warm_up()
    return found


def test_the_versions_are_indexed_under_their_own_keys(store):
    stored = {d.meta["key"]: d for d in store.filter_documents()}
    assert f"{CRIMINAL}第二百六十四条" in stored and f"{CRIMINAL}第一百三十三条之一" in stored
    old = [k for k in stored if k.startswith(TRADEMARK) and "@" in k]
    assert old and all(stored[k].meta["in_force"] is False for k in old)
    assert stored[f"{CRIMINAL}第一百六十五条@2020-12-26"].meta["valid_to"] == 20240301


def test_the_citation_lookup_resolves_criminal_law_articles(retrievers):
    found = retrievers["citation"].run(queries=["刑法第二百六十四条和刑法第一百三十三条之一怎么规定的"])["documents"]
    assert keys(found) == [f"{CRIMINAL}第二百六十四条", f"{CRIMINAL}第一百三十三条之一"]


@pytest.mark.parametrize("path", ["bm25", "dense"])
def test_an_amendment_found_by_search_stands_as_the_article_it_amends(retrievers, path):
    query = "在道路上醉酒驾驶机动车的，处拘役，并处罚金" if path == "bm25" else "醉酒驾驶机动车会被判刑吗"
    found = retrievers[path].run(queries=[query], top_k=10)["documents"]
    assert f"{CRIMINAL}第一百三十三条之一" in keys(found)
    assert not [d for d in found if set(d.meta.get("amends") or []) & set(keys(found))]  # never both
    assert len(keys(found)) == len(set(keys(found)))
    article = next(d for d in found if d.meta["key"] == f"{CRIMINAL}第一百三十三条之一")
    assert "中华人民共和国刑法修正案（八）条目二十二" in article.meta["amended_by"]


@pytest.mark.parametrize("path", ["citation", "bm25", "dense"])
def test_as_of_returns_the_version_in_force_that_day_on_every_path(retrievers, path):
    query = "商标法第十条" if path == "citation" else "下列标志不得作为商标使用"
    today = retrievers[path].run(queries=[query])["documents"]
    then = retrievers[path].run(queries=[query], as_of="2020-01-01")["documents"]
    assert today and then
    assert all("@" not in k for k in keys(today))
    assert all(d.meta["valid_from"] <= 20200101 < d.meta["valid_to"] for d in then)
    assert any(k.startswith(TRADEMARK) and k.endswith("@2019-04-23") for k in keys(then))
    if path == "citation":
        assert keys(then) == [f"{TRADEMARK}第十条@2019-04-23"]


def test_as_of_before_a_later_amendment_gives_the_text_it_replaced(retrievers):
    lookup = retrievers["citation"]
    now, = lookup.run(queries=["刑法第一百六十五条"])["documents"]
    before, = lookup.run(queries=["刑法第一百六十五条"], as_of="2022-06-01")["documents"]
    assert "修正案（十二）" in now.content and before.meta["key"].endswith("@2020-12-26")
    assert "修正案（十二）" not in before.content


@pytest.mark.parametrize("path", ["citation", "bm25", "dense"])
def test_a_malformed_as_of_is_refused_with_one_line(retrievers, path):
    with pytest.raises(ValueError, match="as_of must be a date written YYYY-MM-DD") as error:
        retrievers[path].run(queries=["商标法第十条"], as_of="2020/1/1")
    assert "\n" not in str(error.value)


def test_the_application_filters_for_a_date_reach_every_path_unchanged(retrievers):
    filters = with_versions(None, "2020-01-01")
    for retriever in retrievers.values():
        assert all("@" in k for k in keys(retriever.run(queries=["商标法第十条"], filters=filters)["documents"])
                   if k.startswith(TRADEMARK))


def test_a_citation_of_a_superseded_version_is_marked(retrievers):
    old, = retrievers["citation"].run(queries=["商标法第十条"], as_of="2020-01-01")["documents"]
    answer = ("依据《中华人民共和国商标法》第十条，该标志不得作为商标使用。\n\n"
              "【相关法条】\n《中华人民共和国商标法》第十条\n")
    checked = AnswerChecker([old], query="这个标志能注册吗").check(answer)
    mark = "〔已修改，"
    prose, statutes = checked.text.split("【相关法条】")
    assert f"《中华人民共和国商标法》第十条{mark}" in prose
    assert f"《中华人民共和国商标法》第十条{mark}" in statutes
    cited = citation_of(old)
    assert cited["in_force"] is False and cited["version_mark"].startswith(mark)
    current, = retrievers["citation"].run(queries=["商标法第十条"])["documents"]
    assert "〔" not in AnswerChecker([current]).check("依据《中华人民共和国商标法》第十条。").text


def vectors(store) -> dict[str, tuple]:
    """Each stored document's dense and sparse vectors."""
    store.return_embedding = True
    try:
        return {d.id: (d.embedding, d.sparse_embedding.to_dict()) for d in store.filter_documents()}
    finally:
        store.return_embedding = False


def test_an_older_store_is_migrated_in_place_without_re_embedding(tmp_path, e5_model):
    settings = Settings(qdrant_path=tmp_path / "qdrant", embedding_model=str(e5_model))
    store = open_document_store(settings)
    try:
        Indexer(store, settings).index(law_sources(["刑法修正案（十二）"]), progress=False)
        before = vectors(store)
        for ids, documents in store.scroll_sources({"law:中华人民共和国刑法修正案（十二）"}):
            store.set_metas([(i, {k: v for k, v in doc.meta.items()  # as a store indexed before versions holds
                                   if k not in ("in_force", "valid_from", "valid_to", "version_date", "amends")})
                              for i, doc in zip(ids, documents, strict=True)])  # them: no version fields, no links
        assert not any("in_force" in d.meta for d in store.filter_documents())
        manifest = SourceManifest(store)
        record, = manifest.all()
        manifest._put(replace(record, meta_hash=""))
        assert [r.source for r in manifest.unversioned()] == ["law:中华人民共和国刑法修正案（十二）"]

        result, = Indexer(store, settings).index(law_sources(["刑法修正案（十二）"]), progress=False)
        assert (result.action, result.count) == ("relabelled", 8)
        assert vectors(store) == before  # nothing re-embedded
        after = store.filter_documents()
        assert all(d.meta["in_force"] is True for d in after)
        assert sum(bool(d.meta.get("amends")) for d in after) == 7  # 条目八 is the effective-date clause
        again, = Indexer(store, settings).index(law_sources(["刑法修正案（十二）"]), progress=False)
        assert again.action == "unchanged" and manifest.unversioned() == []
    finally:
        store.close()


def test_the_criminal_law_joins_an_older_store_as_a_new_source(tmp_path, e5_model):
    settings = Settings(qdrant_path=tmp_path / "qdrant", embedding_model=str(e5_model))
    store = open_document_store(settings)
    try:
        sources = law_sources(["刑法修正案（十二）"])
        Indexer(store, settings).index(sources, progress=False)
        results = Indexer(store, settings).index(sources + law_sources(["刑法"]), progress=False)
        # the older source is kept (its BM25 weights follow the new average length), the 刑法 is added
        assert [(r.source, r.action) for r in results] == [
            ("law:中华人民共和国刑法修正案（十二）", "reweighted"), (f"law:{CRIMINAL}", "added")]
        assert store.count_documents() == 8 + 505
    finally:
        store.close()


def test_an_amended_article_names_its_amendment_in_the_statute_section(retrievers):
    theft, = retrievers["citation"].run(queries=["刑法第二百六十四条"])["documents"]
    answer = f"可能构成盗窃罪。\n\n【相关法条】\n《{CRIMINAL}》第二百六十四条\n"
    statutes = AnswerChecker([theft]).check(answer).text.split("【相关法条】")[1]
    assert (f"《{CRIMINAL}》第二百六十四条（经《中华人民共和国刑法修正案（八）》条目三十九修改）："
            "盗窃公私财物") in statutes
    rewritten, = retrievers["citation"].run(queries=["刑法第一百六十五条"])["documents"]
    line = AnswerChecker([rewritten]).check(f"【相关法条】\n《{CRIMINAL}》第一百六十五条\n").text
    assert line.count("刑法修正案（十二）》条目一") == 1  # named once: its text already says it
