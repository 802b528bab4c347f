"""Does 【问题分析】 analyse the question, or restate it? (issue 50, item 6)

The answer prompt asked for 【问题分析】 as "简述问题涉及的法律关系", and the local model often wrote the question back.
This study holds the evidence fixed (each question's gold articles and their neighbours, from the statute database)
and varies only that one instruction, over a seeded sample of real STARD train questions (half of them ≥ 30
characters), with the embedded model:

- ``before``: "简述问题涉及的法律关系。" (the prompt until this study);
- ``after``: `pipelines.prompts.ANALYSIS` (the legal relation and the disputed point, in the model's own words).

Measured on the 【问题分析】 section of each answer:

- **restates**: the section copies the question: a common substring of ≥ 60 % of the question (at least 8
  characters), or ≥ 80 % of the question's character bigrams reappear in a section at most 1.5 × its length;
- **relation** / **disputed point**: it names the legal relation (…关系) / the point in dispute (争议, 焦点, 关键,
  是否, 能否, 应否);
- and, over the whole answer, whether the model's own verified citations name a gold article (the change must not
  cost citations).

    .venv/bin/python research/analysis_prompt_study.py [--questions 24] [--seed 7] \\
        [--out research/reports/analysis_prompt_study.md]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import sys
import time
from difflib import SequenceMatcher
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from haystack import Document
from haystack.components.builders import ChatPromptBuilder
from haystack.dataclasses import ChatMessage

from components.generators.answer_generator import AnswerGenerator
from document_store.statute_db import StatuteDB
from helpers.checks.answer_check import AnswerChecker
from pipelines import prompts

QUESTIONS = Path(__file__).resolve().parent.parent / "training_data" / "stard" / "stard_train_with_criminal.jsonl"
BEFORE = "【问题分析】简述问题涉及的法律关系。"
LONG = 30
DISPUTE = re.compile(r"争议|焦点|关键|是否|能否|应否|可否")
SECTION = re.compile(r"【问题分析】(.*?)(?=【|$)", re.DOTALL)


def sample(count: int, seed: int) -> list[dict]:
    rows = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    rng = random.Random(seed)
    long = rng.sample([r for r in rows if len(r["query"]) >= LONG], count // 2)
    short = rng.sample([r for r in rows if len(r["query"]) < LONG], count - count // 2)
    return long + short


def evidence_for(db: StatuteDB, gold: list[str], limit: int = 5) -> list[Document]:
    """The gold articles and their neighbours (±1), at most ``limit``: the same evidence for both prompts."""
    picked: dict[str, Document] = {}
    for key in gold:
        law = next((name for name in db.law_counts() if key.startswith(name)), None)
        if law is None:
            continue
        docs = db.articles(law)
        at = next((i for i, d in enumerate(docs) if f"{law}{d.meta['article_no']}" == key), None)
        if at is None:
            continue
        for doc in [docs[at], *docs[max(0, at - 1):at], *docs[at + 1:at + 2]]:
            picked.setdefault(f"{law}{doc.meta['article_no']}", doc)
    evidence = list(picked.values())[:limit]
    for i, doc in enumerate(evidence, start=1):
        doc.meta.update(evidence_label=f"证据{i}", key=f"{doc.meta['law']}{doc.meta['article_no']}")
    return evidence


def restates(section: str, question: str) -> bool:
    question = re.sub(r"\s", "", question).rstrip("？?。")
    section = re.sub(r"\s", "", section)
    if not question or not section:
        return False
    match = SequenceMatcher(None, question, section, autojunk=False).find_longest_match()
    if match.size >= max(8, 0.6 * len(question)):
        return True
    bigrams = {question[i:i + 2] for i in range(len(question) - 1)}
    shared = sum(bigram in section for bigram in bigrams) / max(1, len(bigrams))
    return shared >= 0.8 and len(section) <= 1.5 * len(question)


def template(analysis: str) -> list[ChatMessage]:
    user = prompts.answer_user()
    assert prompts.ANALYSIS in user  # the instruction this study swaps
    return [ChatMessage.from_system(prompts.ANSWER_SYSTEM),
            ChatMessage.from_user(user.replace(prompts.ANALYSIS, analysis))]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--questions", type=int, default=24)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", default="research/reports/analysis_prompt_study.md")
    args = parser.parse_args()
    db = StatuteDB()
    generator = AnswerGenerator()
    generator.warm_up()
    variants = {"before": template(BEFORE), "after": template(prompts.ANALYSIS)}
    builders = {name: ChatPromptBuilder(template=messages, required_variables=["query", "evidence", "situation"])
                for name, messages in variants.items()}
    rows, started = [], time.perf_counter()
    for item in sample(args.questions, args.seed):
        evidence = evidence_for(db, item["gold"])
        if not evidence:
            continue
        for name, builder in builders.items():
            messages = builder.run(query=item["query"], evidence=evidence, situation="sufficient", notes="")["prompt"]
            out = generator.run(messages=messages, situation="sufficient")
            checked = AnswerChecker(evidence, item["query"]).check(out["text"]) if out["text"] else None
            found = SECTION.search(out["text"] or "")
            section = found.group(1).strip() if found else ""
            cited = {d.meta["key"] for d in checked.verified} if checked else set()
            rows.append({"qid": item["qid"], "long": len(item["query"]) >= LONG, "prompt": name,
                         "question": item["query"], "section": section, "error": out["error"],
                         "restates": restates(section, item["query"]), "relation": "关系" in section,
                         "dispute": bool(DISPUTE.search(section)), "gold_cited": bool(cited & set(item["gold"]))})
            row = rows[-1]
            print(f"{name:6} restates={row['restates']} relation={row['relation']} dispute={row['dispute']} "
                  f"gold={row['gold_cited']} {item['query'][:30]}", flush=True)
    write_report(rows, args, time.perf_counter() - started)


def write_report(rows: list[dict], args: argparse.Namespace, seconds: float) -> None:
    def line(name: str, subset: str, picked: list[dict]) -> str:
        n = len(picked)
        rate = (lambda key: f"{sum(r[key] for r in picked) / n:.2f}") if n else (lambda key: "–")
        return (f"| {name} | {subset} | {n} | {rate('restates')} | {rate('relation')} | {rate('dispute')} | "
                f"{rate('gold_cited')} |")

    table = []
    for name in ("before", "after"):
        mine = [r for r in rows if r["prompt"] == name and not r["error"]]
        table += [line(name, "all", mine), line(name, "long (≥ 30)", [r for r in mine if r["long"]]),
                  line(name, "short", [r for r in mine if not r["long"]])]
    examples = "\n".join(f"| {r['qid']} | {r['prompt']} | {r['question'][:40]} | {r['section'][:80]} |"
                         for r in rows[:16])
    report = f"""# 【问题分析】: analysis or restatement? (issue 50, item 6)

Command: `.venv/bin/python research/analysis_prompt_study.py {' '.join(sys.argv[1:])}`
{len({r['qid'] for r in rows})} real STARD train questions (seed {args.seed}; half ≥ 30 characters) \
× 2 prompts; the embedded
model; fixed evidence (each question's gold articles and their neighbours); wall time {seconds:.0f} s.
Machine: AMD EPYC with AVX-512 VNNI, 2 cores. Answers whose model call failed are left out.

- before: `{BEFORE}`
- after: `{prompts.ANALYSIS}`

| prompt | slice | answers | restates the question | names the relation | \
names the disputed point | a gold article cited |
|---|---|---|---|---|---|---|
{chr(10).join(table)}

First answers' 【问题分析】 (truncated):

| qid | prompt | question | 【问题分析】 |
|---|---|---|---|
{examples}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
