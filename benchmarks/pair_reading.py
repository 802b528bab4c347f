"""Pair reading on 2 cores: what the LLM rerankers gain over the hybrid order, per second, and what each call costs.

For a fixed sample of STARD train questions (seed 0, as many short as long ones, ``--sample`` of each) round 1 is
the hybrid top 50 of the bench store (zero-shot e5-small: no model here saw these questions; the LLM is not
trained, so no folds are needed). Each reader reorders the hybrid top ``n``:

- ``pointwise:N:C``: `LLMRelevanceRanker`, one yes/no call per candidate (P(是) from logprobs), passages of C
  characters (label + first sentences);
- ``listwise:N:C``: `LLMListwiseRanker`, one call naming the decisive candidates.

Each reader's order is reported alone and fused with the hybrid order by RRF. The LLM is whatever the project's
factory resolves (the embedded server: set ``LLM_GGUF`` for another model; ``--label`` names it in the report). With
the embedded server, the tokens it evaluated per call are read from its log (llama.cpp's ``prompt eval`` lines:
after a prefix-cache hit only the rest of the prompt is evaluated).

    .venv/bin/python benchmarks/pair_reading.py --sample 40 --readers pointwise:20:400,pointwise:20:80,listwise:20:80
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from haystack import Document

from benchmarks.indexing import bench_retrieval, bench_settings
from benchmarks.metrics import load_queries, mean_metrics, query_metrics, rrf
from benchmarks.retrieval import DEFAULT_QUERIES
from components.rankers.llm_listwise_ranker import LLMListwiseRanker
from components.rankers.llm_relevance_ranker import LLMRelevanceRanker
from pipelines.retrieval import retrieve

LONG = 30  # characters: the long slice of shared/data/stard/README.md
DEPTH = 50
COLUMNS = ["R@1", "R@5", "R@8", "R@10", "MRR@10", "nDCG@10"]
PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")


def make_reader(spec: str) -> LLMRelevanceRanker | LLMListwiseRanker:
    kind, top_n, chars = spec.split(":")
    if kind == "pointwise":
        return LLMRelevanceRanker(top_n=int(top_n), max_chars=int(chars), max_workers=1)
    if kind == "listwise":
        return LLMListwiseRanker(top_n=int(top_n), max_chars=int(chars))
    raise ValueError(f"unknown reader {spec!r}: pointwise:N:C or listwise:N:C")


def metrics_of(order: list[str], gold: list[str]) -> dict[str, float]:
    """`query_metrics` and R@8 (the evidence size the answer would read when the reranker is unsure)."""
    return query_metrics(order, gold) | {"R@8": len(set(order[:8]) & set(gold)) / len(set(gold))}


def sample(queries: list[dict], per_slice: int) -> list[dict]:
    """The first ``per_slice`` short and long questions of a fixed shuffle (seed 0): a smaller sample is a prefix of
    a larger one, so runs of different sizes share their questions."""
    picked = []
    for in_slice in (lambda q: len(q["query"]) < LONG, lambda q: len(q["query"]) >= LONG):
        part = [q for q in queries if in_slice(q)]
        random.Random(0).shuffle(part)
        picked += part[:per_slice]
    return picked


class ServerLog:
    """The embedded server's log, read from where the last call left it: prompt tokens evaluated per call."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = path.stat().st_size if path.exists() else 0

    def evaluated(self) -> list[int]:
        if not self.path.exists():
            return []
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            text = handle.read().decode("utf-8", "replace")
        self.offset += len(text.encode("utf-8", "replace"))
        return [int(tokens) for _, tokens in PROMPT_EVAL.findall(text)]


def run(queries: list[dict], specs: list[str], label: str, log: Path) -> list[dict]:
    settings = bench_settings()
    done = {}
    if log.exists():
        done = {(r["qid"], r["reader"], r["label"]): r for r in map(json.loads, log.read_text("utf-8").splitlines())}
    todo = [(q, s) for q in queries for s in specs if (str(q["qid"]), s, label) not in done]
    if todo:
        store, pipeline = bench_retrieval(settings, top_k=DEPTH)
        readers = {spec: make_reader(spec) for spec in specs}
        for reader in readers.values():
            reader.warm_up()
        server_log = ServerLog(settings.data_dir / "llm_server.log")
        hybrid_cache: dict[str, list[Document]] = {}
        with log.open("a", encoding="utf-8") as out:
            for n, (q, spec) in enumerate(todo, start=1):
                hybrid = hybrid_cache.setdefault(str(q["qid"]), retrieve(pipeline, [q["query"]], top_k=DEPTH))
                reader = readers[spec]
                server_log.evaluated()
                started = time.perf_counter()
                result = reader.run(query=q["query"], documents=hybrid)
                seconds = time.perf_counter() - started
                evaluated = server_log.evaluated()
                record = {"qid": str(q["qid"]), "reader": spec, "label": label, "seconds": round(seconds, 3),
                          "hybrid": [d.meta["key"] for d in hybrid],
                          "order": [d.meta["key"] for d in result["documents"]],
                          "calls": len(evaluated) or None, "evaluated": evaluated,
                          "parsed": (result.get("rerank") or {}).get("parsed")}
                done[(record["qid"], spec, label)] = record
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
                out.flush()
                print(f"{n}/{len(todo)} {spec} {seconds:.1f}s", flush=True)
        store.close()
    return [done[(str(q["qid"]), s, label)] for q in queries for s in specs]


