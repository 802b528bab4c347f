"""Load: N concurrent clients (one level after the other) for a bounded time against the real server on 127.0.0.1,
with the scripted LLM server, so latency is the system's own overhead and not model time. Reports requests/s,
p50/p95/max latency, errors and the server's resident memory (sampled every 0.5 s); the first level runs again at
the end to show whether memory plateaus. Indexes the default law into a temporary folder.

Each client loops over ``--mix`` (``retrieve``/``rag``/``agentic``: ``POST /agentic_rag/run`` in that mode;
``stream``: a streaming ``POST /v1/chat/completions`` in agentic mode), starting at its own offset; every request
takes the next STARD train query from one shared cycle.

    .venv/bin/python benchmarks/load.py [--clients 8,32] [--seconds 20] [--warmup 5]
        [--mix retrieve,rag,agentic,retrieve,stream] [--out benchmarks/reports/load.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import httpx
import psutil

from benchmarks.metrics import load_queries, percentile
from benchmarks.retrieval import DEFAULT_QUERIES
from config.settings import DEFAULT_LAW, Settings
from harness.app_server import server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.server_process import ServerProcess
from pipelines.indexing import Indexer, law_sources
from pipelines.stores import open_document_store

ROOT = Path(__file__).resolve().parent.parent
E5_MODEL = ROOT / "models" / "multilingual-e5-small"
KINDS = ("retrieve", "rag", "agentic", "stream")
MIB = 1024 * 1024
PLATEAU_TOLERANCE_MIB = 10.0
SCRIPTED_CORE = "处理个人信息应当取得同意"  # survives the finalizer's citation marks and appended article list
SCRIPTED_ANSWER = f"需要。依据《{DEFAULT_LAW}》第十四条，{SCRIPTED_CORE}。"
SCRIPTED_RULES = {  # the agentic pipeline passes in one round: rewrite, judge (34 ≥ pass score 32), answer
    "你是中国法律检索专家": '{"variants": ["处理个人信息应当取得个人同意"], "keywords": ["同意"]}',
    "法律检索质量评估员": '{"reasoning": "相关", "relevance": 9, "completeness": 8, "accuracy": 9, "coverage": 8}',
    "严谨的中国法律咨询助手": SCRIPTED_ANSWER,
}
IN_FLIGHT_MARK = "（在途长回答）"  # questions of the one agentic answer kept in flight beside the levels
LLM_FAILURES = ("LLM 调用失败", "LLM 请求超时", "LLM 暂时不可用", "LLM 返回了空回复")  # llm_access/call_policy.py


@dataclass
class Outcome:
    kind: str
    query: str
    ms: float = 0.0
    error: str | None = None  # non-200 status, exception, stream without its final event or with an error event
    issue: str | None = None  # a 200 with wrong content
    cached: bool = False


@dataclass
class Level:
    name: str
    clients: int
    outcomes: list[Outcome]
    seconds: float
    rss_before: float
    rss_after: float
    rss_peak: float
    threads_after: int
    fds_after: int

    @property
    def errors(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.error]

    @property
    def issues(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.issue]


class QueryCycle:
    """The next query of a fixed list, shared by every client thread."""

    def __init__(self, queries: list[str]) -> None:
        self.queries, self._next, self._lock = queries, 0, threading.Lock()

    def next(self) -> str:
        with self._lock:
            query = self.queries[self._next % len(self.queries)]
            self._next += 1
            return query

    @property
    def used(self) -> int:
        return self._next


@dataclass
class RSSSampler:
    """Samples the resident memory (MiB) of one process every ``interval`` seconds in a background thread."""

    pid: int
    interval: float = 0.5
    samples: list[tuple[float, float]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def now(self) -> float:
        return psutil.Process(self.pid).memory_info().rss / MIB

    def handles(self) -> tuple[int, int]:
        """The process's thread count and open file descriptors."""
        process = psutil.Process(self.pid)
        return process.num_threads(), process.num_fds()

    def start(self) -> None:
        threading.Thread(target=self._run, daemon=True).start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.samples.append((time.monotonic(), self.now()))

    def peak(self, since: float, until: float) -> float:
        return max((rss for t, rss in self.samples if since <= t <= until), default=0.0)


def run_request(client: httpx.Client, kind: str, query: str) -> Outcome:
    started = time.perf_counter()
    try:
        outcome = (send_stream if kind == "stream" else send_run)(client, kind, query)
    except httpx.HTTPError as exc:
        outcome = Outcome(kind, query, error=one_line(f"{type(exc).__name__}: {exc}"))
    outcome.ms = 1000 * (time.perf_counter() - started)
    return outcome


