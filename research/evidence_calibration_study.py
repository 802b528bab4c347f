"""Which inputs calibrate the evidence model on the short and on the long questions alike? (issue 48: pass rate
within 0.05 of the share of good evidence and ECE <= 0.05 on each slice)

Reads the out-of-fold rows `benchmarks/judge_calibration.py` writes (each question's top-20 passage logits from the
fold models that never saw it) and, per outer fold, refits only the evidence model (logistic, C=1, on the judged 5;
threshold of the best accuracy on its training rows) on the other folds' in-corpus rows, then scores the fold's rows:
short and long in-corpus questions, the local LLM's retellings (stress only) and the out-of-corpus questions. The
inputs tried: the best, best-two mean and mean logits (the recipe before 2026-12-07), with the question's length, with
the squared best logit, and the shipped one, each of the three through the sigmoid.

    .venv/bin/python research/evidence_calibration_study.py [--rows benchmarks/cache/evaluator_oof_base_5.jsonl]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.judge_calibration import (
    IN_CORPUS,
    LONG_QUESTION,
    OUT_OF_CORPUS,
    RETOLD,
    auc,
    expected_calibration_error,
)
from components.evaluators.relevance_evaluator import evidence_features, linear, sigmoid
from provisioning.evaluator_training import best_threshold, fit_logistic

JUDGED = 5
Inputs = Callable[[dict], list[float]]


def logits(row: dict) -> list[float]:
    """The recipe before 2026-12-07: the best, best-two mean and mean passage logits of the judged 5."""
    ranked = sorted(row["logits"][:JUDGED], reverse=True)
    return [ranked[0], sum(ranked[:2]) / 2, sum(ranked) / len(ranked)]


RECIPES: dict[str, Inputs] = {
    "logits: best, best two, mean (before)": logits,
    "+ log length": lambda r: [*logits(r), math.log(r["chars"])],
    "+ long (>= 30 characters)": lambda r: [*logits(r), float(r["chars"] >= LONG_QUESTION)],
    "+ log length, × best": lambda r: [*(f := logits(r)), math.log(r["chars"]), math.log(r["chars"]) * f[0]],
    "+ best² (not monotone)": lambda r: [*(f := logits(r)), f[0] ** 2],
    "shipped: the sigmoid of each": lambda r: evidence_features(r["logits"][:JUDGED]),
}


def good(row: dict) -> int:
    return int(any(row["labels"][:JUDGED]))


def slices(rows: list[dict]) -> dict[str, list[dict]]:
    inside = [r for r in rows if r.get("kind", IN_CORPUS) == IN_CORPUS]
    return {"short": [r for r in inside if r["chars"] < LONG_QUESTION],
            "long": [r for r in inside if r["chars"] >= LONG_QUESTION],
            "retold (stress)": [r for r in rows if r.get("kind") == RETOLD],
            "out of corpus": [r for r in rows if r.get("kind") == OUT_OF_CORPUS]}


def cross_fit(rows: list[dict], inputs: Inputs, threshold_rule: str) -> list[tuple[dict, float, float]]:
    """(row, probability, threshold) for every row, from the evidence model fitted on the other folds' in-corpus
    rows."""
    scored = []
    for fold in sorted({r["fold"] for r in rows}):
        train = [r for r in rows if r["fold"] != fold and r.get("kind", IN_CORPUS) == IN_CORPUS]
        x, y = [inputs(r) for r in train], [good(r) for r in train]
        model = fit_logistic(x, y, 1.0)
        threshold = (best_threshold([sigmoid(linear(model, v)) for v in x], y) if threshold_rule == "best accuracy"
                     else 0.5)
        scored += [(r, sigmoid(linear(model, inputs(r))), threshold) for r in rows if r["fold"] == fold]
    return scored


def table(rows: list[dict]) -> str:
    lines = ["| evidence model inputs | threshold | slice | n | good | pass | pass − good | AUC | ECE |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, inputs in RECIPES.items():
        for rule in ("best accuracy", "0.5"):
            scored = cross_fit(rows, inputs, rule)
            by_row = {id(r): (p, t) for r, p, t in scored}
            for label, chosen in slices(rows).items():
                if not chosen:
                    continue
                probs = [by_row[id(r)][0] for r in chosen]
                labels = [good(r) for r in chosen]
                passed = sum(p >= by_row[id(r)][1] for p, r in zip(probs, chosen, strict=True)) / len(chosen)
                share = sum(labels) / len(chosen)
                area = auc([p for p, g in zip(probs, labels, strict=True) if g],
                           [p for p, g in zip(probs, labels, strict=True) if not g])
                lines.append(f"| {name} | {rule} | {label} | {len(chosen)} | {share:.3f} | {passed:.3f} | "
                             f"{passed - share:+.3f} | {area:.3f} | {expected_calibration_error(probs, labels):.3f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="benchmarks/cache/evaluator_oof_base_5.jsonl")
    parser.add_argument("--out", default="research/reports/evidence_calibration_study.md")
    args = parser.parse_args()
    rows = [json.loads(line) for line in Path(args.rows).read_text(encoding="utf-8").splitlines()]
    text = (f"# Evidence calibration: the evidence model's inputs (issue 48)\n\nCommand: `.venv/bin/python "
            f"research/evidence_calibration_study.py --rows {args.rows}`\n\n{table(rows)}\n")
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