def report(queries: list[dict], records: list[dict], label: str) -> str:
    by_qid = {str(q["qid"]): q for q in queries}
    rows: dict[tuple[str, str], list[dict]] = {}
    seconds: dict[str, list[float]] = {}
    tokens: dict[str, list[float]] = {}

    def add(part: str, name: str, metrics: dict) -> None:
        rows.setdefault((part, name), []).append(metrics)

    first = {}
    for record in records:
        first.setdefault(record["qid"], record)
    for record in first.values():  # the hybrid order once per question
        q = by_qid[record["qid"]]
        for part in ("all", "long" if len(q["query"]) >= LONG else "short"):
            add(part, "hybrid", metrics_of(record["hybrid"], q["gold"]))
    for record in records:
        q = by_qid[record["qid"]]
        spec, top_n = record["reader"], int(record["reader"].split(":")[1])
        read = query_metrics(record["hybrid"][:top_n], q["gold"])["R@100"]
        orders = {spec: record["order"], f"RRF(hybrid, {spec})": rrf(record["hybrid"], record["order"][:top_n])}
        for part in ("all", "long" if len(q["query"]) >= LONG else "short"):
            for name, order in orders.items():
                add(part, name, metrics_of(order, q["gold"]) | {"read": read})
        seconds.setdefault(spec, []).append(record["seconds"])
        if record["evaluated"]:
            tokens.setdefault(spec, []).append(statistics.mean(record["evaluated"]))
    lines = ["| questions | order | n | " + " | ".join(COLUMNS) + " | gold in what was read |",
             "|" + "---|" * (len(COLUMNS) + 4)]
    for (part, name), metric_rows in sorted(rows.items(), key=lambda item: ("all", "short", "long").index(
            item[0][0])):
        mean = mean_metrics(metric_rows)
        lines.append(f"| {part} | {name} | {len(metric_rows)} | " + " | ".join(f"{mean[c]:.3f}" for c in COLUMNS)
                     + (f" | {mean['read']:.3f} |" if "read" in mean else " | |"))
    cost = ["| reader | median s / question | mean s / question | prompt tokens evaluated per call (mean) |",
            "|---|---|---|---|"]
    for spec, values in seconds.items():
        evaluated = f"{statistics.mean(tokens[spec]):.0f}" if tokens.get(spec) else "–"
        cost.append(f"| {spec} | {statistics.median(values):.1f} | {statistics.mean(values):.1f} | {evaluated} |")
    return "\n".join(lines) + "\n\nCost (model: " + label + "):\n\n" + "\n".join(cost) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, default=40, help="questions of each slice (short, long)")
    parser.add_argument("--readers", default="pointwise:20:400,pointwise:20:80,listwise:20:80")
    parser.add_argument("--label", default=None, help="the model's name in the report (default: LLM_GGUF's file)")
    parser.add_argument("--log", default="benchmarks/runs/pair_reading.jsonl")
    parser.add_argument("--out", default="benchmarks/reports/pair_reading.md")
    args = parser.parse_args()
    label = args.label or Path(bench_settings().llm_gguf).name
    queries = sample(load_queries(DEFAULT_QUERIES), args.sample)
    log = Path(args.log)
    log.parent.mkdir(parents=True, exist_ok=True)
    records = run(queries, args.readers.split(","), label, log)
    text = (f"# Pair reading: the LLM rerankers over the hybrid top 50\n\nCommand: `.venv/bin/python "
            f"benchmarks/pair_reading.py {' '.join(sys.argv[1:])}`\n\n{len(queries)} STARD train questions "
            f"({args.sample} short, {args.sample} long; seed 0), bench store (zero-shot e5-small, all articles). "
            f"Machine: {platform.machine()}, {os.cpu_count()} cores.\n\n" + report(queries, records, label))
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
