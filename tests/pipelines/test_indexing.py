import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from components.retrievers.jieba_bm25_retriever import JiebaBM25Retriever
from document_store.source_manifest import COMPLETE, INDEXING, SourceManifest
from document_store.text_files import text_document
from interfaces.cli import main
from pipelines import indexing
from pipelines.embedders import embedding_fingerprint
from pipelines.indexing import Indexer, file_sources, law_sources
from pipelines.stores import open_document_store

REPO = Path(__file__).resolve().parents[2]
PIPL = "中华人民共和国个人信息保护法"

RULES_V1 = ("# 员工手册\n第一章 总则\n第一条 员工请假需提前三天申请。\n第二条 加班应当支付加班费。\n"
            "第三条 年终奖按绩效发放。\n")
RULES_V2 = "# 员工手册\n第一章 总则\n第一条 员工请假需提前五天书面申请。\n第二条 加班应当支付加班费。\n"


@pytest.fixture
def store(settings):
    store = open_document_store(settings)
    yield store
    store.close()


def write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_reindex_is_idempotent(store, settings):
    first = Indexer(store, settings).index(law_sources(["个人信息保护法"]), progress=False)
    assert [(r.action, r.count) for r in first] == [("added", 74)]
    assert store.count_documents() == 74
    second = Indexer(store, settings).index(law_sources([PIPL]), progress=False)
    assert [(r.action, r.count) for r in second] == [("unchanged", 74)]
    assert store.count_documents() == 74
    record = SourceManifest(store).get(f"law:{PIPL}")
    assert record.status == COMPLETE and record.count == 74


def test_incremental_add_keeps_what_is_there(store, settings, tmp_path):
    Indexer(store, settings).index(law_sources([PIPL]), progress=False)
    results = Indexer(store, settings).index(file_sources([write(tmp_path / "员工手册.md", RULES_V1)]), progress=False)
    assert [(r.action, r.count) for r in results] == [("added", 3)]
    assert store.count_documents() == 77


def test_changed_source_replaces_its_old_articles(store, settings, tmp_path):
    path = write(tmp_path / "员工手册.md", RULES_V1)
    Indexer(store, settings).index(file_sources([path]), progress=False)
    write(tmp_path / "员工手册.md", RULES_V2)
    results = Indexer(store, settings).index(file_sources([path]), progress=False)
    assert [(r.action, r.count) for r in results] == [("replaced", 2)]
    docs = {d.meta["key"]: d.content for d in store.filter_documents()}
    assert docs == {"员工手册第一条": "员工请假需提前五天书面申请。", "员工手册第二条": "加班应当支付加班费。"}


def test_interrupted_run_is_detected_and_finished_by_the_next(store, settings, tmp_path, monkeypatch):
    paths = [write(tmp_path / "员工手册.md", RULES_V1),
             write(tmp_path / "其他.md", "# 其他\n第一条 甲。\n第二条 乙。\n")]
    monkeypatch.setattr(indexing, "GROUP_SIZE", 1)  # one source per group
    real_upsert = store.upsert  # article writes (the manifest has its own shard)
    calls = []

    def crash_on_second_write(documents):
        calls.append(len(documents))
        if len(calls) == 2:
            raise KeyboardInterrupt  # as if the user pressed Ctrl-C while the second source was being written
        return real_upsert(documents)

    monkeypatch.setattr(store, "upsert", crash_on_second_write)
    with pytest.raises(KeyboardInterrupt):
        Indexer(store, settings).index(file_sources(paths), progress=False)
    incomplete = SourceManifest(store).incomplete()
    assert [(r.source, r.status) for r in incomplete] == [("file:其他.md", INDEXING)]

    monkeypatch.setattr(store, "upsert", real_upsert)
    results = Indexer(store, settings).index(file_sources(paths), progress=False)
    # 员工手册 was weighted, in the interrupted run, with the average of both sources: nothing to reweight
    assert sorted((r.source, r.action, r.count) for r in results) == [
        ("file:其他.md", "resumed", 2), ("file:员工手册.md", "unchanged", 3)]
    assert SourceManifest(store).incomplete() == []
    assert store.count_documents() == 5


