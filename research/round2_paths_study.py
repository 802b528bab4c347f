"""Where is the gold when round 1 misses it? Which second-round search could find it (issue 31, item 4)?

For every STARD train question and every story of the consultation set, round 1 is the hybrid top 20 of the bench
store (zero-shot e5-small; the candidates `research/evaluator_style_study.py` caches). For the questions whose gold
is not in round 1's top 10, it counts where the gold is:

- ranks 11–20 (a larger pool, reranked, could reach it);
- next to one of the top 1 / 3 / 5 articles (the same law, article number ±1);
- referred to by a top-5 article (``本法第X条``);
- in the law of the top 1 / top 3 articles, found by searching the question again inside that law
  (``meta.law in [...]`` filter, top 10): rescues, that search's own R@10 over all questions, its union with round
  1 (round 1's top 5 + the law search's new top 5), and the R@10 a perfect judge picking the better of the two
  rounds would reach (the upper bound of what the loop gains from this path).

    .venv/bin/python research/round2_paths_study.py [--out research/reports/round2_paths_study.md]
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from haystack import Document

from benchmarks.indexing import bench_retrieval, bench_settings
from helpers.statutes.labels import key_law
from helpers.statutes.numerals import cn_to_int
from pipelines.retrieval import retrieve
from provisioning.training_pairs import Pair
from research.evaluator_style_study import cached_candidates, study_pairs

ARTICLE = re.compile(r"第([一二三四五六七八九十百千零〇]+)条")
REFERENCE = re.compile(r"本法第([一二三四五六七八九十百千零〇]+)条")


def position(key: str) -> tuple[str, int] | None:
    law = key_law(key)
    match = ARTICLE.search(key[len(law):])
    return (law, cn_to_int(match.group(1))) if match else None


def neighbours(docs: list[Document]) -> set[tuple[str, int]]:
    found = set()
    for doc in docs:
        if (place := position(doc.meta["key"])) is not None:
            found |= {(place[0], place[1] - 1), (place[0], place[1] + 1)}
    return found


def references(docs: list[Document]) -> set[tuple[str, int]]:
    return {(d.meta.get("law"), cn_to_int(m.group(1))) for d in docs for m in REFERENCE.finditer(d.content or "")}


def study(pipeline, pairs: list[Pair], found: list[list[Document]]) -> Counter:
    counts: Counter = Counter()
    for pair, docs in zip(pairs, found, strict=True):
        keys = [d.meta["key"] for d in docs]
        gold = {position(g) for g in pair.gold}
        hit = any(k in pair.gold for k in keys[:10])
        counts["questions"] += 1
        counts["round 1 hit"] += hit
        if not hit:
            counts["missed"] += 1
            counts["gold at 11–20"] += any(k in pair.gold for k in keys[10:20])
            for top in (1, 3, 5):
                counts[f"gold next to top {top}"] += bool(gold & neighbours(docs[:top]))
            counts["gold referred to by top 5"] += bool(gold & references(docs[:5]))
        for name, top in (("law of top 1", 1), ("laws of top 3", 3)):
            laws = list(dict.fromkeys(d.meta["law"] for d in docs[:top]))
            if not laws:
                continue
            again = [d.meta["key"] for d in retrieve(pipeline, [pair.query], top_k=10,
                                                     filters={"field": "meta.law", "operator": "in", "value": laws})]
            found_again = any(k in pair.gold for k in again)
            union = keys[:5] + [k for k in again if k not in keys[:5]][:5]
            counts[f"{name}: R@10 alone"] += found_again
            counts[f"{name}: rescues"] += found_again and not hit
            counts[f"{name}: union R@10"] += any(k in pair.gold for k in union)
            counts[f"{name}: better of two R@10"] += found_again or hit
    return counts


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="research/reports/round2_paths_study.md")
    args = parser.parse_args()
    pairs = study_pairs()
    found = cached_candidates(pairs)
    store, pipeline = bench_retrieval(bench_settings(), top_k=10)
    results = {kind: study(pipeline, pairs[kind], found[kind]) for kind in ("stard", "story")}
    store.close()
    rows = [name for name in results["stard"] if name != "questions"]
    lines = ["| | STARD | consultation-style |", "|---|---|---|"]
    lines.append(f"| questions | {results['stard']['questions']} | {results['story']['questions']} |")
    for name in rows:
        per_question = not name.startswith(("gold", "missed")) and not name.endswith("rescues")
        cells = []
        for kind in ("stard", "story"):
            count = results[kind][name]
            total = results[kind]["questions"] if per_question else results[kind]["missed"]
            cells.append(f"{count} ({count / total:.3f})" if total else "0")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    Path(args.out).write_text(f"""# Round 2: where the gold is when round 1 misses it

Command: `.venv/bin/python research/round2_paths_study.py`
Bench store (zero-shot e5-small, all 23,995 articles), hybrid + RRF. Round 1: the question as asked, top 20.
Shares: of all questions for the R@10 rows (round 1 hit, alone, union, better of two), of the questions round 1
missed for the others (where the gold is; rescues).

{chr(10).join(lines)}
""", encoding="utf-8")
    print(Path(args.out).read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
