"""The evaluator the first answer uses while the full stack is still to be trained.

The full stack (the adapted embedder, then an evaluator trained through the whole corpus embedded with it) needs
the 23,490 articles encoded, which takes most of an hour on a slow 2-core machine. A first answer does not have
to wait for it: the **quick evaluator** is the same recipe (`provisioning.evaluator_training`) with the base
embedder, trained on the training questions whose gold articles lie in the few laws most of them cite
(`quick_laws`: 12 laws, 2,548 articles, 760 of the 832 STARD questions), indexed into a corpus store of their own.
That is a few minutes of encoding instead of an hour, and the judge it gives is informative: its out-of-fold AUC is
recorded in its ``evaluator.json`` (``oof_auc``) and printed.

It is installed only where no full evaluator is (`pipelines.judges.evaluator_scope`), and the full one replaces it
once trained; ``evaluator.json`` says which one judges (``scope``, shown by ``python -m pipelines stats``).

Usage::

    result = train_quick_evaluator(Settings.from_env())
    result.trained["oof_auc"], result.trained["questions"]
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from config.settings import Settings
from document_store.statute_db import StatuteDB
from helpers.statutes.labels import key_law
from pipelines.judges import evaluator_scope
from provisioning.phases import Phases
from provisioning.train import TrainResult, base_settings, default_outside, default_pairs, install, train_models
from provisioning.training_pairs import Pair, load_pairs

QUICK_CORPUS = "statutes_quick"
QUICK_SHARE = 0.9  # of the questions whose gold is in one law
QUICK_BUDGET = 3000  # articles at most


def quick_laws(pairs: list[Pair], law_sizes: dict[str, int], share: float = QUICK_SHARE,
               budget: int = QUICK_BUDGET) -> list[str]:
    """The laws most questions cite, in that order, until ``share`` of the questions is covered or one more law
    would pass ``budget`` articles (a question counts for a law when all its gold articles are in it)."""
    cited = Counter()
    for pair in pairs:
        laws = {key_law(key) for key in pair.gold}
        if len(laws) == 1:
            cited[laws.pop()] += 1
    chosen: list[str] = []
    covered = articles = 0
    for law, count in cited.most_common():
        size = law_sizes.get(law, 0)
        if not size:
            continue
        if covered >= share * len(pairs) or (chosen and articles + size > budget):
            break
        chosen.append(law)
        covered, articles = covered + count, articles + size
    if not chosen:
        raise ValueError("no training question has its gold articles in one law of the statute database")
    return chosen


def train_quick_evaluator(settings: Settings, *, phases: Phases | None = None, progress: bool = True,
                          install_link: bool = True) -> TrainResult:
    """Train (or reuse from the model cache) the quick evaluator and, with ``install_link``, install it unless a
    full evaluator is installed already; the coverage check too (seconds), unless one is installed."""
    from pipelines.indexing import law_sources

    pairs = load_pairs(default_pairs(settings))
    db = StatuteDB()
    laws = quick_laws(pairs, db.law_counts())
    inside = [p for p in pairs if {key_law(key) for key in p.gold} <= set(laws)]
    result = train_models(base_settings(settings), pairs=inside, sources=law_sources(laws, db), adapt=False,
                          progress=progress, install_links=False, phases=phases, scope="quick",
                          corpus_name=QUICK_CORPUS, outside=default_outside(settings))
    if install_link and evaluator_scope(settings) != "full":
        install(result.model, Path(settings.evaluator_model))
    if install_link and result.coverage is not None and not Path(settings.coverage_model).exists():
        install(result.coverage, Path(settings.coverage_model))
    return result