def test_a_resumed_source_keeps_the_articles_its_interrupted_run_wrote(store, settings, tmp_path, monkeypatch):
    """Issue 63, item 7: a job resumed after a kill started its progress and its work again from 0 (450 articles
    redone). Now only what the interrupted run did not write is embedded and written."""
    text = "# 规章\n" + "".join(f"第{n}条 第{n}项规定的内容。\n" for n in range(1, 11))
    paths = [write(tmp_path / "规章.md", text)]
    monkeypatch.setattr(indexing, "PROGRESS_SLICE", 4)  # the slices a followed job writes: 4 + 4 + 2
    real_upsert = store.upsert
    written: list[int] = []

    def crash_on_second_slice(documents):
        if len(written) == 1:
            raise KeyboardInterrupt  # killed while the second slice is being written
        written.append(len(documents))
        return real_upsert(documents)

    monkeypatch.setattr(store, "upsert", crash_on_second_slice)
    with pytest.raises(KeyboardInterrupt):
        Indexer(store, settings).index(file_sources(paths), progress=False, on_progress=lambda done, total: None)
    assert written == [4] and store.count_documents() == 4

    written.clear()
    monkeypatch.setattr(store, "upsert", lambda documents: written.append(len(documents)) or real_upsert(documents))
    progress: list[tuple[int, int]] = []
    results = Indexer(store, settings).index(file_sources(paths), progress=False,
                                             on_progress=lambda done, total: progress.append((done, total)))
    assert [(r.action, r.count) for r in results] == [("resumed", 10)]
    assert sum(written) == 6 and progress[0] == (4, 10) and progress[-1] == (10, 10)
    assert store.count_documents() == 10 and SourceManifest(store).incomplete() == []
    assert sorted(d.meta["key"] for d in store.filter_documents()) == sorted(f"规章第{n}条" for n in range(1, 11))
    record = SourceManifest(store).get("file:规章.md")
    fresh = Indexer(store, settings)
    fresh.index(file_sources(paths), progress=False)  # unchanged now: the manifest agrees with what is stored
    assert SourceManifest(store).get("file:规章.md") == record


def test_bm25_matches_only_after_jieba_segmentation(store, settings, tmp_path):
    text = "# 规定\n第一条 处理个人信息应当取得个人同意。\n第二条 机动车应当按规定停放。\n"
    Indexer(store, settings).index(file_sources([write(tmp_path / "规定.md", text)]), progress=False)
    retriever = JiebaBM25Retriever(document_store=store, top_k=5)
    # No whitespace in the query: without segmentation it is one token that occurs nowhere.
    query = "收集个人信息需要同意吗"
    assert "个人信息" in retriever.tokenize(query) and "同意" in retriever.tokenize(query)
    docs = retriever.run(queries=[query])["documents"]
    assert [d.meta["key"] for d in docs] == ["规定第一条"]
    assert docs[0].score > 0