def one_line(text: str, limit: int = 160) -> str:
    return " ".join(text.split())[:limit]


def checked(kind: str, query: str, result: dict[str, Any]) -> Outcome:
    """A 200 can still carry wrong content: no documents, an LLM call that failed inside the pipeline (recorded in
    the trace), or an answer without the scripted text."""
    if kind == "retrieve":
        return Outcome(kind, query, issue=None if result["documents"] else "no documents retrieved")
    outcome = Outcome(kind, query, cached=bool(result["trace"].get("cached")))
    text = json.dumps(result, ensure_ascii=False)
    if failure := next((marker for marker in LLM_FAILURES if marker in text), None):
        outcome.issue = f"LLM call failed inside the request: {failure}"
    elif SCRIPTED_CORE not in result["answer"]:
        outcome.issue = f"answer without the scripted text: {one_line(result['answer'])}"
    return outcome


def send_run(client: httpx.Client, mode: str, query: str) -> Outcome:
    response = client.post("/agentic_rag/run", json={"query": query, "mode": mode})
    if response.status_code != 200:
        return Outcome(mode, query, error=f"HTTP {response.status_code}: {one_line(response.text)}")
    return checked(mode, query, response.json()["result"])


def send_stream(client: httpx.Client, kind: str, query: str) -> Outcome:
    """A streaming chat request (agentic mode); it must end with a ``rag_result`` event, and its text chunks (all a
    plain OpenAI client shows) must carry the scripted answer."""
    body = {"model": "agentic_rag", "stream": True, "mode": "agentic", "messages": [{"role": "user", "content": query}]}
    streamed, result = "", None
    with client.stream("POST", "/v1/chat/completions", json=body) as response:
        if response.status_code != 200:
            error = f"HTTP {response.status_code}: {one_line(response.read().decode(errors='replace'))}"
            return Outcome(kind, query, error=error)
        for line in response.iter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            data = json.loads(line[6:])
            event = data.get("event", {})
            if event.get("type") == "rag_error":
                return Outcome(kind, query, error=f"rag_error event: {one_line(str(event.get('data')))}")
            if event.get("type") == "rag_result":
                result = event["data"]
            streamed += "".join(c["delta"].get("content") or "" for c in data.get("choices", []))
    if result is None:
        return Outcome(kind, query, error="stream ended without a rag_result event")
    outcome = checked(kind, query, result)
    if outcome.issue is None and SCRIPTED_CORE not in streamed:
        outcome.issue = (f"streamed text without the scripted answer: {one_line(streamed)!r}; rag_result answer: "
                         f"{one_line(result['answer'], 60)!r}")
    return outcome


def client_loop(base_url: str, mix: list[str], offset: int, queries: QueryCycle, deadline: float,
                timeout: float, out: list[Outcome]) -> None:
    """Send requests one after the other until ``deadline`` (the request in flight then still completes)."""
    with httpx.Client(base_url=base_url, timeout=timeout) as client:
        step = offset
        while time.monotonic() < deadline:
            out.append(run_request(client, mix[step % len(mix)], queries.next()))
            step += 1


def in_flight_loop(base_url: str, queries: QueryCycle, stop: threading.Event, timeout: float,
                   out: list[Outcome]) -> None:
    """Keep one agentic answer in flight until ``stop``: the scripted LLM writes its answers slowly (a sentence per
    ``--in-flight-seconds``/20), as a long answer of a real model would; each question is new (no cache hit)."""
    with httpx.Client(base_url=base_url, timeout=timeout) as client:
        while not stop.is_set():
            out.append(run_request(client, "agentic", f"{queries.next()}{IN_FLIGHT_MARK}{len(out)}"))


