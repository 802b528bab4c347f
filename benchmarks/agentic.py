"""End-to-end benchmark: `rag` (one retrieval, no judge) vs `agentic` (rewrite → retrieve → judge → loop).

On a fixed random sample of STARD queries over all current articles (the store of benchmarks/indexing.py),
with the LLM the settings resolve (the embedded llama.cpp model by default). Reports Recall@10 of the final
evidence, citation recall (gold articles cited in the answer / gold articles; also counting only the citations the
model wrote, not the article lists the answer stage appends), LLM calls per query
(router + rewriter + judge + answer; a reranker's calls are counted apart) and seconds per query.

Trained models are used out of fold (`benchmarks.folds`): with ``--embedder adapted`` (the default, as shipped)
each question is searched, in both modes, through the store of the embedder trained on the other folds of the
queries file, and with the trained evaluator as judge (``JUDGE=evaluator|both``) judged by that fold's evaluator;
never by a model that saw it. ``--embedder base`` searches the zero-shot e5-small store.

    .venv/bin/python benchmarks/agentic.py [--queries PATH] [--sample 60] [--seed 0] [--out PATH] [--modes rag,agentic]
        [--embedder adapted|base] [--folds-of STARD_TRAIN] [--min-chars 30]

The consultation-style set (`benchmarks/consultation_set.py`) is run with
``--queries training_data/consultations/stard_consultations.jsonl``: each story is judged by the models of its
STARD question's fold.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from application.rag import AgenticRAG
from benchmarks.folds import FOLDS, fold_assignment, fold_models, stard_pairs
from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from config.settings import Settings
from helpers.records.result import RAGResult
from llm_access.factory import resolve_endpoint
from pipelines.indexing import Indexer
from pipelines.judges import resolve_judge
from pipelines.stores import open_document_store
from provisioning.train import corpus_settings


def sample_queries(queries: list[dict[str, Any]], size: int, seed: int, min_chars: int = 0) -> list[dict[str, Any]]:
    """A fixed random sample (``seed``) of the questions of at least ``min_chars`` characters; all of them when
    fewer are left."""
    eligible = [q for q in queries if len(q["query"]) >= min_chars]
    return random.Random(seed).sample(eligible, min(size, len(eligible)))


def final_evidence_keys(result: RAGResult) -> list[str]:
    """The top-10 articles the answer was built from (best round in agentic mode, the one retrieval in rag)."""
    trace = result.trace
    if trace["rounds"]:
        best = next(r for r in trace["rounds"] if r["round"] == trace["best_round"])
        return [r["key"] for r in best["retrieved"]][:10]
    return [r["key"] for r in trace["route"].get("retrieved", [])][:10]


def citation_recalls(result: RAGResult, gold: list[str]) -> dict[str, float]:
    """Gold articles cited (verified) in the answer / gold articles; also counting only those the model wrote."""
    statutes = [c for c in result.citations if c["type"] == "statute" and c["verified"]]
    cited = {c["key"] for c in statutes}
    written = {c["key"] for c in statutes if c["by_model"]}
    return {"citation_recall": len(cited & set(gold)) / len(gold),
            "model_citation_recall": len(written & set(gold)) / len(gold)}


def score(result: RAGResult, gold: list[str]) -> dict[str, float]:
    """Recall@10 of the final evidence, citation recalls, LLM calls (the reranker's counted apart) and seconds."""
    evidence = set(final_evidence_keys(result))
    reranker_calls = result.trace.get("llm_calls", {}).get("reranker", 0)
    return {
        "recall@10": len(evidence & set(gold)) / len(gold),
        **citation_recalls(result, gold),
        "llm_calls": result.trace["llm_calls_total"] - reranker_calls,
        "reranker_calls": reranker_calls,
        "seconds": result.trace["total_seconds"],
    }


def round_summaries(result: RAGResult) -> list[dict[str, Any]]:
    """Per round: the judge's total, the queries and the top-20 keys (for offline analysis of the loop)."""
    return [{"round": r["round"], "total": r["evaluation"]["total"], "queries": r["queries"],
             "keys": [x["key"] for x in r["retrieved"]][:20]} for r in result.trace["rounds"]]


def read_log(path: Path, modes: list[str]) -> dict[str, dict[int, dict[str, Any]]]:
    """mode → qid → row, from a per-query log."""
    rows: dict[str, dict[int, dict[str, Any]]] = {m: {} for m in modes}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            if row["mode"] in rows:
                rows[row["mode"]][row["qid"]] = row
    return rows


def write_report(args: argparse.Namespace, sample: int, rows: dict[str, dict[int, dict[str, Any]]], note: str) -> str:
    """The report over the queries every mode finished (a paired comparison)."""
    paired = sorted(set.intersection(*(set(r) for r in rows.values())))
    chars = f" among those of at least {args.min_chars} characters" if args.min_chars else ""
    lines = []
    for mode, by_qid in rows.items():
        r = [by_qid[q] for q in paired]
        calls = [x["llm_calls"] for x in r]
        reranked = statistics.median(x.get("reranker_calls", 0) for x in r)
        secs = [x["seconds"] for x in r]
        written = [x["model_citation_recall"] for x in r if "model_citation_recall" in x]
        written_mean = f"{statistics.mean(written):.3f}" if len(written) == len(r) else "–"
        lines.append(f"| {mode} | {len(r)} | {statistics.mean(x['recall@10'] for x in r):.3f} | "
                     f"{statistics.mean(x['citation_recall'] for x in r):.3f} | {written_mean} | "
                     f"{statistics.median(calls):.0f} | "
                     f"{percentile(calls, 95):.0f} | {reranked:.0f} | {statistics.median(secs):.1f} | "
                     f"{percentile(secs, 95):.1f} |")
    report = f"""# Agentic vs plain RAG (sample of `{Path(args.queries).name}`)

Command: `.venv/bin/python benchmarks/agentic.py {' '.join(sys.argv[1:])}`
Sample: {sample} queries drawn with seed {args.seed} from `{Path(args.queries).name}`{chars}; all current articles indexed.
**Completed: {len(paired)} of {sample}** (queries that every mode finished; the table is over these only). {note}
Per-query rows (not kept in git) are in `{args.log}`.

| mode | queries | Recall@10 of final evidence | citation recall | of which written by the model | LLM calls median | LLM calls p95 | reranker calls median | s/query median | s/query p95 |
|---|---|---|---|---|---|---|---|---|---|
{chr(10).join(lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    return report


def fold_askers(settings: Settings, folds_path: str, queries: list[dict[str, Any]],
                embedder: str) -> tuple[dict[int, AgenticRAG], dict[int, int]]:
    """One `AgenticRAG` per fold of the sampled ``queries``, over the models trained without that fold's
    questions (the adapted embedder's store, the trained evaluator as judge), and each question's fold.
    ``folds_path``: the training questions the folds split (a consultation-set question is in the fold of the
    STARD question it retells: same qid)."""
    judge = resolve_judge(settings, require_model=False)
    all_queries = load_queries(folds_path)
    fold_of = fold_assignment(len(all_queries))
    fold_by_qid = {q["qid"]: fold_of[i] for i, q in enumerate(all_queries)}
    if embedder != "adapted" and judge == "llm":  # no trained model involved
        return dict.fromkeys(range(FOLDS), AgenticRAG(open_document_store(settings), settings)), fold_by_qid
    askers: dict[int, AgenticRAG] = {}
    pairs = stard_pairs(folds_path)
    for fold in sorted({fold_by_qid[q["qid"]] for q in queries}):
        trained = fold_models(settings, pairs, fold, adapt=embedder == "adapted").settings
        store = open_document_store(corpus_settings(trained))
        # a store written before BM25 weights were stored (or with other k1/b) ranks keyword hits wrongly until
        # its weights are rewritten: a no-op when they are current
        Indexer(store, corpus_settings(trained)).reweight()
        askers[fold] = AgenticRAG(store, dataclasses.replace(corpus_settings(trained), judge=settings.judge))
    return askers, fold_by_qid


def no_answer_message(qid: int, mode: str, result: RAGResult, log_path: Path, data_dir: Path) -> str:
    """Why the run stops when the LLM wrote no answer, and how to go on."""
    return (f"stopped at query {qid} ({mode}): the LLM wrote no answer ({result.answer_error}); nothing was logged "
            f"for it. Rows so far are in {log_path}; fix the LLM (see {data_dir / 'llm_server.log'}) and rerun "
            f"with --resume.")


def close(askers: dict[int, AgenticRAG]) -> None:
    for asker in {id(a): a for a in askers.values()}.values():
        asker.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0, help="seed of the random sample (another seed: other queries)")
    parser.add_argument("--out", default="benchmarks/reports/agentic.md")
    parser.add_argument("--modes", default="rag,agentic")
    parser.add_argument("--log", default="benchmarks/runs/agentic_runs.jsonl", help="per-query results")
    parser.add_argument("--resume", action="store_true", help="keep the rows already in --log, run the rest")
    parser.add_argument("--max-minutes", type=float, default=0, help="start no new query after this (0 = no limit)")
    parser.add_argument("--report-only", action="store_true", help="write the report from --log, run nothing")
    parser.add_argument("--embedder", choices=("adapted", "base"), default="adapted")
    parser.add_argument("--min-chars", type=int, default=0,
                        help="sample only questions of at least this many characters (30: STARD's long questions)")
    parser.add_argument("--folds-of", default=str(DEFAULT_QUERIES),
                        help="the training questions whose folds the queries belong to, by qid (the consultation "
                             "set: its STARD source)")
    args = parser.parse_args()
    queries = sample_queries(load_queries(args.queries), args.sample, args.seed, args.min_chars)
    modes = args.modes.split(",")
    log_path = Path(args.log)
    rows = read_log(log_path, modes) if args.resume or args.report_only else {m: {} for m in modes}
    if args.report_only:
        print(write_report(args, len(queries), rows, "Report written from the log."))
        return
    settings = bench_settings()
    endpoint = resolve_endpoint(settings)
    askers, fold_by_qid = fold_askers(settings, args.folds_of, queries, args.embedder)
    judge = resolve_judge(next(iter(askers.values())).settings)
    started = time.perf_counter()
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a" if args.resume else "w", encoding="utf-8") as log:
        for i, item in enumerate(queries, start=1):
            if args.max_minutes and time.perf_counter() - started > 60 * args.max_minutes:
                break
            for mode in modes:
                if item["qid"] in rows[mode]:
                    continue
                result = askers[fold_by_qid[item["qid"]]].ask(item["query"], mode=mode)
                if result.answer_error:  # a row scored without the model's answer would skew the figures
                    close(askers)
                    sys.exit(no_answer_message(item["qid"], mode, result, log_path, settings.data_dir))
                row = {"qid": item["qid"], "mode": mode, **score(result, item["gold"]), "situation": result.situation,
                       "rounds": round_summaries(result)}
                rows[mode][item["qid"]] = row
                log.write(json.dumps(row, ensure_ascii=False) + "\n")
                log.flush()
            print(f"{i}/{len(queries)} " + " ".join(f"{m}: {rows[m].get(item['qid'])}" for m in modes), flush=True)
    close(askers)
    trained = f"out of fold: each question's models trained on the other folds of `{Path(args.folds_of).name}`"
    note = (f"LLM: {endpoint.kind} (`{endpoint.model}`); embedder: {args.embedder}; judge: {judge}"
            f"{f' ({trained})' if args.embedder == 'adapted' or judge != 'llm' else ''}"
            f"; reranker: {settings.reranker}; round reranker: {settings.round_reranker}; "
            f"rewrite before round 1: {settings.rewrite_first_round} (questions of at least "
            f"{settings.long_question_chars} characters: always; 0 = none). "
            f"This run's wall time {time.perf_counter() - started:.0f} s.")
    print(write_report(args, len(queries), rows, note))


if __name__ == "__main__":
    main()
