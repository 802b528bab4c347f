"""Make the consultation-style dev set: each train question retold by the LLM as a layperson's story, gold unchanged.

STARD questions are short and name one legal point (median 23 characters); real consultations tell a story
(facts, people, money, irrelevant detail, colloquial words, the odd typo) and leave the legal point implicit. This
script asks the LLM the settings resolve (the embedded model by default) to retell every question of the train
file that way, checks each story (length, no law names, no article numbers, no legal citations) and retries once
with another seed when a check fails. About one story in four then gets one common homophone typo (fixed table,
seeded by the question id), as users make them. The gold articles stay the original question's: the story asks
the same thing.

Questions are taken in a fixed shuffled order, so ``--limit N`` gives a random subset and a later run extends it.
The output is appended line by line and questions already there are skipped: an interrupted run resumes.

    .venv/bin/python benchmarks/consultation_set.py [--queries PATH] [--out PATH] [--limit N]

Each line: ``{"qid", "query" (the story), "gold", "source_query", "typo", "attempts"}``; questions whose two
attempts both failed the checks are listed in ``<out>.rejected.jsonl`` with the reason, not in the set.
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

from haystack.dataclasses import ChatMessage

from benchmarks.metrics import load_queries
from benchmarks.retrieval import DEFAULT_QUERIES
from helpers.statutes.labels import key_law
from llm_access.factory import make_chat_generator

DEFAULT_OUT = Path(__file__).resolve().parents[1] / "training_data" / "consultations" / "stard_consultations.jsonl"
SYSTEM = "你是一个不懂法律的普通人，正在网上向律师咨询自己遇到的事。"
PROMPT = """下面是一个法律问题。请你把它改写成自己遇到这件事时向律师咨询的一段话：
- 用第一人称（我、我家、我朋友）讲清楚发生了什么：谁、什么时候、多少钱、怎么回事，\
可以编造合理的具体细节，再加一两句和法律无关的背景；
- 用日常口语，不要用法律术语，不要提任何法律的名称或第几条；
- 最后用自己的话问出同一个问题；
- 60到150字，只输出这段话本身。

问题：{question}"""
MIN_CHARS, MAX_CHARS = 30, 260
COPY_SHARE, COPY_MIN_CHARS = 0.5, 10  # a story holding half the question verbatim is the question, not a retelling
TYPO_SHARE = 0.25
# Homophones and near-forms laypeople confuse (the STARD questions themselves hold some: 公案 for 公安).
TYPOS = {"公安": "公案", "已经": "以经", "赔偿": "陪偿", "起诉": "起述", "离婚": "离昏", "工资": "工姿",
         "合同": "和同", "债务": "债物", "账": "帐", "做": "作", "再": "在", "在": "再",
         "的": "得", "得": "的", "那": "哪", "怎么": "咋么", "律师": "律是", "老板": "老版", "欠": "歉"}
CITATION = re.compile(r"第[一二三四五六七八九十百千零〇\d]+条|《|》")
DIALOGUE = re.compile(r"(律师|回答|答)[:：]")


def problems(story: str, source: str, gold: list[str]) -> str:
    """Why a story is not usable ('' when it is)."""
    if not MIN_CHARS <= len(story) <= MAX_CHARS:
        return f"length {len(story)}"
    if CITATION.search(story):
        return "cites a law or an article"
    if DIALOGUE.search(story):
        return "writes the lawyer's reply too"
    for law in {key_law(key) for key in gold}:
        short = law.removeprefix("中华人民共和国")
        if short and short in story:
            return f"names {short}"
    if sum("\u4e00" <= ch <= "\u9fff" for ch in story) < 0.6 * len(story):
        return "not mostly Chinese"
    copied = SequenceMatcher(None, source, story, autojunk=False).find_longest_match().size
    if story == source or copied >= max(COPY_MIN_CHARS, COPY_SHARE * len(source)):
        return f"copies {copied} characters of the question"
    return ""


def clean(text: str) -> str:
    """The story alone: no quotes around it, no label before it, one line."""
    text = re.sub(r"\s+", "", text or "")
    text = re.sub(r"^(咨询内容|改写|回答|咨询)[:：]", "", text)
    return text.strip("\"'“”「」")


def with_typo(story: str, qid: int) -> tuple[str, str]:
    """One homophone swap in about a quarter of the stories (seeded by the question id); the swap made or ''."""
    rng = random.Random(f"typo-{qid}")
    if rng.random() >= TYPO_SHARE:
        return story, ""
    present = [word for word in TYPOS if word in story]
    if not present:
        return story, ""
    word = rng.choice(sorted(present))
    positions = [m.start() for m in re.finditer(re.escape(word), story)]
    at = rng.choice(positions)
    return story[:at] + TYPOS[word] + story[at + len(word):], f"{word}→{TYPOS[word]}"


def retell(generator, question: str, seed: int) -> str:
    reply = generator.run(messages=[ChatMessage.from_system(SYSTEM),
                                    ChatMessage.from_user(PROMPT.format(question=question))],
                          generation_kwargs={"temperature": 0.8, "top_p": 0.95, "max_tokens": 320, "seed": seed})
    return clean(reply["replies"][0].text or "")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", default=str(DEFAULT_QUERIES))
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--limit", type=int, default=0, help="questions to have in the set (0 = all)")
    args = parser.parse_args()
    out = Path(args.out)
    rejected_path = out.with_suffix(".rejected.jsonl")
    out.parent.mkdir(parents=True, exist_ok=True)
    questions = load_queries(args.queries)
    random.Random(0).shuffle(questions)
    done = {q["qid"] for path in (out, rejected_path) if path.exists() for q in load_queries(path)}
    kept = sum(1 for _ in load_queries(out)) if out.exists() else 0
    wanted = args.limit or len(questions)
    todo = [q for q in questions if q["qid"] not in done]
    print(f"{len(done)} questions already done ({kept} kept); up to {max(0, wanted - kept)} to go", flush=True)
    generator = make_chat_generator()
    started = time.perf_counter()
    made = 0
    with out.open("a", encoding="utf-8") as keep, rejected_path.open("a", encoding="utf-8") as reject:
        for item in todo:
            if kept >= wanted:
                break
            reasons = []
            for attempt in (1, 2):
                story = retell(generator, item["query"], seed=item["qid"] * 10 + attempt)
                reason = problems(story, item["query"], item["gold"])
                if not reason:
                    story, typo = with_typo(story, item["qid"])
                    keep.write(json.dumps({"qid": item["qid"], "query": story, "gold": item["gold"],
                                           "source_query": item["query"], "typo": typo, "attempts": attempt},
                                          ensure_ascii=False) + "\n")
                    keep.flush()
                    kept += 1
                    break
                reasons.append(reason)
            else:
                reject.write(json.dumps({"qid": item["qid"], "source_query": item["query"], "reasons": reasons},
                                        ensure_ascii=False) + "\n")
                reject.flush()
            made += 1
            if made % 10 == 0:
                rate = (time.perf_counter() - started) / made
                print(f"{made} questions, {kept} kept, {rate:.1f} s per question", flush=True)
    print(f"done: {kept} stories in {out}", flush=True)


if __name__ == "__main__":
    main()
