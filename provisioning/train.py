"""``python -m pipelines train``: the domain-adapted embedder and the relevance evaluator, from labelled pairs.

Default: the bundled STARD pairs (`training_data/stard/`) against every current article of the statute database.

1. The pairs are split: ``1 - CALIBRATION_SHARE`` of the questions train the embedder, the rest train the
   evaluator. The evaluator learns from questions the adapted embedder never saw, so its probabilities hold for
   new questions: on its own training questions the adapted cosines would be too good.
2. Hard negatives are mined without embedding the corpus (`provisioning.mining`: BM25 over every article, the base
   e5-small on BM25's candidates only) and the embedder is fine-tuned (`provisioning.embedder_training`).
3. The adapted embedder is exported to int8 ONNX, the corpus is indexed with it (``DATA_DIR/corpus_qdrant``, one
   collection per embedder fingerprint, so the stores of several embedders live side by side and none is
   re-embedded back and forth): the only time set-up encodes the whole corpus. The evaluator is trained on the
   held-back questions' retrieval through that store.

With fewer than ``MIN_EMBEDDER_PAIRS`` pairs, or with ``--collection`` (a user's own knowledge base, embedded as it
is), only the evaluator is trained, on all pairs, with the embedder as configured.

Idempotent and crash-safe: each model is written to a staging folder and renamed into the cache
(``MODEL_CACHE_DIR``) only when complete: ``embedder-<hash>`` keyed by its pairs, recipe, base embedder and
corpus, ``evaluator-<hash>`` by its pairs, recipe, the vectors it reads and the fusion settings; a cache hit
skips indexing, mining and training. ``ADAPTED_EMBEDDING_MODEL`` and ``EVALUATOR_MODEL`` are then links to the
cached models, swapped in atomically; `Settings.from_env` uses the adapted embedder while its link exists and
``TRAINED_MODELS`` is on, and the next `index` run re-embeds knowledge bases built with other vectors.

Usage::

    result = train_models(Settings.from_env())                             # STARD, all statutes
    result = train_models(settings, pairs="mine.jsonl", collection="handbook")
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
import random
import shutil
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tqdm import tqdm

from components.evaluators.coverage_check import COVERAGE_FILE
from components.evaluators.relevance_evaluator import CALIBRATION_FILE
from config.settings import Settings
from pipelines.embedders import embedding_fingerprint
from pipelines.stores import open_document_store
from provisioning.coverage_training import (
    DEFAULT_OUTSIDE,
    CoverageRecipe,
    OutsideQuestion,
    load_outside,
    outside_digest,
    train_coverage,
    write_coverage,
)
from provisioning.embedder_training import EmbedderRecipe, fine_tune, training_rows
from provisioning.evaluator_training import Recipe, train_evaluator
from provisioning.isolated import in_child
from provisioning.mining import MINING_DEPTH, MINING_POOL, corpus_articles, mine_candidates
from provisioning.onnx_export import is_complete
from provisioning.phases import Phases
from provisioning.training_pairs import DEFAULT_PAIRS, Pair, articles_by_key, check_gold, load_pairs, pairs_digest

if TYPE_CHECKING:
    from haystack import Document

    from pipelines.indexing import Source

T = TypeVar("T")
CORPUS_COLLECTION = "statutes_all"
MIN_EMBEDDER_PAIRS = 200
CALIBRATION_SHARE = 0.2
TRAINING_FILE = "training.json"


@dataclass(frozen=True)
class TrainResult:
    model: Path  # the evaluator's cache entry
    embedder: Path | None  # the adapted embedder's cache entry (None: the embedder as configured)
    coverage: Path | None  # the coverage check's cache entry (None: no out-of-corpus questions to learn from)
    reused: bool  # nothing was trained
    trained: dict  # evaluator.json
    settings: Settings  # the given settings pointed at the trained models (without installing them)


def corpus_settings(settings: Settings, name: str = CORPUS_COLLECTION) -> Settings:
    """Where the training corpus ``name`` (default: the whole statute corpus) is indexed with ``settings``'
    embedder (for training and the benchmarks)."""
    return dataclasses.replace(settings, qdrant_path=settings.data_dir / "corpus_qdrant",
                               collection=f"{name}_{embedding_fingerprint(settings)[:10]}")


def base_settings(settings: Settings) -> Settings:
    return dataclasses.replace(settings, embedding_model=settings.base_embedding_model)


def default_pairs(settings: Settings) -> str | Path:
    """What training learns from unless told: ``TRAINING_PAIRS``, else the bundled STARD train pairs."""
    return settings.training_pairs or DEFAULT_PAIRS


def default_outside(settings: Settings) -> list[OutsideQuestion]:
    """The questions the coverage check learns the corpus's gaps from: ``OUT_OF_CORPUS_QUESTIONS``, else the
    bundled STARD ones when training on the bundled pairs, else none."""
    if settings.out_of_corpus_questions:
        return load_outside(settings.out_of_corpus_questions)
    return [] if settings.training_pairs else load_outside(DEFAULT_OUTSIDE)


def model_cache_dir() -> Path:
    return Settings.from_env().model_cache_dir


def install(cached: Path, target: Path) -> None:
    """Point ``target`` at ``cached``: a symlink swapped in atomically (a real folder there is refused)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not target.is_symlink():
        raise ValueError(f"{target} exists and is not a link made by `train`; move it away or set its variable "
                         "(EVALUATOR_MODEL, ADAPTED_EMBEDDING_MODEL) to another path")
    staging = target.with_name(target.name + ".link")
    staging.unlink(missing_ok=True)
    staging.symlink_to(cached.resolve(), target_is_directory=True)
    os.replace(staging, target)


