"""Does the judge tell good evidence from bad? The trained evaluator (5-fold cross-validated) and the LLM judge.

For every STARD train question, the hybrid top 20 of the question as asked (round 1 of the agentic pipeline).
"Good evidence" = a gold article is among the judged top ``JUDGE_TOP_N`` (5) passages.

- **Evaluator**, out of fold: the questions are split into 5 folds (`benchmarks.folds`); for each fold the models
  are trained exactly as ``python -m pipelines train`` trains them, on the other four folds (``--embedder adapted``:
  the embedder on 80 % of those questions, the evaluator on the other 20 % through the adapted store; ``base``: the
  evaluator alone on all of them over zero-shot e5-small), and the held-out fold is searched and judged with them.
  Reported: AUC of the evidence probability, expected calibration error (10 bins), accuracy and pass rate at the trained
  threshold, per fold and pooled; the evaluator as a reranker of the top 20 (MRR@10, R@10 against the hybrid order);
  seconds per judgement of 5 passages.
- **Slices** side by side: short and long questions, those needing the 刑法, the local LLM's retellings
  (``--retold``, a stress set judged by their source question's fold) and questions the corpus cannot answer
  (``--out-of-corpus``, folds grouped by the document they cite).
- **LLM judge** (`LLMQualityJudge`, the LLM the settings resolve) on a fixed sample of the same out-of-fold
  questions, and **both** (evaluator decides, the LLM writes the note on a fail): AUC and LLM calls.

    .venv/bin/python benchmarks/judge_calibration.py [--folds 5] [--llm-sample 60] [--embedder adapted|base]
        [--report-only]

Out-of-fold scores are kept in ``benchmarks/cache/`` (not in git), so ``--report-only`` rewrites the report.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from benchmarks.folds import (
    OUTSIDE_FOLDS,
    fold_assignment,
    fold_models,
    fold_questions,
    grouped_fold_assignment,
    outside_fold_assignment,
    stard_pairs,
)
from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, query_metrics
from benchmarks.retrieval import CRIMINAL_LAW, DEFAULT_QUERIES
from components.evaluators.coverage_check import CoverageCheck
from components.evaluators.relevance_evaluator import RelevanceEvaluator
from helpers.statutes.labels import key_law
from pipelines.retrieval import retrieve
from pipelines.stores import open_document_store
from provisioning.coverage_training import CoverageRecipe, OutsideQuestion
from provisioning.phases import Phases
from provisioning.train import corpus_settings, train_coverage_model
from provisioning.training_pairs import Pair

CACHE = Path(__file__).resolve().parent / "cache"
OUT_OF_CORPUS_QUERIES = DEFAULT_QUERIES.parent / "stard_train_out_of_corpus.jsonl"
RETOLD_QUERIES = (Path(__file__).resolve().parent.parent / "training_data" / "consultations"
                  / "stard_consultations.jsonl")
IN_CORPUS, OUT_OF_CORPUS, RETOLD = "in corpus", "out of corpus", "retold"
LONG_QUESTION = 30  # characters: STARD's long questions are real people's wording (issue 48)
CANDIDATES = 20


def auc(positives: list[float], negatives: list[float]) -> float:
    """P(a positive outscores a negative), ties counting half."""
    if not positives or not negatives:
        return float("nan")
    wins = sum((p > n) + 0.5 * (p == n) for p in positives for n in negatives)
    return wins / (len(positives) * len(negatives))


def expected_calibration_error(probabilities: list[float], labels: list[int], bins: int = 10) -> float:
    """Σ over equal-width bins of (share of rows) × |mean probability − observed rate|, that is
    Σ |Σ probabilities − Σ labels| over the bins, divided by the number of rows."""
    probability_sums, label_sums = [0.0] * bins, [0] * bins
    for p, y in zip(probabilities, labels, strict=True):
        b = min(int(p * bins), bins - 1)  # [b / bins, (b + 1) / bins), the last bin closed
        probability_sums[b] += p
        label_sums[b] += y
    return sum(abs(s - y) for s, y in zip(probability_sums, label_sums, strict=True)) / len(probabilities)


def calibrated_ece(probabilities: list[float], draws: int = 1000, seed: int = 0) -> tuple[float, float]:
    """The ECE that a perfectly calibrated judge shows on a slice of this size with these probabilities (each label
    drawn with its own probability, ``draws`` times): the mean and the 95th percentile. It is the binning's sampling
    noise alone: on a slice where it reaches the goal (ECE ≤ 0.05), an observed ECE within it cannot be told from
    calibration."""
    rng = random.Random(seed)
    errors = sorted(expected_calibration_error(probabilities, [int(rng.random() < p) for p in probabilities])
                    for _ in range(draws))
    return statistics.mean(errors), errors[round(0.95 * (draws - 1))]


def feedback_outside(feedback: list[Pair], scored: list[Pair]) -> list[Pair]:
    """The feedback pairs a fold may train on: none about a question it scores (the same id, as a retelling of a
    STARD question keeps its source's, or the same text)."""
    ids, texts = {p.qid for p in scored}, {p.query for p in scored}
    return [p for p in feedback if p.qid not in ids and p.query not in texts]


def cross_validate(settings, pairs: list[Pair], folds: int, adapt: bool, out: Path,
                   outside: list[Pair] = (), outside_folds: list[int] = (), train_outside: bool = False,
                   feedback: list[Pair] = (), retold: list[Pair] = ()) -> list[dict]:
    """Out-of-fold rows: per question its fold, the top-20 keys, labels, passage logits and evidence probability,
    each from the fold models (`benchmarks.folds`) that never saw the question, searched through that fold's store.
    ``outside`` (questions the corpus cannot answer) are judged by the models of their fold in ``outside_folds``;
    with ``train_outside`` the other folds' ones are negatives in the evaluator's training. ``feedback`` pairs (what
    ``feedback --export`` writes) join every fold's training, less those about the questions it scores. ``retold``
    questions (the local LLM's retellings of STARD questions, keeping their source's qid) are judged by the models
    of their source's fold, which never saw the source."""
    rows = []
    for fold in range(folds):
        extra = [p for p, k in zip(outside, outside_folds, strict=True) if k != fold] if train_outside else []
        extra += feedback_outside(feedback, [pairs[i] for i in fold_questions(pairs, fold, folds)])
        trained = fold_models(settings, pairs, fold, folds, adapt=adapt, extra=extra)
        store, pipeline = bench_retrieval(corpus_settings(trained.settings), top_k=CANDIDATES)
        evaluator = RelevanceEvaluator(model=str(trained.model), top_n=settings.judge_top_n)
        evaluator.warm_up()
        embedder = trained.trained.get("embedder") or {}
        judged = [(pairs[i], IN_CORPUS) for i in fold_questions(pairs, fold, folds)]
        judged += [(pair, OUT_OF_CORPUS) for pair, k in zip(outside, outside_folds, strict=True) if k == fold]
        held_out = {pairs[i].qid for i in fold_questions(pairs, fold, folds)}
        judged += [(pair, RETOLD) for pair in retold if pair.qid in held_out]
        for pair, kind in judged:
            documents = retrieve(pipeline, [pair.query], top_k=CANDIDATES)
            t = time.perf_counter()
            evaluation = evaluator.run(query=pair.query, documents=documents)["evaluation"]
            judge_seconds = time.perf_counter() - t
            rows.append({"qid": pair.qid, "fold": fold, "kind": kind, "chars": len(pair.query),
                         "keys": [d.meta["key"] for d in documents], "gold": list(pair.gold),
                         "labels": [int(d.meta["key"] in pair.gold) for d in documents],
                         "logits": evaluator.passage_logits(pair.query, documents),
                         "probability": evaluation["probability"], "threshold": evaluation["threshold"],
                         "judge_seconds": judge_seconds, "train_seconds": embedder.get("train_seconds", 0.0)})
        store.close()
    out.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows), encoding="utf-8")
    return rows


