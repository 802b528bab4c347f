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

Questions the corpus cannot answer (no gold in it: ``--queries training_data/stard/stard_train_out_of_corpus.jsonl``)
are scored by what the answer does instead of recall: how often the judge called the evidence ``sufficient`` (every
such pass is wrong), how often the loop reached web search, and how often the answer says first what the knowledge
base does not settle (or that it found nothing). The evaluator and the embedder never saw them (they train on the
folds' in-corpus questions only); the coverage check of fold k learns from the out-of-corpus questions outside fold
k, split by cited document (``--outside-folds document``, the default: each is scored as an unknown gap, as
`judge_calibration.py` scores them) or by question (``question``: a known gap).
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
from benchmarks.folds import (
    FOLDS,
    OUTSIDE_FOLDS,
    fold_assignment,
    fold_models,
    outside_fold_assignment,
    stard_pairs,
)
from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from config.settings import Settings
from helpers.checks.unsettled import UNSETTLED_PREFIX
from helpers.records.result import RAGResult
from llm_access.factory import resolve_endpoint
from pipelines.indexing import Indexer
from pipelines.judges import resolve_judge
from pipelines.stores import open_document_store
from provisioning.coverage_training import DEFAULT_OUTSIDE, OutsideQuestion, load_outside
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


def costs(result: RAGResult) -> dict[str, float]:
    """LLM calls (the reranker's counted apart) and seconds."""
    reranker_calls = result.trace.get("llm_calls", {}).get("reranker", 0)
    return {"llm_calls": result.trace["llm_calls_total"] - reranker_calls, "reranker_calls": reranker_calls,
            "seconds": result.trace["total_seconds"]}


def says_not_settled(result: RAGResult) -> bool:
    """The answer begins by saying what the knowledge base does not settle, or is the honest "nothing found"."""
    return result.situation == "none" or result.answer.startswith(UNSETTLED_PREFIX)


def score(result: RAGResult, gold: list[str]) -> dict[str, Any]:
    """With gold: Recall@10 of the final evidence and citation recalls; without (the corpus cannot answer): whether
    the evidence was judged sufficient, web search was reached, the answer says what is not settled. Both: costs."""
    if not gold:
        web = result.trace.get("web")
        return {"sufficient": result.situation == "sufficient", "web_search": web is not None,
                "not_settled": says_not_settled(result), **costs(result)}
    evidence = set(final_evidence_keys(result))
    return {"recall@10": len(evidence & set(gold)) / len(gold), **citation_recalls(result, gold), **costs(result)}


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


def cost_cells(rows: list[dict[str, Any]]) -> str:
    calls, secs = [x["llm_calls"] for x in rows], [x["seconds"] for x in rows]
    reranked = statistics.median(x.get("reranker_calls", 0) for x in rows)
    return (f"{statistics.median(calls):.0f} | {percentile(calls, 95):.0f} | {reranked:.0f} | "
            f"{statistics.median(secs):.1f} | {percentile(secs, 95):.1f} |")


def answered_row(mode: str, rows: list[dict[str, Any]]) -> str:
    """A table row over questions with gold in the corpus."""
    written = [x["model_citation_recall"] for x in rows if "model_citation_recall" in x]
    written_mean = f"{statistics.mean(written):.3f}" if len(written) == len(rows) else "–"
    return (f"| {mode} | {len(rows)} | {statistics.mean(x['recall@10'] for x in rows):.3f} | "
            f"{statistics.mean(x['citation_recall'] for x in rows):.3f} | {written_mean} | {cost_cells(rows)}")


def unanswerable_row(mode: str, rows: list[dict[str, Any]]) -> str:
    """A table row over questions the corpus cannot answer."""
    def share(flag: str) -> str:
        return f"{statistics.mean(float(x[flag]) for x in rows):.3f}"
    either = statistics.mean(float(x["web_search"] or x["not_settled"]) for x in rows)
    return (f"| {mode} | {len(rows)} | {share('sufficient')} | {share('web_search')} | {share('not_settled')} | "
            f"{either:.3f} | {cost_cells(rows)}")


COSTS = "LLM calls median | LLM calls p95 | reranker calls median | s/query median | s/query p95 |"
ANSWERED = ("| mode | queries | Recall@10 of final evidence | citation recall | of which written by the model | "
            + COSTS)
UNANSWERABLE = ("| mode | queries | judged sufficient | web search reached | answer says what is not settled | "
                "web search or that line | " + COSTS)


def write_report(args: argparse.Namespace, sample: int, rows: dict[str, dict[int, dict[str, Any]]], note: str) -> str:
    """The report over the queries every mode finished (a paired comparison): one table for the questions with gold
    in the corpus, one for those without."""
    paired = sorted(set.intersection(*(set(r) for r in rows.values())))
    chars = f" among those of at least {args.min_chars} characters" if args.min_chars else ""
    tables = []
    for header, has_gold, make_row in ((ANSWERED, True, answered_row), (UNANSWERABLE, False, unanswerable_row)):
        lines = []
        for mode, by_qid in rows.items():
            part = [by_qid[q] for q in paired if ("recall@10" in by_qid[q]) == has_gold]
            if part:
                lines.append(make_row(mode, part))
        if lines:
            title = ("Questions with gold articles in the corpus" if has_gold else
                     "Questions the corpus cannot answer (no gold in it: every `sufficient` is a wrong pass)")
            tables.append(f"### {title}\n\n{header}\n|{'---|' * header.count('|', 1)}\n" + "\n".join(lines))
    report = f"""# Agentic vs plain RAG (sample of `{Path(args.queries).name}`)

Command: `.venv/bin/python benchmarks/agentic.py {' '.join(sys.argv[1:])}`
Sample: {sample} queries drawn with seed {args.seed} from `{Path(args.queries).name}`{chars}; \
all current articles indexed.
**Completed: {len(paired)} of {sample}** (queries that every mode finished; the tables are over these only). {note}
Per-query rows (not kept in git) are in `{args.log}`.

{(chr(10) * 2).join(tables)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    return report


def question_folds(queries: list[dict[str, Any]], training: list[dict[str, Any]], outside: list[OutsideQuestion],
                   outside_folds: list[int]) -> dict[int, int]:
    """qid → fold for ``queries``: a training question's own fold (a retelling's: its source's, same qid); an
    out-of-corpus question's in ``outside_folds``. A question in neither is an error (no fold is known to have
    never seen it)."""
    fold_of = fold_assignment(len(training))
    known = {str(q["qid"]): fold_of[i] for i, q in enumerate(training)}
    known.update({q.qid: fold for q, fold in zip(outside, outside_folds, strict=True) if q.qid not in known})
    unknown = [q["qid"] for q in queries if str(q["qid"]) not in known]
    if unknown:
        raise ValueError(f"{len(unknown)} sampled question(s) are neither training questions (--folds-of) nor "
                         f"out-of-corpus ones (--out-of-corpus), e.g. qid {unknown[0]}: no fold is known not to "
                         "have seen them")
    return {q["qid"]: known[str(q["qid"])] for q in queries}


def fold_askers(settings: Settings, folds_path: str, queries: list[dict[str, Any]], embedder: str,
                outside: list[OutsideQuestion], outside_by: str) -> tuple[dict[int, AgenticRAG], dict[int, int]]:
    """One `AgenticRAG` per fold of the sampled ``queries``, over the models trained without that fold's
    questions (the adapted embedder's store, the trained evaluator as judge, the coverage check trained on the
    other folds' out-of-corpus questions), and each question's fold. ``folds_path``: the training questions the
    folds split (a consultation-set question is in the fold of the STARD question it retells: same qid);
    ``outside_by``: how the out-of-corpus questions are split (`benchmarks.folds.outside_fold_assignment`)."""
    judge = resolve_judge(settings, require_model=False)
    outside_folds = outside_fold_assignment(outside, outside_by)
    fold_by_qid = question_folds(queries, load_queries(folds_path), outside, outside_folds)
    if embedder != "adapted" and judge == "llm" and not (settings.coverage_check and outside):
        return dict.fromkeys(range(FOLDS), AgenticRAG(open_document_store(settings), settings)), fold_by_qid
    askers: dict[int, AgenticRAG] = {}
    pairs = stard_pairs(folds_path)
    for fold in sorted(set(fold_by_qid.values())):
        fold_outside = [q for q, k in zip(outside, outside_folds, strict=True) if k != fold]
        trained = fold_models(settings, pairs, fold, adapt=embedder == "adapted", outside=fold_outside).settings
        store = open_document_store(corpus_settings(trained))
        # a store written before BM25 weights were stored (or with other k1/b) ranks keyword hits wrongly until
        # its weights are rewritten: a no-op when they are current
        Indexer(store, corpus_settings(trained)).reweight()
        askers[fold] = AgenticRAG(store, dataclasses.replace(corpus_settings(trained), judge=settings.judge))
    return askers, fold_by_qid


def coverage_note(settings: Settings, outside: list[OutsideQuestion], by: str) -> str:
    if not (settings.coverage_check and outside):
        return "off"
    scored = ("documents no training question cites are scored" if by == "document"
              else "new questions about documents training questions cite are scored")
    return (f"on, each fold's trained on the other folds' out-of-corpus questions (split by {by}: "
            f"{scored})")


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
    parser.add_argument("--out-of-corpus", default=str(DEFAULT_OUTSIDE),
                        help="out-of-corpus questions: the coverage check of each fold learns from the other folds' "
                             "ones, and a sampled question among them is scored by its fold's models")
    parser.add_argument("--outside-folds", choices=OUTSIDE_FOLDS, default="document",
                        help="split the out-of-corpus questions by cited document (unknown gaps, the default "
                             "yardstick) or by question (known gaps)")
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
    outside = load_outside(args.out_of_corpus) if args.out_of_corpus else []
    askers, fold_by_qid = fold_askers(settings, args.folds_of, queries, args.embedder, outside, args.outside_folds)
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
    always = (f" (always for questions of at least {settings.long_question_chars} characters)"
              if settings.long_question_chars else "")
    note = (f"LLM: {endpoint.kind} (`{endpoint.model}`); embedder: {args.embedder}; judge: {judge}"
            f"{f' ({trained})' if args.embedder == 'adapted' or judge != 'llm' else ''}"
            f"; coverage check: {coverage_note(settings, outside, args.outside_folds)}"
            f"; reranker: {settings.reranker}; round reranker: {settings.round_reranker}; "
            f"rewrite before round 1: {settings.rewrite_first_round}"
            f"{always}. "
            f"This run's wall time {time.perf_counter() - started:.0f} s.")
    print(write_report(args, len(queries), rows, note))


if __name__ == "__main__":
    main()
