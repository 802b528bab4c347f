"""Answer quality benchmark (issue 20): are the answers' quotes, figures and sections sound?

End to end with the LLM the settings resolve (the embedded model by default) on a fixed random sample of STARD
questions over all current articles, with the models each question's fold did not train (`benchmarks.folds`, as
`benchmarks/agentic.py` does). Per mode it reads each final answer as a user would and checks it against the
statute database itself (not the evidence the answer check used):

- **misattributed quotes**: text written after a citation (``《法名》第X条：…`` or ``…第X条“…”``; its first
  sentence) that is not that article's text. ``in the model's text`` counts what the answer check replaced or
  flagged (`trace.answer_checks`); ``left unflagged`` counts those in the final answer without 〔引文不符〕 or
  〔未核实〕 (goal 0);
- **rendered statute text** that differs from the database's (goal 0);
- **quantities** (`helpers.statutes.quantities`) the answer states outside statute text: flagged 〔未见依据〕, and those
  left unflagged without a basis in the evidence or the question (goal 0);
- **broken sections**: a header with nothing after it, or text that stops mid-sentence (goal 0); the **echo rate**
  (answers in which the LLM call's guard removed a copied instruction);
- the model's own citations of gold articles (recall, as in `agentic.md`) and the share of answers whose
  【相关法条】 holds a gold article.

    .venv/bin/python benchmarks/answers.py [--sample 60] [--seed 0] [--modes rag,agentic] [--resume]
        [--max-minutes M] [--report-only] [--out benchmarks/reports/answers.md]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.agentic import citation_recalls, close, fold_askers, read_log
from benchmarks.indexing import bench_settings
from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from document_store.statute_db import StatuteDB
from helpers.checks.answer_check import EXCERPT_MARK, NO_BASIS, QUOTE_MISMATCH, STATUTE_SECTION
from helpers.checks.prompt_guard import SECTION_HEADER
from helpers.records.result import RAGResult
from helpers.statutes.citations import LAW_CITATION_RE, UNVERIFIED_MARK
from helpers.statutes.labels import LAW_NAME_PREFIX, article_no
from helpers.statutes.quantities import quantities
from helpers.statutes.quotes import ELLIPSIS_RE, is_excerpt, normalise
from llm_access.factory import resolve_endpoint

SECTION_RE = re.compile(SECTION_HEADER)
TAILS = ("参考法条：", "检索到的其他相关法条：", "（说明：", "（回答达到长度上限")  # the finalizer appends these
ENDS = "。！？；：…）)」”』\".?!"


def store_texts() -> dict[str, str]:
    """Every current article's text by key (law + article number)."""
    db = StatuteDB()
    return {f"{d.meta['law']}{d.meta['article_no']}": d.content or "" for law in db.law_counts()
            for d in db.articles(law)}


def cited_key(match: re.Match[str], texts: dict[str, str]) -> str | None:
    try:
        number = article_no(match.group(2), match.group(3))
    except (ValueError, TypeError):
        return None
    law = match.group(1).strip()
    return next((k for k in (law + number, LAW_NAME_PREFIX + law + number) if k in texts), None)


def sections(answer: str) -> list[tuple[str, str]]:
    """(header, body) for each 【header】 of the answer, the article lists and notes the finalizer appends cut off."""
    for marker in TAILS:
        answer = answer.split("\n\n" + marker)[0]
    heads = list(SECTION_RE.finditer(answer))
    return [(h.group(1), answer[h.end():heads[i + 1].start() if i + 1 < len(heads) else len(answer)])
            for i, h in enumerate(heads)]


def quote_findings(answer: str, texts: dict[str, str]) -> dict[str, int]:
    """Quotes after citations in the final answer: misattributed ones, and of those the ones left unflagged."""
    found = {"quotes": 0, "misattributed": 0, "misattributed_unflagged": 0}
    for match in LAW_CITATION_RE.finditer(answer):
        if not match.group(2):
            continue
        rest = answer[match.end():]
        flagged = rest.startswith(UNVERIFIED_MARK)
        rest = rest.removeprefix(UNVERIFIED_MARK).removeprefix(EXCERPT_MARK)
        lead = re.match(r"(?:中|的)?(?:明确)?(?:规定|指出)?\s*([:：]|[“「])", rest)
        if not lead:
            continue
        body = rest[lead.end():]
        quote = re.split(r"[”」]" if lead.group(1) in "“「" else r"[。！？\n]", body, maxsplit=1)[0]
        if len(normalise(quote)) < 4:
            continue
        found["quotes"] += 1
        key = cited_key(match, texts)
        if key is not None and is_excerpt(quote, texts[key]):
            continue
        found["misattributed"] += 1
        after = body[len(quote):len(quote) + 2 + len(QUOTE_MISMATCH)]
        if not (flagged or QUOTE_MISMATCH in after):
            found["misattributed_unflagged"] += 1
    return found