def run_level(name: str, clients: int, seconds: float, base_url: str, mix: list[str], queries: QueryCycle,
              sampler: RSSSampler, timeout: float) -> Level:
    rss_before = sampler.now()
    started = time.monotonic()
    per_client: list[list[Outcome]] = [[] for _ in range(clients)]
    threads = [threading.Thread(target=client_loop, args=(base_url, mix, i, queries, started + seconds, timeout, out))
               for i, out in enumerate(per_client)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ended = time.monotonic()
    rss_after = sampler.now()
    level = Level(name, clients, [o for out in per_client for o in out], ended - started, rss_before, rss_after,
                  max(rss_before, rss_after, sampler.peak(started, ended)), *sampler.handles())
    print(f"{name}: {len(level.outcomes)} requests in {level.seconds:.1f} s, {len(level.errors)} errors, "
          f"{len(level.issues)} wrong content, "
          f"RSS {rss_before:.0f} → {rss_after:.0f} MiB (peak {level.rss_peak:.0f}), {level.threads_after} threads, "
          f"{level.fds_after} fds", flush=True)
    return level


def index_default_law(env: dict[str, str | None]) -> int:
    """Index the default law into the temporary DATA_DIR of ``env``; the store is closed before the server opens
    it (one process per embedded Qdrant path)."""
    for name, value in env.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    settings = Settings.from_env()
    store = open_document_store(settings)
    try:
        Indexer(store, settings).index(law_sources(list(settings.default_laws)), progress=False)
        return store.count_documents()
    finally:
        store.close()


def latency_row(label: str, outcomes: list[Outcome], seconds: float) -> str:
    ok = [o.ms for o in outcomes if not o.error]
    latencies = f"{statistics.median(ok):.0f} | {percentile(ok, 95):.0f} | {max(ok):.0f}" if ok else "– | – | –"
    counts = [len(outcomes) - len(ok), sum(bool(o.issue) for o in outcomes), sum(o.cached for o in outcomes)]
    return (f"| {label} | {len(outcomes)} | {len(outcomes) / seconds:.2f} | {latencies} | "
            f"{' | '.join(map(str, counts))} |")


def most_frequent(title: str, outcomes: list[Outcome], message: Callable[[Outcome], str | None]) -> str:
    """The five most frequent messages, each with the number of requests and one query that got it."""
    counts = Counter(message(o) for o in outcomes)
    example = {message(o): o.query for o in outcomes}
    lines = [f"- {n} × `{text}` (e.g. query `{example[text]}`)" for text, n in counts.most_common(5)]
    return f"\n{title}:\n\n" + "\n".join(lines) + "\n" if lines else ""


def rate(level: Level) -> float:
    return len(level.outcomes) / level.seconds


def issue_note(levels: list[Level]) -> str:
    """Whether wrong content also occurred at the lowest concurrency (then it is not only an effect of load)."""
    lowest = min(level.clients for level in levels)
    at_lowest = sum(len(level.issues) for level in levels if level.clients == lowest)
    if not any(level.issues for level in levels):
        return ""
    return f" ({at_lowest} of them with {lowest} clients, the lowest concurrency measured)"


def median_ms(outcomes: list[Outcome]) -> float:
    return statistics.median([o.ms for o in outcomes if not o.error] or [float("nan")])


def level_section(level: Level) -> str:
    rows = [latency_row("**all**", level.outcomes, level.seconds)]
    rows += [latency_row(kind, [o for o in level.outcomes if o.kind == kind], level.seconds)
             for kind in KINDS if any(o.kind == kind for o in level.outcomes)]
    section = f"""### {level.name}: {level.clients} clients, {level.seconds:.1f} s

| requests | count | req/s | p50 ms | p95 ms | max ms | errors | wrong content | cache hits |
|---|---|---|---|---|---|---|---|---|
{chr(10).join(rows)}

Server RSS: {level.rss_before:.1f} MiB before, {level.rss_after:.1f} MiB after, {level.rss_peak:.1f} MiB peak.
"""
    section += most_frequent("Most frequent errors", level.errors, lambda o: f"{o.kind}: {o.error}")
    return section + most_frequent("Most frequent wrong content", level.issues, lambda o: f"{o.kind}: {o.issue}")


def plateau_verdict(levels: list[Level]) -> tuple[bool, str]:
    """Did the repeat of the first level stay within the high-water mark that the levels before it set?"""
    repeat, earlier = levels[-1], levels[:-1]
    high = max(level.rss_peak for level in earlier)
    plateaued = repeat.rss_peak <= high + PLATEAU_TOLERANCE_MIB
    growth = repeat.rss_after - repeat.rss_before
    per_1000 = 1000 * growth / max(1, len(repeat.outcomes))
    text = (f"The repeat of the first level peaked at {repeat.rss_peak:.1f} MiB against a high-water mark of "
            f"{high:.1f} MiB before it (tolerance {PLATEAU_TOLERANCE_MIB:.0f} MiB); during the repeat RSS changed by "
            f"{growth:+.1f} MiB over {len(repeat.outcomes)} requests ({per_1000:+.1f} MiB per 1000 requests), and "
            f"across the whole run (after warm-up → end) by {repeat.rss_after - levels[0].rss_before:+.1f} MiB. "
            f"RSS **{'plateaued' if plateaued else 'did not plateau'}**.")
    return plateaued, text


def render(args: argparse.Namespace, meta: dict[str, str], warmup: Level, levels: list[Level]) -> str:
    plateaued, memory_text = plateau_verdict(levels)
    errors = sum(len(level.errors) for level in levels)
    issues = sum(len(level.issues) for level in levels)
    memory_rows = "\n".join(
        f"| {level.name}, {level.clients} clients | {level.rss_before:.1f} | {level.rss_after:.1f} | "
        f"{level.rss_peak:.1f} | {level.rss_after - level.rss_before:+.1f} | {level.threads_after} | "
        f"{level.fds_after} |" for level in [warmup, *levels])
    met = errors == 0 and plateaued
    throughput = "; ".join(f"{level.name}, {level.clients} clients: {rate(level):.1f} req/s, "
                           f"p50 {median_ms(level.outcomes):.0f} ms" for level in levels)
    first, busiest = levels[0], max(levels, key=lambda level: level.clients)
    reading = (
        f"Over {sum(len(level.outcomes) for level in levels)} measured requests there were {errors} errors"
        f"{'' if errors else ' (no non-200 status, exception, timeout or failed stream)'} and {issues} requests "
        f"with wrong content in a 200 response{issue_note(levels)}. Throughput and median latency ({throughput}): "
        f"from {first.clients} to {busiest.clients} clients throughput changed by "
        f"{100 * (rate(busiest) / rate(first) - 1):+.0f}% and p50 latency by a factor of "
        f"{median_ms(busiest.outcomes) / median_ms(first.outcomes):.1f}. RSS "
        f"{'plateaued' if plateaued else 'did not plateau'} (see Memory). Goal (0 errors, no unbounded memory "
        f"growth): **{'met' if met else 'not met'}**.")
    return f"""# Load

Command: `{' '.join(['.venv/bin/python', 'benchmarks/load.py', *sys.argv[1:]])}`

- Machine: {os.cpu_count()} cores; load average (1/5/15 min) {meta['load_start']} at the start and {meta['load_end']}
  at the end. Other processes (another benchmark, a llama.cpp server) may have been using the CPUs during the
  run, so absolute throughput is a lower bound for an idle machine. The clients (Python threads, one keep-alive
  `httpx.Client` each) and the scripted LLM run in the benchmark process, on the same cores as the server.
- Server: `python -m interfaces.server_app` on 127.0.0.1 (`harness.server_process.ServerProcess`), started in
  {meta['startup']} s; embedded Qdrant store with {meta['documents']} documents ({DEFAULT_LAW}).
- LLM: a scripted local OpenAI-compatible server (`harness/openai_server.py`) that answers instantly, so the
  latency is the system's own overhead (embedding, hybrid retrieval, pipeline, HTTP), not model time; agentic
  requests pass in one round (rewrite → retrieve → judge 34 ≥ 32 → answer).
- Mix per client, cycled from its own offset: `{args.mix}`; `retrieve`/`rag`/`agentic` =
  `POST /agentic_rag/run` in that mode, `stream` = streaming `POST /v1/chat/completions` (model `agentic_rag`,
  mode agentic).
- Queries: {meta['distinct']} distinct STARD train queries in one shared cycle ({meta['used']} requests in all,
  warm-up included). Answers are cached per normalised query and mode (256 entries, `retrieve` is never cached);
  the column "cache hits" counts answers served from that cache.
- Each level: clients send requests one after the other for {args.seconds:g} s (a request in flight at the end
  completes and counts); req/s = requests / time until the last one completed; latencies are of requests without an
  error. Errors: a non-200 status, an exception (timeout {args.timeout:g} s), or a stream without its final
  `rag_result` event or with a `rag_error` event. Wrong content (a 200, counted apart from errors): `retrieve` with
  no documents; otherwise an LLM failure recorded in the trace or an answer without the scripted text; for `stream`
  also streamed text chunks (all a plain OpenAI client shows) without the scripted answer. A {args.warmup:g} s
  warm-up with {warmup.clients} clients ran first and is not in the tables ({len(warmup.outcomes)} requests,
  {len(warmup.errors)} errors, {len(warmup.issues)} wrong content).

## Results

{chr(10).join(level_section(level) for level in levels)}
## Memory (server RSS, MiB)

| phase | RSS before | RSS after | RSS peak | RSS change | threads after | open fds after |
|---|---|---|---|---|---|---|
{memory_rows}

{memory_text}

## Reading

{reading}
"""


def measure(args: argparse.Namespace, base_url: str, pid: int, queries: QueryCycle,
            in_flight: list[Outcome]) -> tuple[Level, list[Level]]:
    mix = args.mix.split(",")
    levels_clients = [int(n) for n in args.clients.split(",")]
    sampler = RSSSampler(pid)
    sampler.start()
    stop = threading.Event()
    beside = threading.Thread(target=in_flight_loop, args=(base_url, queries, stop, args.timeout, in_flight))
    if args.in_flight_seconds > 0:
        beside.start()
    try:
        level = partial(run_level, base_url=base_url, mix=mix, queries=queries, sampler=sampler, timeout=args.timeout)
        warmup = level("warm-up", levels_clients[0], args.warmup)
        levels = [level(f"level {i}", clients, args.seconds) for i, clients in enumerate(levels_clients, start=1)]
        levels.append(level("repeat of level 1", levels_clients[0], args.seconds))
    finally:
        stop.set()
        if beside.is_alive():
            beside.join()
        sampler.stop()
    return warmup, levels


def in_flight_section(seconds: float, outcomes: list[Outcome]) -> str:
    if not outcomes:
        return ""
    return f"""
### One agentic answer in flight throughout

Beside the levels, one more client kept an agentic answer in flight from the warm-up to the end: each of its
questions was new, and the scripted LLM wrote each answer slowly, over about {seconds:.0f} s (as a long answer of a
real model would), while the levels' requests went on. Its answers:

| requests | count | req/s | p50 ms | p95 ms | max ms | errors | wrong content | cache hits |
|---|---|---|---|---|---|---|---|---|
{latency_row("agentic, slow answer", outcomes, sum(o.ms for o in outcomes) / 1000)}
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", default="8,32", help="concurrent clients per level, run one after the other")
    parser.add_argument("--seconds", type=float, default=20.0, help="duration of each level")
    parser.add_argument("--warmup", type=float, default=5.0, help="unmeasured warm-up (first level's clients)")
    parser.add_argument("--mix", default="retrieve,rag,agentic,retrieve,stream",
                        help=f"request kinds each client cycles through, of {', '.join(KINDS)}")
    parser.add_argument("--timeout", type=float, default=120.0, help="per-request timeout (seconds)")
    parser.add_argument("--in-flight-seconds", type=float, default=15.0,
                        help="keep one agentic answer of about this many seconds in flight throughout (0: none)")
    parser.add_argument("--out", default="benchmarks/reports/load.md")
    args = parser.parse_args()
    if unknown := set(args.mix.split(",")) - set(KINDS):
        parser.error(f"unknown request kinds in --mix: {sorted(unknown)}")
    load_start = " / ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at start: {load_start}", flush=True)

    queries = QueryCycle([q["query"] for q in load_queries(DEFAULT_QUERIES)])
    data = Path(tempfile.mkdtemp()) / "data"
    with ScriptedOpenAIServer(default="好的") as llm:
        for match, reply in SCRIPTED_RULES.items():
            if match == "严谨的中国法律咨询助手":  # before the quick answer: the in-flight questions' slow one
                chunks = 20  # the scripted server streams 8 characters a chunk
                slow = (SCRIPTED_ANSWER * (8 * chunks // len(SCRIPTED_ANSWER) + 1))[:8 * chunks]
                llm.add_rule((match, IN_FLIGHT_MARK), slow, chunk_delay=args.in_flight_seconds / chunks)
            llm.add_rule(match, reply)
        env = server_env(data, E5_MODEL, llm.base_url)
        documents = index_default_law(env)
        with ServerProcess(env, log_path=data.parent / "server.log") as server:
            pid = server.process.pid if server.process else 0
            print(f"server up in {server.startup_seconds:.1f} s; log {server.log_path}", flush=True)
            in_flight: list[Outcome] = []
            warmup, levels = measure(args, server.base_url, pid, queries, in_flight)
    meta = {"load_start": load_start, "load_end": " / ".join(f"{x:.2f}" for x in os.getloadavg()),
            "startup": f"{server.startup_seconds:.1f}", "documents": str(documents),
            "distinct": str(len(set(queries.queries))), "used": str(queries.used)}
    report = render(args, meta, warmup, levels) + in_flight_section(args.in_flight_seconds, in_flight)
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