def slice_metrics(rows: list[dict], judged: int) -> dict[str, float]:
    """What the judge does on a slice of questions: good share, pass rate, AUC, ECE (no retrieval metrics, so that
    out-of-corpus questions, which have no gold, can be a slice)."""
    good = [int(any(r["labels"][:judged])) for r in rows]
    probs = [r["probability"] for r in rows]
    passed = [p >= r["threshold"] for p, r in zip(probs, rows, strict=True)]
    return {"questions": len(rows), "good": sum(good) / len(rows), "pass_rate": sum(passed) / len(rows),
            # with the coverage check after the judge (rows carry ``flagged`` when it ran): a flag fails the evidence
            "checked_pass_rate": sum(ok and not r.get("flagged", False) for ok, r in zip(passed, rows, strict=True))
            / len(rows),
            "auc": auc([p for p, g in zip(probs, good, strict=True) if g],
                       [p for p, g in zip(probs, good, strict=True) if not g]),
            "ece": expected_calibration_error(probs, good), "calibrated_ece": calibrated_ece(probs)}


def slices_table(rows: list[dict], judged: int) -> str:
    """Short, long, 刑法, retold and out-of-corpus questions side by side (issue 48: no slice hides behind the
    mean)."""
    inside = [r for r in rows if r.get("kind", IN_CORPUS) == IN_CORPUS]
    slices = [(f"short (< {LONG_QUESTION} characters)", [r for r in inside if r.get("chars", 0) < LONG_QUESTION]),
              (f"long (>= {LONG_QUESTION} characters)", [r for r in inside if r.get("chars", 0) >= LONG_QUESTION]),
              ("gold in the 刑法", [r for r in inside if any(key_law(k) == CRIMINAL_LAW for k in r["gold"])]),
              ("retold by the local LLM (a stress set, not a yardstick)", [r for r in rows if r.get("kind") == RETOLD]),
              ("out of corpus (evaluator folds grouped by the cited document)",
               [r for r in rows if r.get("kind") == OUT_OF_CORPUS])]
    checked = any("flagged" in r for r in rows)
    extra = (" with the coverage check | flagged | checked pass − good |", "---|---|---|") if checked else ("", "")
    header = "| questions | n | good | pass rate | pass − good | AUC | ECE | ECE of a calibrated judge (mean / 95 %) |"
    lines = [header + extra[0], f"|---|---|---|---|---|---|---|---|{extra[1]}"]
    for name, chosen in slices:
        if chosen and "chars" in chosen[0]:
            m = slice_metrics(chosen, judged)
            coverage = (f" {m['checked_pass_rate']:.3f} | {statistics.mean(r['flagged'] for r in chosen):.3f} | "
                        f"{m['checked_pass_rate'] - m['good']:+.3f} |") if checked else ""
            lines.append(f"| {name} | {m['questions']} | {m['good']:.3f} | {m['pass_rate']:.3f} | "
                         f"{m['pass_rate'] - m['good']:+.3f} | {m['auc']:.3f} | {m['ece']:.3f} | "
                         f"{m['calibrated_ece'][0]:.3f} / {m['calibrated_ece'][1]:.3f} |{coverage}")
        else:
            lines.append(f"| {name} | not run | | | | | | |{' | | |' if checked else ''}")
    return "\n".join(lines)


