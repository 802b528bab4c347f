"""How many articles should the answer read? Gold in the evidence and gold cited, by evidence size (issue 62, 2).

1. **Retrieval** (all 891 STARD train questions, out of fold): from the rows `benchmarks/judge_calibration.py`
   cached (the hybrid top 20 of each question as asked, and the probability the evaluator of its fold gave the top
   5), the share of questions with a gold article among the first k (5, 6, 8, 10), and the same when the size
   follows the judge's verdict: ``EVIDENCE_TOP_N`` (5) when the evaluator passes the evidence, k when it does not.
2. **End to end** (optional, ``--runs``): agentic runs of `benchmarks/agentic.py` on the same questions with two
   evidence sizes (``EVIDENCE_TOP_N_UNSURE``), compared on the questions both logs hold: gold among the articles
   the answer read (the best round's first k), gold articles the model cited (recall), seconds and LLM calls.
   Only answers whose evidence failed the judge read a different number of articles, so the runs ask questions
   whose round 1 failed out of fold (``--failed-questions`` writes them).

    .venv/bin/python benchmarks/judge_calibration.py --embedder base --llm-sample 0   # the out-of-fold rows
    .venv/bin/python benchmarks/evidence_size.py --failed-questions benchmarks/runs/failed_round1.jsonl
    EVIDENCE_TOP_N_UNSURE=5 .venv/bin/python benchmarks/agentic.py --queries benchmarks/runs/failed_round1.jsonl \\
        --sample 40 --modes agentic --embedder base --log benchmarks/runs/evidence_unsure_5.jsonl   # and with 8
    .venv/bin/python benchmarks/evidence_size.py --runs 5=benchmarks/runs/evidence_unsure_5.jsonl,8=...
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.judge_calibration import CACHE, IN_CORPUS, LONG_QUESTION
from benchmarks.retrieval import DEFAULT_QUERIES
from helpers.records.rounds import Round, best_round

SIZES = (5, 6, 8, 10)
SURE = 5  # EVIDENCE_TOP_N


def has_gold(keys: list[str], gold: list[str], size: int) -> bool:
    return bool(set(keys[:size]) & set(gold))


def retrieval_table(rows: list[dict]) -> str:
    lines = ["| questions | n | " + " | ".join(f"top {k}" for k in SIZES)
             + " | 5 when passed, 8 when not (mean size) | judge pass rate |", "|" + "---|" * (len(SIZES) + 4)]
    slices = (("all", rows), ("short (< 30 characters)", [r for r in rows if r["chars"] < LONG_QUESTION]),
              ("long (≥ 30 characters)", [r for r in rows if r["chars"] >= LONG_QUESTION]),
              ("the judge failed them", [r for r in rows if r["probability"] < r["threshold"]]))
    for name, part in slices:
        fixed = [statistics.mean(has_gold(r["keys"], r["gold"], k) for r in part) for k in SIZES]
        sizes = [SURE if r["probability"] >= r["threshold"] else 8 for r in part]
        adaptive = statistics.mean(has_gold(r["keys"], r["gold"], k) for r, k in zip(part, sizes, strict=True))
        passed = statistics.mean(r["probability"] >= r["threshold"] for r in part)
        lines.append(f"| {name} | {len(part)} | " + " | ".join(f"{v:.3f}" for v in fixed)
                     + f" | {adaptive:.3f} ({statistics.mean(sizes):.2f}) | {passed:.3f} |")
    return "\n".join(lines)


def best_keys(row: dict) -> list[str]:
    """The best round's articles, chosen by the loop's own rule (`best_round`) from the logged totals."""
    rounds = [Round(number=i, queries=[], documents=[], evaluation={"total": entry["total"]})
              for i, entry in enumerate(row["rounds"])]
    best = best_round(rounds)
    return row["rounds"][best.number]["keys"] if best else []


def runs_table(runs: dict[str, list[dict]], gold: dict[int, list[str]]) -> str:
    common = set.intersection(*({r["qid"] for r in rows} for rows in runs.values()))
    lines = [f"{len(common)} questions in every log.", "",
             ("| evidence size when the judge fails | gold among the articles read | gold cited by the model (recall) "
             "| gold cited, the answer's citations in all | seconds (mean / median) | LLM calls (mean) |"),
             "|---|---|---|---|---|---|"]
    for label, rows in runs.items():
        part = [r for r in rows if r["qid"] in common]
        # an answer whose last round passed read EVIDENCE_TOP_N (5) in either run
        read = statistics.mean(has_gold(best_keys(r), gold[r["qid"]], SURE if r["situation"] == "sufficient"
                                        else int(label)) for r in part)
        seconds = [r["seconds"] for r in part]
        lines.append(f"| {label} | {read:.3f} | {statistics.mean(r['model_citation_recall'] for r in part):.3f} | "
                     f"{statistics.mean(r['citation_recall'] for r in part):.3f} | {statistics.mean(seconds):.1f} / "
                     f"{statistics.median(seconds):.1f} | {statistics.mean(r['llm_calls'] for r in part):.2f} |")
    first, *others = runs
    by_qid = {label: {r["qid"]: r for r in rows} for label, rows in runs.items()}
    for label in others:
        for metric in ("model_citation_recall", "citation_recall"):
            diffs = [by_qid[label][q][metric] - by_qid[first][q][metric] for q in sorted(common)]
            low, high = bootstrap_interval(diffs)
            lines.append(f"\n{label} − {first}, {metric}: {statistics.mean(diffs):+.3f} (95 % paired bootstrap "
                         f"{low:+.3f} … {high:+.3f}; better on {sum(d > 0 for d in diffs)}, worse on "
                         f"{sum(d < 0 for d in diffs)} questions)")
    return "\n".join(lines)


def bootstrap_interval(values: list[float], draws: int = 5000, seed: int = 0) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean of ``values`` resampled with replacement."""
    rng = random.Random(seed)
    means = sorted(statistics.mean(rng.choices(values, k=len(values))) for _ in range(draws))
    return means[int(0.025 * draws)], means[int(0.975 * draws) - 1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--oof", default=str(CACHE / "evaluator_oof_base_5.jsonl"))
    parser.add_argument("--failed-questions", default="", help="write the questions whose round 1 failed here")
    parser.add_argument("--runs", default="", help="size=log,size=log: agentic.py logs to compare")
    parser.add_argument("--out", default="")
    args = parser.parse_args()
    oof = Path(args.oof)
    if not oof.exists():
        sys.exit(f"{oof} is missing: run benchmarks/judge_calibration.py --embedder base --llm-sample 0 first")
    rows = [r for r in map(json.loads, oof.read_text("utf-8").splitlines()) if r["kind"] == IN_CORPUS]
    if args.failed_questions:
        failed = {r["qid"] for r in rows if r["probability"] < r["threshold"]}
        lines = [line for line in DEFAULT_QUERIES.read_text("utf-8").splitlines()
                 if str(json.loads(line)["qid"]) in failed]
        Path(args.failed_questions).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {len(lines)} questions whose round 1 failed out of fold to {args.failed_questions}")
    text = (f"# Evidence size\n\nCommand: `.venv/bin/python benchmarks/evidence_size.py {' '.join(sys.argv[1:])}`\n\n"
            "Gold among the first k of the hybrid order (zero-shot e5-small; the judge: each fold's evaluator, out "
            "of fold):\n\n" + retrieval_table(rows) + "\n")
    if args.runs:
        gold = {int(r["qid"]): r["gold"] for r in map(json.loads, DEFAULT_QUERIES.read_text("utf-8").splitlines())}
        runs = {}
        for item in args.runs.split(","):
            label, path = item.split("=", 1)
            runs[label] = [json.loads(line) for line in Path(path).read_text("utf-8").splitlines()]
        text += "\nEnd to end (agentic mode, the embedded LLM):\n\n" + runs_table(runs, gold) + "\n"
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
