"""Does telling the local model how to apply a tiered rule help it state the right one? (issue 20)

Statutes often set tiers by condition (劳动合同期限三个月以上不满一年的…一年以上不满三年的…). The answer prompt can
ask the model to say which tier the facts fall in (`pipelines.prompts.TIERS`) and show it one worked example
outside the statutes (`TIER_EXAMPLE`); this study compares the three `TIER_GUIDANCE` variants (none, the
instruction, the instruction and the example) on whether the stated rule is right.

Each question below has one tier that a lawyer would apply, and the figure or phrase that tier gives. The answer
stage runs with the question's governing article and its neighbours as evidence (the same for both prompts, so
only the prompt differs), the sufficient-evidence structure, and the embedded model. An answer is **right** when
the model's own prose (not the rendered 【相关法条】) states the tier's result, and **wrong** when its
【法律解释】 / conclusion states another tier's figure as the answer and never the right one.

    .venv/bin/python research/tier_prompt_study.py [--repeats 1] [--out research/reports/tier_prompt_study.md]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from haystack import Document
from haystack.components.builders import ChatPromptBuilder
from haystack.dataclasses import ChatMessage

from components.generators.answer_generator import AnswerGenerator
from document_store.statute_db import StatuteDB
from helpers.checks.answer_check import STATUTE_SECTION, AnswerChecker
from helpers.statutes.quantities import quantities
from pipelines.prompts import ANSWER_SYSTEM, TIER_GUIDANCE, answer_user

LABOUR = "中华人民共和国劳动合同法"
LABOUR_ACT = "中华人民共和国劳动法"
PUBLIC_ORDER = "中华人民共和国治安管理处罚法"
CIVIL = "中华人民共和国民法典"
# (question, law, article, the right tier's result: a quantity (value, unit) or a phrase, other tiers' results)
CASES: list[tuple[str, str, str, tuple[float, str] | str, list[tuple[float, str] | str]]] = [
    ("签一年的劳动合同，试用期最长可以约定多久？", LABOUR, "第十九条", (2, "月"), [(1, "月"), (6, "月")]),
    ("签了半年的劳动合同，试用期最长多久？", LABOUR, "第十九条", (1, "月"), [(2, "月"), (6, "月")]),
    ("签了五年的劳动合同，试用期最长能约定多久？", LABOUR, "第十九条", (6, "月"), [(1, "月"), (2, "月")]),
    ("只签两个月的劳动合同，可以约定试用期吗？", LABOUR, "第十九条", "不得约定", [(1, "月")]),
    ("在公司干了八个月被辞退，经济补偿怎么算？", LABOUR, "第四十七条", "按一年计算", [(0.5, "月")]),
    ("工作了四个月就被辞退，经济补偿有多少？", LABOUR, "第四十七条", (0.5, "月"), ["按一年计算"]),
    ("法定节假日让我加班，工资怎么算？", LABOUR_ACT, "第四十四条", (300, "%"), [(150, "%"), (200, "%")]),
    ("周末加班又不给补休，加班费怎么算？", LABOUR_ACT, "第四十四条", (200, "%"), [(150, "%"), (300, "%")]),
    ("平时下班后延长工作时间，加班费怎么算？", LABOUR_ACT, "第四十四条", (150, "%"), [(200, "%"), (300, "%")]),
    ("十三岁的孩子违反治安管理，会被处罚吗？", PUBLIC_ORDER, "第十二条", "不予处罚", ["从轻或者减轻"]),
    ("十六岁的孩子违反治安管理，会怎么处罚？", PUBLIC_ORDER, "第十二条", "从轻或者减轻", ["不予处罚"]),
    ("十岁的孩子自己花钱买了一台游戏机，这个买卖有效吗？", CIVIL, "第十九条", "限制民事行为能力", ["无民事行为能力人"]),
    ("七岁的孩子自己买了一台游戏机，这个买卖有效吗？", CIVIL, "第二十条", "无民事行为能力", ["限制民事行为能力人"]),
]


def evidence_for(db: StatuteDB, law: str, article: str) -> list[Document]:
    """The governing article and the two before and after it in its law (fixed evidence for both prompts)."""
    docs = db.articles(law)
    at = next(i for i, d in enumerate(docs) if d.meta["article_no"] == article)
    picked = docs[max(0, at - 2):at + 3]
    for i, doc in enumerate(picked, start=1):
        doc.meta.update(evidence_label=f"证据{i}", key=f"{law}{doc.meta['article_no']}")
    return picked


def prose(answer: str) -> str:
    """The model's own words: the answer without its rendered 【相关法条】 section."""
    head, _, rest = answer.partition(f"【{STATUTE_SECTION}】")
    return head + ("【" + rest.split("【", 1)[1] if "【" in rest else "")


def states(text: str, result: tuple[float, str] | str) -> bool:
    if isinstance(result, str):
        return result in text
    return any(q.key == (float(result[0]), result[1]) for q in quantities(text))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--out", default="research/reports/tier_prompt_study.md")
    args = parser.parse_args()
    db = StatuteDB()
    generator = AnswerGenerator()
    generator.warm_up()
    builders = {name: ChatPromptBuilder(template=[ChatMessage.from_system(ANSWER_SYSTEM),
                                                  ChatMessage.from_user(answer_user(name))],
                                        required_variables=["query", "evidence", "situation"])
                for name in TIER_GUIDANCE}
    rows, started = [], time.perf_counter()
    for question, law, article, right, others in CASES:
        evidence = evidence_for(db, law, article)
        for name, builder in builders.items():
            for repeat in range(args.repeats):
                messages = builder.run(query=question, evidence=evidence, situation="sufficient", notes="")["prompt"]
                out = generator.run(messages=messages, situation="sufficient")
                text = prose(AnswerChecker(evidence, question).check(out["text"]).text) if out["text"] else ""
                ok = states(text, right)
                wrong = not ok and any(states(text, other) for other in others)
                rows.append((question, name, repeat, ok, wrong, out["error"]))
                print(f"{name:8} right={ok} wrong={wrong} {question}", flush=True)
    summary = []
    for name in builders:
        mine = [r for r in rows if r[1] == name and not r[5]]
        summary.append(f"| {name} | {len(mine)} | {sum(r[3] for r in mine)} | {sum(r[4] for r in mine)} |")
    detail = "\n".join(f"| {q} | {n} | {'right' if ok else 'wrong' if bad else '–'} |" for q, n, _, ok, bad, _ in rows)
    report = f"""# Tier prompt study: does a worked example help apply tiered rules?

Command: `.venv/bin/python research/tier_prompt_study.py {' '.join(sys.argv[1:])}`
{len(CASES)} questions × {len(builders)} prompts × {args.repeats} repeat(s); the embedded model; \
fixed evidence (the governing
article and its neighbours); wall time {time.perf_counter() - started:.0f} s. "right": the model's prose states the
applicable tier's result; "wrong": it states another tier's result and not the right one; "–": neither.

| prompt | answers | right | wrong |
|---|---|---|---|
{chr(10).join(summary)}

| question | prompt | outcome |
|---|---|---|
{detail}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
