"""What keeping every prompt token's logits costs the embedded LLM server (llama.cpp's ``logits_all``).

llama-cpp-python's server keeps the logits of every prompt token by default, because its completions can only
return ``logprobs`` that way; of this project only the LLM reranker (`LLMRelevanceRanker`, P(是)) reads them. This
probe starts the embedded server both ways and sends the same requests to each, one after the other, nothing else
running:

- answer-sized requests: the answer prompt's system message and five 《个人信息保护法》 articles as evidence (other
  articles in each request), the answer capped at ``--answer-tokens`` tokens;
- ``--rerank-calls`` single yes/no reranker requests (max_tokens 1), with logprobs where the server keeps them.

Reported: seconds per request (median of ``--repeats``), prompt tokens, and the server's peak resident memory
(VmHWM) after the requests.

    .venv/bin/python research/llm_logits_probe.py [--repeats 3] [--answer-tokens 200] \\
        [--out research/reports/llm_logits_probe.md]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from openai import OpenAI

from config.settings import Settings
from document_store.statute_db import StatuteDB
from llm_access.embedded_server import MODEL_ALIAS, EmbeddedLLMServer
from pipelines.prompts import ANSWER_SYSTEM

LAW = "中华人民共和国个人信息保护法"
QUESTION = "公司收集我的个人信息需要我同意吗"


def peak_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def timed(client: OpenAI, messages: list[dict], **kwargs) -> tuple[float, int, int]:
    """Seconds, prompt tokens and tokens written of one request."""
    started = time.perf_counter()
    reply = client.chat.completions.create(model=MODEL_ALIAS, messages=messages, temperature=0, **kwargs)
    return time.perf_counter() - started, reply.usage.prompt_tokens, reply.usage.completion_tokens


def answer_messages(evidence: str) -> list[dict]:
    return [{"role": "system", "content": ANSWER_SYSTEM},
            {"role": "user", "content": f"证据：\n{evidence}\n\n问题：{QUESTION}\n请根据证据回答，引用条文。"}]


def probe(settings: Settings, logprobs: bool, evidence: list[str], passages: list[str],
          args: argparse.Namespace) -> dict:
    """``evidence``: one text per request (the warm-up first), so that no request reuses another's evaluated prompt."""
    server = EmbeddedLLMServer(settings.llm_gguf, n_ctx=settings.llm_ctx, n_threads=settings.llm_threads,
                               logprobs=logprobs).start()
    try:
        client = OpenAI(base_url=server.base_url, api_key="sk-local-no-key")
        timed(client, answer_messages(evidence[0]), max_tokens=8)  # warm: the model's pages, the first allocation
        answers = [timed(client, answer_messages(text), max_tokens=args.answer_tokens) for text in evidence[1:]]
        extra = {"logprobs": True, "top_logprobs": 10} if logprobs else {}
        ranks = [timed(client, [{"role": "system", "content": "判断条文是否回答问题，只答“是”或“否”。"},
                                {"role": "user", "content": f"问题：{QUESTION}\n条文：{text}"}], max_tokens=1, **extra)
                 for text in passages[: args.rerank_calls]]
        return {"answer_s": statistics.median(a[0] for a in answers),
                "answer_tokens": statistics.median(a[1] for a in answers),
                "written": statistics.median(a[2] for a in answers),
                "rerank_s": statistics.median(r[0] for r in ranks),
                "rerank_tokens": statistics.median(r[1] for r in ranks),
                "peak_mib": peak_rss_mib(server.pid)}
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--answer-tokens", type=int, default=200)
    parser.add_argument("--rerank-calls", type=int, default=10)
    parser.add_argument("--out", default="research/reports/llm_logits_probe.md")
    args = parser.parse_args()
    settings = Settings.from_env()
    articles = StatuteDB().articles(LAW)
    evidence = ["\n".join(f"《个人信息保护法》{d.meta['article_no']}：{d.content}" for d in articles[start:start + 5])
                for start in range(10, 10 + 5 * (args.repeats + 1), 5)]
    passages = [(d.content or "")[:160] for d in articles[:args.rerank_calls]]
    rows = {flag: probe(settings, flag, evidence, passages, args) for flag in (True, False)}
    lines = [f"| {'kept (today)' if flag else 'not kept'} | {r['answer_tokens']:.0f} | {r['written']:.0f} | "
             f"{r['answer_s']:.1f} | "
             f"{r['rerank_tokens']:.0f} | {r['rerank_s']:.2f} | {r['peak_mib']:,.0f} |" for flag, r in rows.items()]
    text = f"""# The embedded LLM server with and without every prompt token's logits

Command: `.venv/bin/python research/llm_logits_probe.py {' '.join(sys.argv[1:])}`
Model `{Path(settings.llm_gguf).name}`, n_ctx {settings.llm_ctx}, {settings.llm_threads} threads; \
{platform.processor() or platform.machine()},
nothing else running. Answer: {args.repeats} requests, each with other evidence (median), \
at most {args.answer_tokens} tokens written. Reranker:
{args.rerank_calls} yes/no requests of one token (median), with logprobs only where they are kept.

| logits of every prompt token | answer prompt tokens | tokens written | s per answer | reranker prompt tokens | \
s per reranker call | server peak RSS (MiB) |
|---|---|---|---|---|---|---|
{chr(10).join(lines)}
"""
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
