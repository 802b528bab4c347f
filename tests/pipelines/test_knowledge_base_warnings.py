"""`pipelines.knowledge_base_warnings`: one sentence, with the command that fixes it, for each thing that makes a
knowledge base's results unreliable, read from the source manifest of a real store (how the CLI and the API show
them is in interfaces/test_cli.py and application/test_service.py)."""

from dataclasses import replace

import pytest

from components.retrievers.citation_lookup import VersionGap
from config.settings import Settings
from document_store.source_manifest import SourceManifest, completed
from helpers.text_encoding.onnx_encoder import INT8_FILE
from pipelines.embedders import embedding_fingerprint
from pipelines.knowledge_base_warnings import (
    as_of_warning,
    incomplete_warning,
    knowledge_base_warnings,
    other_embedder_warning,
    stale_weight_sources,
    stale_weights_warning,
    unversioned_warning,
)


@pytest.fixture(scope="module")
def settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings with a model folder of their own (the fingerprint reads only its weights file)."""
    root = tmp_path_factory.mktemp("kb_warnings")
    (root / "e5" / "onnx").mkdir(parents=True)
    (root / "e5" / "onnx" / INT8_FILE).write_bytes(b"int8 weights")
    return Settings(qdrant_path=root / "qdrant", embedding_model=str(root / "e5"))


def sound(settings: Settings, source: str, count: int = 10, length: int = 200):
    """A complete source as the current settings index it: their embedder, BM25 weights, versions."""
    return completed(source, "hash", count, embedding=embedding_fingerprint(settings), length=length,
                     bm25=(settings.bm25_k1, settings.bm25_b, 20.0), meta_hash="versions")


def test_a_sound_knowledge_base_has_no_warnings(manifest: SourceManifest, settings: Settings) -> None:
    assert knowledge_base_warnings(manifest, settings) == []
    manifest.mark_complete([sound(settings, "law:中华人民共和国民法典"), sound(settings, "file:手册.md")])
    assert knowledge_base_warnings(manifest, settings, "statutes") == []


def test_each_problem_is_said_once_in_a_fixed_order(manifest: SourceManifest, settings: Settings) -> None:
    manifest.mark_complete([
        sound(settings, "law:a"),
        replace(sound(settings, "law:b"), bm25_k1=2.0),  # weighted with another k1
        replace(sound(settings, "law:c"), meta_hash=""),  # indexed before statute versions
        replace(sound(settings, "file:d.md"), embedding="another"),
    ])
    manifest.mark_indexing({"file:e.md": "hash"})  # interrupted
    assert knowledge_base_warnings(manifest, settings, "kb") == [
        incomplete_warning(["file:e.md"], "kb"), stale_weights_warning(1, "kb"), unversioned_warning(1, "kb"),
        other_embedder_warning(1, "kb")]


def test_an_interrupted_source_is_only_said_to_be_interrupted(manifest: SourceManifest, settings: Settings) -> None:
    """It has no embedder, weights or versions recorded yet: the other warnings would send the user elsewhere."""
    manifest.mark_complete([sound(settings, "law:a")])
    manifest.mark_indexing({"law:b": "hash"})
    warnings = knowledge_base_warnings(manifest, settings)
    assert warnings == [incomplete_warning(["law:b"])]


def test_a_file_source_without_versions_is_not_unversioned(manifest: SourceManifest, settings: Settings) -> None:
    manifest.mark_complete([replace(sound(settings, "file:手册.md"), meta_hash="")])
    assert knowledge_base_warnings(manifest, settings) == []


def test_weights_go_stale_when_the_collections_average_length_drifts(manifest: SourceManifest,
                                                                     settings: Settings) -> None:
    """Weights computed at avgdl 20 are fine at 20.5 (within BM25_MAX_DRIFT = 5 %), stale at 30."""
    manifest.mark_complete([sound(settings, "law:a", count=10, length=205)])
    assert stale_weight_sources(manifest, settings) == []
    manifest.mark_complete([sound(settings, "law:a", count=10, length=300)])
    assert [record.source for record in stale_weight_sources(manifest, settings)] == ["law:a"]
    assert stale_weight_sources(manifest, replace(settings, bm25_max_drift=0.6)) == []


def test_another_embedder_is_told_by_the_fingerprint_of_the_current_settings(manifest: SourceManifest,
                                                                           settings: Settings) -> None:
    manifest.mark_complete([sound(settings, "law:a")])
    assert knowledge_base_warnings(manifest, replace(settings, passage_prefix="passage:: ")) == [
        other_embedder_warning(1)]


def test_the_commands_name_the_collection_only_when_there_is_one() -> None:
    assert "`python -m pipelines reweight --collection handbook`" in stale_weights_warning(2, "handbook")
    assert "`python -m pipelines reweight`" in stale_weights_warning(2)
    assert "`python -m pipelines index --laws all --collection laws`" in unversioned_warning(1, "laws")
    assert "`python -m pipelines index --laws all`" in unversioned_warning(1)
    assert "`python -m pipelines index --collection kb` with the same sources" in other_embedder_warning(3, "kb")
    assert stale_weights_warning(2).startswith("the BM25 weights of 2 source(s) are out of date")


def test_interrupted_sources_are_named_up_to_three() -> None:
    assert incomplete_warning(["law:a", "law:b", "law:c"]).startswith(
        "3 source(s) were interrupted during indexing (law:a, law:b, law:c), so results may be incomplete.")
    assert incomplete_warning(["law:a", "law:b", "law:c", "law:d"]).startswith(
        "4 source(s) were interrupted during indexing (law:a, law:b, law:c, …)")


LAW = "中华人民共和国商标法"


@pytest.mark.parametrize(("gap", "held", "fix"), [
    (VersionGap(LAW, 20200101, 20270101, 99991231), "现有版本自 2027-01-01 起施行", "加入历史版本"),
    (VersionGap(LAW, 20250101, 20010101, 20191231), "现有版本自 2019-12-31 起不再适用", "加入它的各个版本"),
    (VersionGap(LAW, 20250101, 20190101, 20250101), "现有版本自 2025-01-01 起不再适用", "加入它的各个版本"),
    (VersionGap(LAW, 20150101, 20010101, 20300101), "现有版本在该日都不适用", "加入它的各个版本"),
])
def test_an_as_of_gap_says_which_versions_are_held_and_how_to_add_the_others(gap: VersionGap, held: str,
                                                                            fix: str) -> None:
    """Only later versions held: add the history; only earlier ones, or none in force that day: add every version."""
    day = f"{gap.as_of // 10000}-{gap.as_of // 100 % 100:02d}-{gap.as_of % 100:02d}"
    assert as_of_warning(gap, "laws") == (f"知识库中没有《{LAW}》在 {day} 有效的版本（{held}）；用 "
                                          f"`python -m pipelines index --laws 商标法 --versions --collection laws` "
                                          f"{fix}")


def test_a_law_without_the_national_prefix_is_named_as_it_is() -> None:
    gap = VersionGap("最高人民法院关于审理民间借贷案件适用法律若干问题的规定", 20100101, 20150901, 99991231)
    assert "--laws 最高人民法院关于审理民间借贷案件适用法律若干问题的规定 --versions`" in as_of_warning(gap)