def flag_coverage(rows: list[dict], pairs: list[Pair], retold: list[Pair], outside_queries: list[dict], by: str,
                  folds: int) -> None:
    """Set ``flagged`` on every row: whether the shipped coverage check, trained as `train` trains it on the
    row's training folds (the in-corpus questions of the other folds and the out-of-corpus questions outside the
    row's fold, split ``by`` document or question), flags the row's question. The bench corpus holds none of the
    documents the out-of-corpus questions cite, so a flag is never silenced by the store."""
    outside = [OutsideQuestion(q["query"], q["cited"][0], str(q["qid"])) for q in outside_queries]
    outside_fold = dict(zip((q.qid for q in outside), outside_fold_assignment(outside, by, folds), strict=True))
    fold_of = fold_assignment(len(pairs), folds)
    checks = []
    for fold in range(folds):
        model, _ = train_coverage_model([p for i, p in enumerate(pairs) if fold_of[i] != fold],
                                        [q for q in outside if outside_fold[q.qid] != fold], CoverageRecipe(), Phases())
        checks.append(CoverageCheck(model=str(model)))
        checks[-1].warm_up()
    text = {(IN_CORPUS, p.qid): p.query for p in pairs} | {(RETOLD, p.qid): p.query for p in retold}
    text |= {(OUT_OF_CORPUS, q.qid): q.query for q in outside}
    for row in rows:
        kind, qid = row.get("kind", IN_CORPUS), str(row["qid"])
        check = checks[outside_fold[qid] if kind == OUT_OF_CORPUS else row["fold"]]
        row["flagged"] = check.run(query=text[(kind, qid)], evaluation={})["evaluation"]["coverage"]["flagged"]