def split_pairs(pairs: list[Pair], share: float, seed: int = 0) -> tuple[list[Pair], list[Pair]]:
    """(embedder pairs, calibration pairs): a fixed random ``share`` of the questions is held back."""
    order = random.Random(seed).sample(range(len(pairs)), len(pairs))
    held = set(order[: round(share * len(pairs))])
    return [p for i, p in enumerate(pairs) if i not in held], [p for i, p in enumerate(pairs) if i in held]


def retrieve_candidates(store: Any, settings: Settings, pairs: list[Pair], depth: int,
                        progress: bool, label: str) -> list[list[Document]]:
    from pipelines.retrieval import build_retrieval_pipeline, retrieve

    pipeline = build_retrieval_pipeline(store, settings, top_k=depth)
    pipeline.warm_up()
    return [retrieve(pipeline, [pair.query], top_k=depth) for pair in tqdm(pairs, desc=label, disable=not progress)]


class _Corpus:
    """The training corpus indexed with a given embedder: its store, opened once, indexed if incomplete. With
    ``isolate``, each step that holds the store or a model (`run`, `call`) runs in a process of its own
    (`provisioning.isolated`): the store of 23,490 articles takes about a GiB in local mode, fine-tuning and the
    ONNX export a few more, and a process does not give back what Python freed, so run in one process they
    stacked up to 9.4 GiB."""

    def __init__(self, sources: Sequence[Source], progress: bool, phases: Phases, name: str,
                 isolate: bool = False) -> None:
        self.sources, self.progress, self.phases, self.name, self.isolate = sources, progress, phases, name, isolate

    def open(self, settings: Settings) -> tuple[Any, Settings]:
        from pipelines.indexing import Indexer

        store_settings = corpus_settings(settings, self.name)
        store = open_document_store(store_settings)
        try:
            with self.phases.phase(f"index {len(self.sources)} laws with {Path(settings.embedding_model).name}"):
                Indexer(store, store_settings).index(self.sources, progress=self.progress)
        except BaseException:
            store.close()
            raise
        return store, store_settings

    def call(self, function: Callable[..., T], *args: object) -> T:
        """``function(*args)``, in a child process when isolated."""
        return in_child(function, *args) if self.isolate else function(*args)

    def export(self, folder: Path) -> None:
        """The int8 ONNX export of ``folder``; isolated, in a child whose export steps run in children of their own
        (`provisioning.onnx_export.build_onnx_int8`), else all in this process."""
        from provisioning.onnx_export import build_onnx_int8

        self.call(functools.partial(build_onnx_int8, isolate=self.isolate), folder)

    def run(self, step: Callable[..., T], *args: object) -> T:
        """``step(corpus, *args)``, in a child process when isolated; the phases it records come back."""
        if not self.isolate:
            return step(self, *args)
        inner = _Corpus(self.sources, self.progress, Phases(_open=list(self.phases._open)), self.name)
        result, rows = in_child(_step_in_child, step, inner, *args)
        self.phases.rows.extend(rows)
        return result


def _step_in_child(step: Callable[..., T], corpus: _Corpus, *args: object) -> tuple[T, list[tuple[str, float]]]:
    return step(corpus, *args), corpus.phases.rows


def _identity(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:16]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


