"""Character n-gram study: which of BM25's character n-grams the retrieval quality needs, and what they cost.

The BM25 terms of an article or a question are jieba's words plus the text's character unigrams and bigrams
(`helpers.text_encoding.jieba_tokenizer`). At a million articles the unigrams' postings are long, and they set the
sparse search's p95 (benchmarks/reports/scale_edge.md, sixth session). This study scores BM25 exactly in memory
(`helpers.text_encoding.sparse_terms.BM25Matrix`, the store's own formula and IDF) over the articles in force, for
several n-gram choices. It reports:

- BM25 alone, and BM25 fused with the bench store's dense top 100 by `RRFJoiner` with the served weights, for the
  STARD train questions and the consultation-style retellings;
- the terms per article (index size) and per question (search cost).

The citation path is left out: it is the same for every choice. The first choice is the shipped one, and its BM25
row should equal `benchmarks/retrieval.py`'s BM25 row, which checks this study against the store.

    DATA_DIR=/tmp/idx_data .venv/bin/python research/ngram_study.py [--choices "1,2;2;"] [--out PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import numpy as np
from haystack import Document

from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries, mean_metrics, query_metrics
from benchmarks.retrieval import DEFAULT_QUERIES
from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
from components.joiners.rrf_joiner import RRFJoiner
from components.preprocessors.statute_splitter import StatuteSplitter
from helpers.records.ranking import Ranking
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer
from helpers.text_encoding.sparse_terms import BM25Matrix
from pipelines.indexing import law_sources
from pipelines.retrieval import CANDIDATES_PER_PATH, PATH_WEIGHTS, build_retrieval_pipeline, retrieve
from pipelines.stores import open_document_store

CONSULTATIONS = Path(__file__).resolve().parents[1] / "training_data" / "consultations" / "stard_consultations.jsonl"
DEFAULT_OUT = Path(__file__).resolve().parent / "reports" / "ngram_study.md"


def parse_choices(text: str) -> list[tuple[int, ...]]:
    """``"1,2;2;"`` → ``[(1, 2), (2,), ()]``."""
    return [tuple(int(n) for n in part.split(",") if n.strip()) for part in text.split(";")]


def dense_rankings(questions: list[str]) -> list[list[Document]]:
    """Each question's dense top `CANDIDATES_PER_PATH` from the bench store (what hybrid fuses)."""
    settings = bench_settings()
    store = open_document_store(settings)
    pipeline = build_retrieval_pipeline(store, settings, mode="dense", top_k=CANDIDATES_PER_PATH)
    pipeline.warm_up()
    try:
        return [retrieve(pipeline, [q], top_k=CANDIDATES_PER_PATH) for q in questions]
    finally:
        store.close()


def study(articles: list[Document], sets: dict[str, list[dict]], dense: dict[str, list[list[Document]]],
          sizes: tuple[int, ...]) -> dict[str, object]:
    encoder = JiebaBM25DocumentEncoder(char_ngrams=list(sizes))
    tokenizer = JiebaTokenizer(char_ngrams=sizes)  # the query side, as `JiebaBM25Retriever` builds it
    encoded = encoder.run(documents=articles)["documents"]
    matrix = BM25Matrix([d.sparse_embedding for d in encoded])
    settings = bench_settings()
    joiner = RRFJoiner(top_k=10, path_weights={**PATH_WEIGHTS, "bm25": settings.bm25_weight},
                       primary_weight=settings.question_weight)
    result: dict[str, object] = {
        "terms_per_article": statistics.mean(len(d.sparse_embedding.indices) for d in encoded if d.sparse_embedding)}
    query_terms = []
    for name, items in sets.items():
        bm25_rows, hybrid_rows = [], []
        for item, dense_docs in zip(items, dense[name], strict=True):
            terms = tokenizer.tokenize(item["query"])
            query_terms.append(len(set(terms)))
            scores = matrix.scores(terms)
            top = [int(i) for i in np.argsort(-scores, kind="stable")[:CANDIDATES_PER_PATH] if scores[i] > 0]
            bm25_docs = [articles[i] for i in top]
            bm25_rows.append(query_metrics([d.meta["key"] for d in bm25_docs], item["gold"]))
            fused = joiner.run(rankings=[[Ranking("bm25", item["query"], bm25_docs),
                                          Ranking("dense", item["query"], dense_docs)]],
                               primary_query=item["query"])["documents"]
            hybrid_rows.append(query_metrics([d.meta["key"] for d in fused], item["gold"]))
        result[name] = {"bm25": mean_metrics(bm25_rows), "hybrid": mean_metrics(hybrid_rows)}
    result["terms_per_question"] = statistics.mean(query_terms)
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--choices", default="1,2;2;", help="n-gram size sets, ';'-separated (empty = words only)")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    args = parser.parse_args()
    sources = law_sources(["all"])
    articles = StatuteSplitter().run(documents=[d for s in sources for d in s.documents])["documents"]
    sets = {"STARD train": load_queries(DEFAULT_QUERIES), "consultations": load_queries(CONSULTATIONS)}
    dense = {name: dense_rankings([item["query"] for item in items]) for name, items in sets.items()}
    lines = []
    for sizes in parse_choices(args.choices):
        found = study(articles, sets, dense, sizes)
        cells = []
        for name in sets:
            metrics = found[name]
            cells += [f"{metrics[path]['R@10']:.3f} / {metrics[path]['MRR@10']:.3f}" for path in ("bm25", "hybrid")]
        label = "+".join(f"{n}-grams" for n in sizes) if sizes else "words only"
        lines.append(f"| {label} | {found['terms_per_article']:.0f} | {found['terms_per_question']:.1f} | "
                     + " | ".join(cells) + " |")
        print(lines[-1], flush=True)
    report = f"""# Character n-gram study

Command: `.venv/bin/python research/ngram_study.py --choices "{args.choices}"`. {len(articles)} articles in force;
{len(sets['STARD train'])} STARD train questions and {len(sets['consultations'])} consultation-style retellings.
BM25 is scored exactly in memory; hybrid fuses it with the bench store's dense top {CANDIDATES_PER_PATH} (RRF, the
served weights, no citation path). R@10 / MRR@10:

| character n-grams | terms per article | terms per question | STARD BM25 | STARD hybrid | \
consultations BM25 | consultations hybrid |
|---|---|---|---|---|---|---|
""" + "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
