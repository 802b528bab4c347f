"""The 5 folds every benchmark of trained models shares: each question is scored only by models that never saw it.

For fold k, `provisioning.train.train_models` runs the product's own recipe on the questions of the other folds
(adapted embedder on 80 % of them, evaluator on the held-back 20 %), cached like the shipped models, and the corpus
is indexed with that fold's embedder (``DATA_DIR/corpus_qdrant``, one collection per embedder). Fold k's
questions are then searched and judged through that store and that evaluator.

Usage::

    pairs = stard_pairs()
    for fold in range(FOLDS):
        trained = fold_models(bench_settings(), pairs, fold)
        store, pipeline = bench_retrieval(trained.settings)   # trained.settings: fold k's embedder and evaluator
"""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

from benchmarks.metrics import load_queries
from config.settings import Settings
from provisioning.coverage_training import OutsideQuestion
from provisioning.train import TrainResult, train_models
from provisioning.training_pairs import DEFAULT_PAIRS, Pair

FOLDS = 5


def fold_assignment(n: int, folds: int = FOLDS) -> dict[int, int]:
    """Question index → fold (fixed, so all benchmarks use the same folds)."""
    return {i: k % folds for k, i in enumerate(random.Random(0).sample(range(n), n))}


def grouped_fold_assignment(groups: list[str], folds: int = FOLDS) -> list[int]:
    """Item → fold, keeping each group (e.g. the document an out-of-corpus question cites) in one fold: the largest
    groups first, each into the fold holding the fewest items so far."""
    sizes = Counter(groups)
    load = [0] * folds
    fold_of: dict[str, int] = {}
    for group, size in sorted(sizes.items(), key=lambda t: (-t[1], t[0])):
        fold_of[group] = min(range(folds), key=lambda k: (load[k], k))
        load[fold_of[group]] += size
    return [fold_of[g] for g in groups]


OUTSIDE_FOLDS = ("document", "question")


def outside_fold_assignment(questions: list[OutsideQuestion], by: str = "document", folds: int = FOLDS) -> list[int]:
    """Out-of-corpus question → fold: ``document`` keeps each cited document in one fold (what is scored is a gap no
    training question showed: an unknown gap); ``question`` splits them at random (new questions about documents
    other training questions cite: a known gap)."""
    if by == "document":
        return grouped_fold_assignment([q.document for q in questions], folds)
    if by == "question":
        order = fold_assignment(len(questions), folds)
        return [order[i] for i in range(len(questions))]
    raise ValueError(f"out-of-corpus folds are by {' or '.join(OUTSIDE_FOLDS)}, got {by!r}")


def stard_pairs(path: str | Path = DEFAULT_PAIRS) -> list[Pair]:
    return [Pair(q["query"], tuple(q["gold"]), str(q["qid"])) for q in load_queries(str(path))]


def fold_models(settings: Settings, pairs: list[Pair], fold: int, folds: int = FOLDS, adapt: bool = True,
                progress: bool = True, extra: list[Pair] = (), outside: list[OutsideQuestion] = ()) -> TrainResult:
    """The models trained on every fold but ``fold`` (trained once, then reused from the model cache);
    ``adapt=False``: the evaluator alone, on all those questions, over the base embedder. ``extra`` pairs (already
    outside ``fold``, e.g. out-of-corpus questions with no gold) are added to the training. ``outside``: the
    out-of-corpus questions (already outside ``fold``) the coverage check learns from; none: no coverage check."""
    fold_of = fold_assignment(len(pairs), folds)
    return train_models(settings, pairs=[p for i, p in enumerate(pairs) if fold_of[i] != fold] + list(extra),
                        adapt=adapt, progress=progress, install_links=False, outside=list(outside))


def fold_questions(pairs: list[Pair], fold: int, folds: int = FOLDS) -> list[int]:
    fold_of = fold_assignment(len(pairs), folds)
    return [i for i in range(len(pairs)) if fold_of[i] == fold]