def rendered_mismatches(answer: str, texts: dict[str, str]) -> int:
    """Articles in 【相关法条】 whose text is not the database's (an excerpt's pieces must all be in it)."""
    bad = 0
    for header, body in sections(answer):
        if header != STATUTE_SECTION:
            continue
        items = re.split(r"\n(?=《)", body.strip())
        for item in items:
            match = LAW_CITATION_RE.match(item)
            if not match or UNVERIFIED_MARK in item[:match.end() + len(UNVERIFIED_MARK)]:
                continue
            partial = item[match.end():].startswith(EXCERPT_MARK)
            text = item[match.end():].removeprefix(EXCERPT_MARK).removeprefix("：").replace(UNVERIFIED_MARK, "")
            key = cited_key(match, texts)
            truth = texts.get(key or "", None)
            if truth is None:
                bad += 1
            elif partial:
                bad += not all(piece.strip() in truth for piece in ELLIPSIS_RE.split(text) if piece.strip())
            else:
                bad += text.strip() != truth.strip()
    return bad


def number_findings(result: RAGResult, query: str) -> dict[str, int]:
    """Quantities the answer states outside statute text: flagged, and unflagged without a basis."""
    basis = {q.key for text in [query] + [e.get("text") or "" for e in result.evidence] for q in quantities(text)}
    counts = {"numbers": 0, "numbers_flagged": 0, "numbers_unflagged_without_basis": 0}
    for header, body in sections(result.answer):
        if header in (STATUTE_SECTION, "免责声明"):
            continue
        for quantity in quantities(body):
            counts["numbers"] += 1
            if body[quantity.end:].startswith(NO_BASIS):
                counts["numbers_flagged"] += 1
            elif quantity.key not in basis:
                counts["numbers_unflagged_without_basis"] += 1
    return counts


LIST_ITEM_RE = re.compile(r"(?:[-*•·]|\d+[.、)]|[（(][一二三四五六七八九十\d]+[）)])\s*\S")


def broken_sections(answer: str) -> int:
    """Sections with no text, or whose text stops mid-sentence (【相关法条】 lists labels and is exempt, and so is a
    section ending in a list item, which needs no full stop)."""
    broken = 0
    for header, body in sections(answer):
        text = body.strip().replace(NO_BASIS, "").replace(QUOTE_MISMATCH, "").replace(UNVERIFIED_MARK, "")
        last_line = text.rsplit("\n", 1)[-1].strip()
        broken += not text or (header != STATUTE_SECTION and text[-1] not in ENDS
                               and not LIST_ITEM_RE.match(last_line))
    return broken


def text_scores(answer: str, texts: dict[str, str]) -> dict[str, int]:
    """The scores that read the answer text alone (recomputed from a log, so a fix to them applies to old rows)."""
    return {**quote_findings(answer, texts), "rendered_mismatches": rendered_mismatches(answer, texts),
            "broken_sections": broken_sections(answer)}


def score(result: RAGResult, gold: list[str], query: str, texts: dict[str, str]) -> dict[str, Any]:
    checks = result.trace.get("answer_checks") or {}
    rendered = checks.get("rendered_articles") or []
    return {
        **text_scores(result.answer, texts),
        "model_misquotes": sum(len(checks.get(k) or []) for k in ("quotes_replaced", "quotes_relabelled",
                                                                   "quotes_flagged")),
        "relabelled": len(checks.get("quotes_relabelled") or []),
        **number_findings(result, query),
        "echo": int((checks.get("sentences_removed") or 0) > 0),
        "sections_dropped": len(checks.get("sections_dropped") or []),
        "model_citation_recall": citation_recalls(result, gold)["model_citation_recall"],
        "gold_in_statutes": int(bool(set(rendered) & set(gold))),
        "has_statutes": int(bool(rendered)),
        "partial": int(result.situation == "partial"),
        "needs_human": int(result.needs_human),
        "seconds": result.trace.get("total_seconds", 0.0),
    }


COLUMNS = [  # (row field, heading, how: sum or mean)
    ("model_misquotes", "misquotes in the model's text (replaced, relabelled or flagged)", sum),
    ("relabelled", "of them relabelled (the quote was another evidence article's)", sum),
    ("misattributed_unflagged", "misattributed quotes left unflagged (goal 0)", sum),
    ("rendered_mismatches", "rendered text ≠ database (goal 0)", sum),
    ("numbers", "quantities stated", sum),
    ("numbers_flagged", "flagged 〔未见依据〕", sum),
    ("numbers_unflagged_without_basis", "unflagged without basis (goal 0)", sum),
    ("broken_sections", "broken sections (goal 0)", sum),
    ("echo", "echo rate", statistics.mean),
    ("model_citation_recall", "model's citation recall", statistics.mean),
    ("gold_in_statutes", "【相关法条】 holds a gold article", statistics.mean),
    ("partial", "partial", statistics.mean),
]