def test_store_persists_across_processes_and_a_locked_path_is_reported(settings, tmp_path):
    env = {"PATH": "/usr/bin:/bin", "DATA_DIR": str(settings.data_dir), "EMBEDDING_MODEL": settings.embedding_model,
           "HF_HUB_OFFLINE": "1", "HOME": str(tmp_path)}
    run = [sys.executable, "-m", "pipelines"]
    indexed = subprocess.run(check=False, args=[*run, "index", "--quiet"], cwd=REPO, env=env, capture_output=True,
                             text=True, timeout=300)
    assert indexed.returncode == 0, indexed.stderr
    assert "74 documents" in indexed.stdout
    searched = subprocess.run(check=False,
                              args=[*run, "search", "个人信息处理者的同意", "--mode", "bm25", "--top-k", "3"],
                              cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert searched.returncode == 0, searched.stderr
    assert "3 results" in searched.stdout and PIPL in searched.stdout

    store = open_document_store(settings)  # this process now holds the embedded path
    try:
        assert store.count_documents() == 74
        locked = subprocess.run(check=False, args=[*run, "stats"], cwd=REPO, env=env, capture_output=True, text=True,
                                timeout=300)
        assert locked.returncode == 2
        assert "in use by another process" in locked.stderr
        assert "Traceback" not in locked.stderr
    finally:
        store.close()


def test_a_killed_indexing_process_leaves_a_usable_store_and_the_rerun_completes(settings):
    laws = ["中华人民共和国食品安全法", "中华人民共和国药品管理法"]
    expected = sum(len(source.documents) for source in law_sources(laws))
    command = [sys.executable, "-m", "pipelines", "index", "--laws", *laws]
    process = subprocess.Popen(command, stderr=subprocess.PIPE)  # env: the settings fixture's DATA_DIR
    assert process.stderr is not None
    seen = b""
    while b"indexing:" not in seen:  # the progress bar has started: models loaded, articles being embedded
        seen += process.stderr.read(1) or b"indexing:"
    time.sleep(2)
    process.kill()  # SIGKILL: no cleanup code runs
    process.wait(timeout=30)
    store = open_document_store(settings)  # the lock died with the process; the store opens
    partial = store.count_documents()
    assert partial < expected
    store.close()
    rerun = subprocess.run(command, check=False, capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    store = open_document_store(settings)
    assert store.count_documents() == expected
    assert SourceManifest(store).incomplete() == []
    store.close()


def test_sources_embedded_by_another_model_are_flagged_and_re_embedded(store, settings, tmp_path, capsys):
    paths = [write(tmp_path / "员工手册.md", RULES_V1)]
    Indexer(store, settings).index(file_sources(paths), progress=False)
    other = replace(settings, passage_prefix="passage:: ")  # as if the embedding setup had changed since
    assert SourceManifest(store).other_embeddings(embedding_fingerprint(other))
    store.close()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("EMBEDDING_PASSAGE_PREFIX", "passage:: ")
        assert main(["search", "请假"]) == 0
        assert "embedded with another embedding model" in capsys.readouterr().err
        assert main(["index", "--files", *paths]) == 0
        assert "re-embedded" in capsys.readouterr().out
        assert main(["search", "请假"]) == 0
        assert "another embedding model" not in capsys.readouterr().err




def test_what_the_writer_writes_is_searched_at_once(store, settings):
    """Whatever writes a knowledge base, a bare indexing pipeline run (not `Indexer`) too, the next search sees it:
    the law names citations are recognised by (cached between writes) and the documents."""
    from components.retrievers.citation_lookup import CitationLookup
    from document_store.text_files import text_document

    lookup = CitationLookup(document_store=store)
    lookup.warm_up()
    assert lookup._search.laws() == []  # read, empty
    pipeline = indexing.build_indexing_pipeline(store, settings)
    pipeline.run({"splitter": {"documents": [text_document(RULES_V2.encode(), "员工手册.md")]}})
    assert lookup._search.laws() == ["员工手册"]  # at once, not after a periodic re-read
    assert [d.meta["key"] for d in lookup.run(queries=["员工手册第二条"])["documents"]] == ["员工手册第二条"]


SHORT = "# 短则\n第一条 禁止吸烟。\n第二条 保持安静。\n"
LONG = "# 长则\n" + "".join(
    f"第{n}条 用人单位应当依法建立和完善劳动规章制度，保障劳动者享有劳动权利、履行劳动义务，"
    f"并对第{n}项事务作出书面记录。\n"
    for n in "一二三四五六")


def with_vectors(store) -> list:
    """The stored documents with their dense and sparse vectors."""
    store.return_embedding = True
    try:
        return store.filter_documents()
    finally:
        store.return_embedding = False


def stored_sparse(store) -> dict[str, dict[int, float]]:
    return {d.meta["key"]: dict(zip(d.sparse_embedding.indices, d.sparse_embedding.values, strict=True))
            for d in with_vectors(store)}


def expected_sparse(store, settings) -> dict[str, dict[int, float]]:
    """The weights a fresh encoder gives every stored article at the collection's current average length."""
    from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder

    docs = store.filter_documents()
    encoder = JiebaBM25DocumentEncoder(k1=settings.bm25_k1, b=settings.bm25_b)
    lengths = encoder.run(documents=docs)["lengths"]
    encoded = encoder.run(documents=docs, avgdl=sum(lengths) / len(lengths))["documents"]
    return {d.meta["key"]: dict(zip(d.sparse_embedding.indices, d.sparse_embedding.values, strict=True))
            for d in encoded}


def assert_weights_current(store, settings):
    stored, expected = stored_sparse(store), expected_sparse(store, settings)
    assert stored.keys() == expected.keys()
    for key, weights in expected.items():
        assert stored[key] == pytest.approx(weights, rel=1e-5), key


def test_bm25_weights_follow_the_collections_average_length(store, settings, tmp_path):
    """Issue 21: the stored weights use the collection's avgdl; a source whose weights were written with an
    average more than BM25_MAX_DRIFT off is reweighted in place (sparse vectors only) by the next index."""
    Indexer(store, settings).index(file_sources([write(tmp_path / "短则.md", SHORT)]), progress=False)
    assert_weights_current(store, settings)
    dense_before = {d.id: d.embedding for d in with_vectors(store)}
    before = {r.source: r.bm25_avgdl for r in SourceManifest(store).all()}
    results = Indexer(store, settings).index(file_sources([write(tmp_path / "长则.md", LONG)]), progress=False)
    assert [(r.source, r.action, r.count) for r in results] == [("file:长则.md", "added", 6)]  # what was asked
    assert SourceManifest(store).get("file:短则.md").bm25_avgdl > 2 * before["file:短则.md"]  # and 短则 reweighted
    assert_weights_current(store, settings)
    dense_after = {d.id: d.embedding for d in with_vectors(store)}
    assert {i: dense_after[i] for i in dense_before} == dense_before  # no re-embedding
    records = SourceManifest(store).all()
    avgdl = sum(r.length for r in records) / sum(r.count for r in records)
    assert [r.bm25_avgdl for r in records] == pytest.approx([avgdl, avgdl])
    assert Indexer(store, settings).stale_weights() == []


def test_a_small_addition_leaves_the_other_weights_alone(store, settings, tmp_path):
    Indexer(store, settings).index(file_sources([write(tmp_path / "长则.md", LONG)]), progress=False)
    similar = "# 附则\n第一条 用人单位应当依法建立和完善劳动规章制度，保障劳动者享有劳动权利、履行劳动义务。\n"
    results = Indexer(store, settings).index(file_sources([write(tmp_path / "附则.md", similar)]), progress=False)
    assert [(r.source, r.action) for r in results] == [("file:附则.md", "added")]
    drifted = replace(settings, bm25_max_drift=1e-6)  # with a tighter bound the same store needs reweighting
    assert [r.source for r in Indexer(store, drifted).stale_weights()] == ["file:长则.md"]


def test_changing_k1_reweights_everything_at_the_next_index(store, settings, tmp_path):
    Indexer(store, settings).index(file_sources([write(tmp_path / "长则.md", LONG)]), progress=False)
    other = replace(settings, bm25_k1=2.0)
    results = Indexer(store, other).index(file_sources([str(tmp_path / "长则.md")]), progress=False)
    assert [(r.source, r.action, r.count) for r in results] == [("file:长则.md", "reweighted", 6)]
    assert_weights_current(store, other)
    assert {(r.bm25_k1, r.bm25_b) for r in SourceManifest(store).all()} == {(2.0, settings.bm25_b)}


def test_a_store_of_raw_term_frequencies_is_reweighted_by_the_next_index(store, settings, tmp_path):
    """Stores written before issue 21 held raw term frequencies and manifest records without lengths."""
    from haystack.dataclasses import SparseEmbedding

    from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
    from document_store.source_manifest import SourceRecord

    paths = [write(tmp_path / "短则.md", SHORT), write(tmp_path / "长则.md", LONG)]
    Indexer(store, settings).index(file_sources(paths), progress=False)
    encoder = JiebaBM25DocumentEncoder()
    for ids, documents in store.scroll_sources({"file:短则.md", "file:长则.md"}):
        counts = [encoder.term_counts(doc) for doc in documents]
        store.set_sparse([(i, SparseEmbedding(indices=sorted(c), values=[float(c[t]) for t in sorted(c)]))
                           for i, c in zip(ids, counts, strict=True)])
    manifest = SourceManifest(store)
    for record in manifest.all():  # an old record: no length, no BM25 parameters
        manifest._put(SourceRecord(record.source, record.status, record.content_hash, record.count,
                                   record.updated_at, record.embedding))
    assert len(Indexer(store, settings).stale_weights()) == 2

    results = Indexer(store, settings).index(file_sources(paths), progress=False)
    assert sorted((r.source, r.action) for r in results) == [("file:短则.md", "reweighted"),
                                                              ("file:长则.md", "reweighted")]
    assert_weights_current(store, settings)
    assert {r.length > 0 for r in SourceManifest(store).all()} == {True}


def test_reweight_command_and_the_out_of_date_warning(store, settings, tmp_path, capsys):
    from document_store.source_manifest import SourceRecord

    Indexer(store, settings).index(file_sources([write(tmp_path / "员工手册.md", RULES_V1)]), progress=False)
    manifest = SourceManifest(store)
    record = manifest.all()[0]
    manifest._put(SourceRecord(record.source, record.status, record.content_hash, record.count, record.updated_at,
                               record.embedding))  # as an older version wrote it: raw term frequencies
    store.close()
    assert main(["stats"]) == 0
    assert "BM25 weights of 1 source(s) are out of date" in capsys.readouterr().err
    assert main(["reweight", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "reweighted      3  file:员工手册.md" in out and "of 1 source(s) rewritten" in out
    assert main(["reweight", "--quiet"]) == 0
    assert "are current" in capsys.readouterr().out
    assert main(["stats"]) == 0
    assert "out of date" not in capsys.readouterr().err


def test_one_run_weights_everything_it_writes_with_the_final_average(store, settings, tmp_path, monkeypatch):
    """A run in several groups (each a pipeline run) measures its articles first: the first group is weighted
    with the average of the whole collection, not of what was written so far, and nothing needs reweighting."""
    monkeypatch.setattr(indexing, "GROUP_SIZE", 1)  # one source per group
    paths = [write(tmp_path / "短则.md", SHORT), write(tmp_path / "长则.md", LONG)]
    results = Indexer(store, settings).index(file_sources(paths), progress=False)
    assert sorted((r.source, r.action) for r in results) == [("file:短则.md", "added"), ("file:长则.md", "added")]
    assert_weights_current(store, settings)


def test_a_run_tokenises_each_article_once_and_writes_the_manifest_once_per_group(store, settings, tmp_path,
                                                                                   monkeypatch):
    """The average-length pre-pass and the pipeline share one tokenisation per article; the manifest records of
    a group's sources go in one write before and one after its articles (not two per source)."""
    paths = [write(tmp_path / "员工手册.md", RULES_V1),
             write(tmp_path / "其他.md", "# 其他\n第一条 甲。\n第二条 乙。\n")]
    indexer = Indexer(store, settings)
    tokenised, manifest_writes = [], []
    tokenize = indexer.encoder._tokenizer.tokenize
    monkeypatch.setattr(indexer.encoder._tokenizer, "tokenize", lambda text: tokenised.append(text) or tokenize(text))
    records = store.companion("__sources")
    write_records = records.write_documents
    monkeypatch.setattr(records, "write_documents", lambda documents, policy: (
        manifest_writes.append(len(documents)) or write_records(documents, policy)))
    results = indexer.index(file_sources(paths), progress=False)
    assert sorted((r.action, r.count) for r in results) == [("added", 2), ("added", 3)]
    assert len(tokenised) == 5 == len(set(tokenised))
    assert manifest_writes == [2, 2]
    assert [r.status for r in SourceManifest(store).all()] == [COMPLETE, COMPLETE]
    assert_weights_current(store, settings)


def test_progress_is_reported_per_slice_and_the_stored_articles_are_the_same(tmp_path, e5_model):
    """Issue 46: an upload job reports the articles written so far; writing them in slices changes nothing stored."""
    from config.settings import Settings
    from pipelines.indexing import PROGRESS_SLICE, Source

    text = "# 规章\n" + "\n".join(f"第{i}条 员工应当遵守第{i}项规定。" for i in range(1, PROGRESS_SLICE * 2 + 10))
    stored = []
    reports: list[tuple[int, int]] = []
    for name, follow in (("whole", None), ("sliced", lambda done, total: reports.append((done, total)))):
        settings = Settings(qdrant_path=tmp_path / name / "qdrant", embedding_model=str(e5_model))
        store = open_document_store(settings)
        try:
            source = Source("file:规章.md", [text_document(text.encode(), "规章.md")])
            Indexer(store, settings).index([source], progress=False, on_progress=follow)
            stored.append(sorted((d.id, d.content, d.meta["key"]) for d in store.filter_documents()))
        finally:
            store.close()
    total = PROGRESS_SLICE * 2 + 9
    assert stored[0] == stored[1] and len(stored[0]) == total
    assert reports == [(PROGRESS_SLICE, total), (PROGRESS_SLICE * 2, total), (total, total)]