@contextmanager
def staged(cached: Path) -> Iterator[Path]:
    """A fresh staging folder beside ``cached``, renamed to it in one step when the block completes. Staging
    folders that killed runs left (their process is gone) are removed first."""
    staging = cached.with_name(f"{cached.name}.tmp-{os.getpid()}")
    for left in cached.parent.glob(f"{cached.name}.tmp-*") if cached.parent.is_dir() else []:
        pid = left.name.rsplit("-", 1)[1]
        if left != staging and pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(left, ignore_errors=True)
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        yield staging
        shutil.rmtree(cached, ignore_errors=True)
        os.replace(staging, cached)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def train_models(settings: Settings, pairs: str | Path | list[Pair] | None = None, collection: str | None = None, *,
                 sources: Sequence[Source] | None = None, recipe: Recipe | None = None,
                 embedder_recipe: EmbedderRecipe | None = None, adapt: bool | None = None,
                 progress: bool = True, install_links: bool = True, phases: Phases | None = None,
                 scope: str = "full", corpus_name: str = CORPUS_COLLECTION, isolate: bool = True,
                 outside: Sequence[OutsideQuestion] | None = None,
                 coverage_recipe: CoverageRecipe | None = None) -> TrainResult:
    """Train (or reuse) the models and, with ``install_links``, point the settings' model paths at them.

    Two cache entries: the embedder (keyed by its pairs, recipe, base model and corpus) and the evaluator (keyed by
    its pairs, recipe, the vectors it reads and the retrieval settings that rank its candidates), so a change of
    fusion weights retrains the evaluator (seconds) and not the embedder.

    :param pairs: a pairs file or loaded pairs (default: ``TRAINING_PAIRS``, else STARD train).
    :param collection: a user's indexed knowledge base; only the evaluator is trained, against it as embedded.
    :param sources: the corpus to train against (default: ``TRAINING_LAWS``, every current statute); ignored with
        ``collection``.
    :param adapt: adapt the embedder (default: with at least ``MIN_EMBEDDER_PAIRS`` pairs and no ``collection``).
    :param phases: where the seconds of each phase are recorded.
    :param scope: recorded in ``evaluator.json`` (and its cache key): ``full``, or ``quick`` for the evaluator the
        first answer uses while the full stack is trained (`provisioning.quick_start`).
    :param corpus_name: the collection name (before the embedder's fingerprint) the ``sources`` are indexed into.
    :param isolate: run indexing, mining, fine-tuning, the export and the evaluator's retrieval each in a process
        of its own, so the memory of one is returned before the next (see `_Corpus`).
    :param outside: questions the corpus cannot answer, with the document that would; the coverage check learns
        from them and the pairs' questions (default: `default_outside` when training on the default pairs, else
        none; none: no coverage check is trained). Not with ``collection``.
    """
    from pipelines.indexing import law_sources

    recipe = recipe or Recipe(judged=settings.judge_top_n)
    embedder_recipe = embedder_recipe or EmbedderRecipe()
    loaded = pairs if isinstance(pairs, list) else load_pairs(pairs or default_pairs(settings))
    if collection is not None:
        adapt = False
        store = open_document_store(settings, collection)
        try:
            if store.count_documents() == 0:
                raise ValueError(f"the knowledge base '{collection}' is empty; index it before training on it")
            corpus = f"{collection}:{store.count_documents()}"
        finally:
            store.close()
        base = settings
    else:
        adapt = len(loaded) >= MIN_EMBEDDER_PAIRS if adapt is None else adapt
        sources = law_sources(list(settings.training_laws)) if sources is None else sources
        corpus = _identity(*(f"{s.name}:{s.content_hash}" for s in sources))
        base = base_settings(settings)
    phases = phases or Phases()
    corpus_store = _Corpus(sources or [], progress, phases, corpus_name, isolate)
    reused = True
    embedder = None
    calibration = loaded
    evaluator_settings = base
    if adapt:
        embedder_pairs, calibration = split_pairs(loaded, CALIBRATION_SHARE, recipe.seed)
        embedder = model_cache_dir() / "embedder-{}".format(_identity(
            pairs_digest(embedder_pairs), embedder_recipe.digest(), embedding_fingerprint(base), corpus,
            f"mining=bm25-pool{MINING_POOL}@depth{MINING_DEPTH}"))
        if not (embedder / TRAINING_FILE).is_file():  # written last; the entry is renamed into place after it
            reused = False
            with staged(embedder) as staging:
                _train_embedder(base, embedder_pairs, loaded, corpus_store, embedder_recipe, staging, progress)
        elif not is_complete(embedder):  # trained by an older exporter: export the same weights again, no training
            with phases.phase("export the adapted embedder to int8 ONNX"):
                corpus_store.export(embedder)
        evaluator_settings = dataclasses.replace(base, embedding_model=str(embedder))
    evaluator = model_cache_dir() / "evaluator-{}".format(_identity(
        pairs_digest(calibration), recipe.digest(), embedding_fingerprint(evaluator_settings), corpus,
        f"bm25={settings.bm25_weight}@question={settings.question_weight}", *([] if scope == "full" else [scope])))
    if not (evaluator / CALIBRATION_FILE).is_file():
        reused = False
        with staged(evaluator) as staging:
            trained = corpus_store.run(_train_evaluator, evaluator_settings, calibration, loaded, collection,
                                       recipe, progress)
            info = json.loads((embedder / TRAINING_FILE).read_text(encoding="utf-8")) if embedder else None
            (staging / CALIBRATION_FILE).write_text(json.dumps(
                {**trained, "collection": corpus, "embedder": info, "scope": scope}, ensure_ascii=False, indent=2),
                encoding="utf-8")
    if outside is None:
        outside = default_outside(settings) if pairs is None and collection is None else []
    coverage = None
    if outside and collection is None:
        coverage, fresh = train_coverage_model(loaded, list(outside), coverage_recipe or CoverageRecipe(), phases)
        reused = reused and not fresh
    trained_settings = dataclasses.replace(settings, evaluator_model=str(evaluator),
                                           embedding_model=str(embedder or base.embedding_model),
                                           coverage_model=str(coverage or ""),
                                           coverage_check=settings.coverage_check and coverage is not None)
    if install_links:
        if embedder is not None:
            install(embedder, Path(settings.adapted_embedding_model))
        install(evaluator, Path(settings.evaluator_model))
        if coverage is not None:
            install(coverage, Path(settings.coverage_model))
    return TrainResult(model=evaluator, embedder=embedder, coverage=coverage, reused=reused,
                       settings=trained_settings,
                       trained=json.loads((evaluator / CALIBRATION_FILE).read_text(encoding="utf-8")))