def write_report(args: argparse.Namespace, sample: int, rows: dict[str, dict[int, dict[str, Any]]], note: str) -> str:
    heading = " | ".join(h for _, h, _ in COLUMNS)
    lines = []
    for mode, by_qid in rows.items():
        done = list(by_qid.values())
        if not done:
            continue
        cells = []
        for field, _, how in COLUMNS:
            value = how([r.get(field, 0) for r in done])  # rows from before a column existed: 0
            cells.append(f"{value:.3f}" if how is statistics.mean else f"{value}")
        lines.append(f"| {mode} | {len(done)} | " + " | ".join(cells) +
                     f" | {statistics.median(r['seconds'] for r in done):.1f} |")
    report = f"""# Answer quality (STARD sample)

Command: `.venv/bin/python benchmarks/answers.py {' '.join(sys.argv[1:])}`
Sample: {sample} questions drawn with seed {args.seed} from `{Path(args.queries).name}`; all current articles indexed;
each question answered with the models its fold did not train. {note}
Per-question rows (not kept in git) are in `{args.log}`.

| mode | answers | {heading} | s/answer median |
|---|---|{'---|' * len(COLUMNS)}---|
{chr(10).join(lines)}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    return report


def run(args: argparse.Namespace, queries: list[dict[str, Any]], rows: dict[str, dict[int, dict[str, Any]]],
        ask: Callable[[dict[str, Any], str], RAGResult], texts: dict[str, str]) -> None:
    started = time.perf_counter()
    log_path = Path(args.log)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "a" if args.resume else "w", encoding="utf-8") as log:
        for mode in args.modes.split(","):  # one mode after the other: a time limit still gives whole modes
            for i, item in enumerate(queries, start=1):
                if args.max_minutes and time.perf_counter() - started > 60 * args.max_minutes:
                    return
                if item["qid"] in rows[mode]:
                    continue
                result = ask(item, mode)
                if result.answer_error:
                    sys.exit(f"stopped at question {item['qid']} ({mode}): the LLM wrote no answer "
                             f"({result.answer_error}); rerun with --resume once it is back.")
                row = {"qid": item["qid"], "mode": mode, **score(result, item["gold"], item["query"], texts),
                       "answer": result.answer}
                rows[mode][item["qid"]] = row
                log.write(json.dumps(row, ensure_ascii=False) + "\n")
                log.flush()
                print(f"{mode} {i}/{len(queries)} qid {item['qid']}: "
                      + ", ".join(f"{k}={row[k]}" for k in ("model_misquotes", "numbers_flagged", "broken_sections",
                                                            "gold_in_statutes", "seconds")), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--sample", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--modes", default="rag,agentic")
    parser.add_argument("--out", default="benchmarks/reports/answers.md")
    parser.add_argument("--log", default="benchmarks/runs/answers_runs.jsonl")
    parser.add_argument("--resume", action="store_true", help="keep the rows already in --log, run the rest")
    parser.add_argument("--max-minutes", type=float, default=0, help="start no new question after this (0 = none)")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--embedder", choices=("adapted", "base"), default="adapted")
    args = parser.parse_args()
    queries = random.Random(args.seed).sample(load_queries(args.queries), args.sample)
    modes = args.modes.split(",")
    texts = store_texts()
    rows = read_log(Path(args.log), modes) if args.resume or args.report_only else {m: {} for m in modes}
    for by_qid in rows.values():  # what reads the answer text alone is scored again (a scoring fix applies)
        for qid, row in by_qid.items():
            by_qid[qid] = {**row, **text_scores(row["answer"], texts)}
    if args.report_only:
        print(write_report(args, len(queries), rows, "Report written from the log."))
        return
    settings = bench_settings()
    endpoint = resolve_endpoint(settings)
    askers, fold_by_qid = fold_askers(settings, args.queries, queries, args.embedder)
    started = time.perf_counter()
    try:
        run(args, queries, rows, lambda item, mode: askers[fold_by_qid[item["qid"]]].ask(item["query"], mode=mode),
            texts)
    finally:
        close(askers)
    note = (f"LLM: {endpoint.kind} (`{endpoint.model}`); embedder: {args.embedder}; judge: {settings.judge}. "
            f"This run's wall time {time.perf_counter() - started:.0f} s.")
    print(write_report(args, len(queries), rows, note))


if __name__ == "__main__":
    main()