def fold_metrics(rows: list[dict], judged: int) -> dict[str, float]:
    good = [int(any(r["labels"][:judged])) for r in rows]
    probs = [r["probability"] for r in rows]
    passed = [p >= r["threshold"] for p, r in zip(probs, rows, strict=True)]
    reranked = [query_metrics([k for _, k in sorted(zip(r["logits"], r["keys"], strict=True), key=lambda x: -x[0])],
                              r["gold"]) for r in rows]
    hybrid = [query_metrics(r["keys"], r["gold"]) for r in rows]
    return {
        "questions": len(rows), "good": sum(good) / len(rows),
        "auc": auc([p for p, g in zip(probs, good, strict=True) if g],
                   [p for p, g in zip(probs, good, strict=True) if not g]),
        "ece": expected_calibration_error(probs, good),
        "accuracy": sum(p == bool(g) for p, g in zip(passed, good, strict=True)) / len(rows),
        "pass_rate": sum(passed) / len(rows),
        "hybrid_mrr": statistics.mean(m["MRR@10"] for m in hybrid),
        "rerank_mrr": statistics.mean(m["MRR@10"] for m in reranked),
        "hybrid_r10": statistics.mean(m["R@10"] for m in hybrid),
        "rerank_r10": statistics.mean(m["R@10"] for m in reranked),
        "judge_ms": 1000 * statistics.median(r["judge_seconds"] for r in rows),
        "train_s": statistics.median(r["train_seconds"] for r in rows),
    }


def llm_rows(rows: list[dict], settings, sample: int, seed: int, out: Path) -> list[dict]:
    """The LLM judge on a fixed sample of the out-of-fold questions, reading the same passages (cached per qid)."""
    from components.evaluators.llm_quality_judge import LLMQualityJudge
    from provisioning.training_pairs import articles_by_key

    done = {r["qid"]: r for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())} if out.exists() else {}
    chosen = random.Random(seed).sample(rows, min(sample, len(rows)))
    todo = [r for r in chosen if r["qid"] not in done]
    if todo:
        store = open_document_store(settings)
        by_key = articles_by_key(store)
        judge = LLMQualityJudge(top_n=settings.judge_top_n, pass_score=settings.pass_score)
        judge.warm_up()
        queries = {str(q["qid"]): q["query"] for q in load_queries(DEFAULT_QUERIES)}
        for n, row in enumerate(todo, start=1):
            documents = [by_key[key] for key in row["keys"]]
            evaluation = judge.run(query=queries[row["qid"]], documents=documents)["evaluation"]
            done[row["qid"]] = {"qid": row["qid"], "total": evaluation["total"], "passed": evaluation["passed"],
                                "error": evaluation["error"], "seconds": evaluation["seconds"]}
            print(f"llm {n}/{len(todo)} {json.dumps(done[row['qid']], ensure_ascii=False)}", flush=True)
            out.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in done.values()), encoding="utf-8")
        store.close()
    return [{**done[r["qid"]], "oof": r} for r in chosen]