def train_coverage_model(pairs: list[Pair], outside: list[OutsideQuestion], recipe: CoverageRecipe,
                         phases: Phases) -> tuple[Path, bool]:
    """The coverage check's cache entry (trained unless cached: seconds) and whether it was trained now."""
    cached = model_cache_dir() / "coverage-{}".format(_identity(
        pairs_digest(pairs), outside_digest(outside), recipe.digest()))
    if (cached / COVERAGE_FILE).is_file():
        return cached, False
    with staged(cached) as staging, phases.phase("train the coverage check"):
        # the pairs with gold are the in-corpus questions (out-of-corpus ones may be among them as negatives)
        write_coverage(train_coverage([p.query for p in pairs if p.gold], outside, recipe), staging)
    return cached, True


def _train_embedder(base: Settings, pairs: list[Pair], all_pairs: list[Pair], corpus: _Corpus,
                    recipe: EmbedderRecipe, out: Path, progress: bool) -> None:
    """Mine hard negatives, fine-tune, export to int8 ONNX, all into ``out`` (each step in a process of its own
    when the corpus is isolated)."""
    rows = corpus.run(_mine, base, pairs, all_pairs, progress)
    model = out / "model"
    with corpus.phases.phase("fine-tune the embedder"):
        seconds = corpus.call(fine_tune, Path(base.embedding_model), rows, model, recipe, progress)
    for item in model.iterdir():  # the entry is the model folder itself
        os.replace(item, out / item.name)
    model.rmdir()
    with corpus.phases.phase("export the adapted embedder to int8 ONNX"):
        corpus.export(out)
    (out / TRAINING_FILE).write_text(json.dumps(
        {"questions": len(pairs), "rows": len(rows["anchor"]), "train_seconds": seconds,
         "recipe": dataclasses.asdict(recipe), "base": embedding_fingerprint(base)}, indent=2), encoding="utf-8")


def _mine(corpus: _Corpus, base: Settings, pairs: list[Pair], all_pairs: list[Pair],
          progress: bool) -> dict[str, list[str]]:
    """The training rows: each question's best-ranked non-gold candidate (`provisioning.mining`: BM25 over the
    corpus, the base embedder on BM25's candidates only)."""
    with corpus.phases.phase("mine hard negatives"):
        articles = corpus_articles(corpus.sources)
        by_key = {str(doc.meta["key"]): doc for doc in articles if doc.meta.get("key")}
        check_gold(all_pairs, set(by_key), "the statute corpus")
        mined = mine_candidates(pairs, articles, base, progress=progress)
    return training_rows(pairs, mined, by_key, base.query_prefix, base.passage_prefix)


def _train_evaluator(corpus: _Corpus, settings: Settings, pairs: list[Pair], all_pairs: list[Pair],
                     collection: str | None, recipe: Recipe, progress: bool) -> dict[str, Any]:
    """Retrieve the pairs' candidates through the store of ``settings``' embedder and fit the evaluator."""
    if collection is not None:
        store, store_settings = open_document_store(settings, collection), settings
    else:
        store, store_settings = corpus.open(settings)
    try:
        check_gold(all_pairs, set(articles_by_key(store)),
                   f"the knowledge base '{store.knowledge_base}'" if collection else "the statute corpus")
        with corpus.phases.phase("train the relevance evaluator"):
            candidates = retrieve_candidates(store, store_settings, pairs, recipe.candidates, progress,
                                             "retrieving candidates")
            trained = train_evaluator(pairs, candidates, recipe)
    finally:
        store.close()
    return {**trained, "embedding": embedding_fingerprint(store_settings)}