def report(rows: list[dict], llm: list[dict], judged: int, command: str, llm_name: str, embedder: str) -> str:
    slices = slices_table(rows, judged)
    rows = [r for r in rows if r.get("kind", IN_CORPUS) == IN_CORPUS]
    folds = sorted({r["fold"] for r in rows})
    per_fold = [fold_metrics([r for r in rows if r["fold"] == f], judged) for f in folds]
    pooled = fold_metrics(rows, judged)

    def cell(name: str, digits: int = 3) -> str:
        values = [m[name] for m in per_fold]
        return (f"{pooled[name]:.{digits}f} "
                f"({statistics.mean(values):.{digits}f} ± {statistics.stdev(values):.{digits}f})")

    fold_lines = "\n".join(f"| {f} | {m['questions']} | {m['good']:.3f} | {m['auc']:.3f} | {m['ece']:.3f} | "
                           f"{m['accuracy']:.3f} | {m['pass_rate']:.3f} | {m['hybrid_mrr']:.3f} | "
                           f"{m['rerank_mrr']:.3f} | "
                           f"{m['judge_ms']:.2f} | {m['train_s']:.1f} |" for f, m in zip(folds, per_fold, strict=True))
    criminal = [r for r in rows if any(key_law(key) == CRIMINAL_LAW for key in r["gold"])]
    criminal_part = "none among these questions"
    if criminal:
        m = fold_metrics(criminal, judged)
        criminal_part = f"""| questions | good | AUC | ECE | accuracy | pass rate | R@10 hybrid / reranked | \
MRR@10 hybrid / reranked |
|---|---|---|---|---|---|---|---|
| {m['questions']} | {m['good']:.3f} | {m['auc']:.3f} | {m['ece']:.3f} | {m['accuracy']:.3f} | {m['pass_rate']:.3f} | \
{m['hybrid_r10']:.3f} / {m['rerank_r10']:.3f} | {m['hybrid_mrr']:.3f} / {m['rerank_mrr']:.3f} |"""
    llm_part = "not run"
    if llm:
        good = [int(any(x["oof"]["labels"][:judged])) for x in llm]
        totals, probs = [x["total"] for x in llm], [x["oof"]["probability"] for x in llm]
        fails = sum(p < x["oof"]["threshold"] for p, x in zip(probs, llm, strict=True))
        llm_auc = auc([t for t, g in zip(totals, good, strict=True) if g],
                      [t for t, g in zip(totals, good, strict=True) if not g])
        ev_auc = auc([p for p, g in zip(probs, good, strict=True) if g],
                     [p for p, g in zip(probs, good, strict=True) if not g])
        llm_part = f"""{len(llm)} of the out-of-fold questions (fixed sample), {sum(good)} with a gold article judged.
LLM: {llm_name}; errors {sum(bool(x['error']) for x in llm)}; \
median {statistics.median(x['seconds'] for x in llm):.1f} s per judgement.

| judge | AUC (gold judged vs not) | passed | LLM judge calls per question |
|---|---|---|---|
| evaluator | {ev_auc:.3f} | {len(llm) - fails} | 0 |
| llm (4 × 10 rubric) | {llm_auc:.3f} | {sum(x['passed'] for x in llm)} | 1 |
| both (evaluator decides, LLM note on a fail) | {ev_auc:.3f} | {len(llm) - fails} | {fails / len(llm):.2f} |"""
    return f"""# Judge calibration (STARD train, out of fold)

Command: `{command}`
{len(rows)} questions, {len(folds)} folds; the judged passages are the hybrid top {judged} of the question as
asked; "good" = a gold article among them. Each fold's models are trained as `python -m pipelines train` trains
them, on the other four folds, and search and judge only the held-out fold ({embedder}). Pooled over all
out-of-fold questions, then per-fold mean ± standard deviation in brackets.

| metric | value |
|---|---|
| AUC of the evidence probability | {cell('auc')} |
| expected calibration error (10 bins) | {cell('ece')} |
| accuracy at the trained threshold | {cell('accuracy')} |
| pass rate (share of good evidence: {pooled['good']:.3f}) | {cell('pass_rate')} |
| MRR@10, hybrid top 20 as ranked | {cell('hybrid_mrr')} |
| MRR@10, top 20 reranked by the evaluator | {cell('rerank_mrr')} |
| R@10, hybrid / reranked | {pooled['hybrid_r10']:.3f} / {pooled['rerank_r10']:.3f} |
| ms per judgement of 5 passages (median) | {cell("judge_ms", 2)} |

| fold | questions | good | AUC | ECE | accuracy | pass rate | MRR@10 hybrid | MRR@10 reranked | ms / judgement | \
embedder train s |
|---|---|---|---|---|---|---|---|---|---|---|
{fold_lines}

## Side by side: short, long, 刑法, retold and out-of-corpus questions

"Out of corpus": `{OUT_OF_CORPUS_QUERIES.name}`, questions whose every gold article lies in a document the corpus
does not hold; no evidence of theirs is good, so every pass is a wrong pass. "Retold": `{RETOLD_QUERIES.name}`, the
local LLM's consultation-style retellings of STARD train questions, each judged by the models of its source's fold.

{slices}

## The questions that need the 刑法 (gold in 中华人民共和国刑法), out of fold

{criminal_part}

## The LLM judge and `both` on the same questions

{llm_part}
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--out-of-corpus", default=str(OUT_OF_CORPUS_QUERIES),
                        help="questions the corpus cannot answer, judged beside the others ('' to skip)")
    parser.add_argument("--retold", default=str(RETOLD_QUERIES),
                        help="the local LLM's retellings of STARD questions, judged by their source's fold "
                             "('' to skip)")
    parser.add_argument("--train-out-of-corpus", action="store_true",
                        help="the other folds' out-of-corpus questions are negatives in the evaluator's training")
    parser.add_argument("--feedback", default="",
                        help="pairs from answer feedback (`feedback --export`), added to every fold's training")
    parser.add_argument("--coverage-folds", choices=(*OUTSIDE_FOLDS, "none"), default="document",
                        help="the coverage check after the judge, trained per fold with the out-of-corpus questions "
                             "split by cited document (unknown gaps scored) or by question (known gaps); none: "
                             "the judge alone")
    parser.add_argument("--llm-sample", type=int, default=60, help="questions the LLM judge reads (0 = skip)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--report-only", action="store_true", help="report from the cached out-of-fold scores")
    parser.add_argument("--embedder", choices=("adapted", "base"), default="adapted",
                        help="adapted: each fold's own fine-tuned embedder (the shipped recipe); base: zero-shot e5")
    parser.add_argument("--out", default="benchmarks/reports/judge_calibration.md")
    args = parser.parse_args()
    settings = bench_settings()
    CACHE.mkdir(exist_ok=True)
    oof_file = CACHE / (f"evaluator_oof_{args.embedder}_{args.folds}{'_ooc' if args.train_out_of_corpus else ''}"
                        f"{'_' + Path(args.feedback).stem if args.feedback else ''}.jsonl")
    feedback = [Pair(q["query"], tuple(q["gold"]), str(q.get("qid", f"feedback-{i}")))
                for i, q in enumerate(load_queries(args.feedback) if args.feedback else [], start=1)]
    if args.report_only:
        rows = [json.loads(line) for line in oof_file.read_text(encoding="utf-8").splitlines()]
    else:
        outside = load_queries(args.out_of_corpus) if args.out_of_corpus else []
        rows = cross_validate(settings, stard_pairs(args.queries), args.folds, args.embedder == "adapted", oof_file,
                              [Pair(q["query"], (), str(q["qid"])) for q in outside],
                              grouped_fold_assignment([q["cited"][0] for q in outside], args.folds),
                              args.train_out_of_corpus, feedback,
                              stard_pairs(args.retold) if args.retold else [])
    if args.coverage_folds != "none" and args.out_of_corpus:
        flag_coverage(rows, stard_pairs(args.queries), stard_pairs(args.retold) if args.retold else [],
                      load_queries(args.out_of_corpus), args.coverage_folds, args.folds)
    llm_file = CACHE / f"llm_judge_rows_{args.embedder}.jsonl"
    inside = [r for r in rows if r.get("kind", IN_CORPUS) == IN_CORPUS]
    llm = llm_rows(inside, settings, args.llm_sample, args.seed, llm_file) if args.llm_sample else []
    from llm_access.factory import resolve_endpoint

    endpoint = resolve_endpoint(settings) if llm else None
    training = ("adapted embedder: fine-tuned on 80 % of the four folds' questions, evaluator on the other 20 %"
                if args.embedder == "adapted" else "zero-shot e5-small; the evaluator trained on all four folds")
    if args.train_out_of_corpus:
        training += "; the other folds' out-of-corpus questions are negatives in its training"
    if feedback:
        training += f"; plus {len(feedback)} feedback pairs from `{args.feedback}` (none about a scored question)"
    if any("flagged" in r for r in rows):
        training += (f"; the coverage check after the judge, trained on the other folds' questions with the "
                     f"out-of-corpus ones split by {args.coverage_folds}")
    text = report(rows, llm, settings.judge_top_n,
                  f".venv/bin/python benchmarks/judge_calibration.py {' '.join(sys.argv[1:])}",
                  f"{endpoint.kind} (`{endpoint.model}`)" if endpoint else "", training)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
