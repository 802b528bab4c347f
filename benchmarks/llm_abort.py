"""After an LLM call times out or its request is cancelled, does the embedded llama.cpp server go back to idle?

llama.cpp's server finishes a non-streamed generation even when its client has gone. The call policy
(`llm_access.call_policy`) restarts the embedded server after a timed-out call, which stops that generation. This
benchmark asks the embedded server for a long answer with a short ``LLM_TIMEOUT``, twice:

- **abandoned**: a plain OpenAI client whose request times out, nothing else (what happened before);
- **call policy**: the same request through `LLMComponent.chat`, which restarts the server on the timeout;

and samples the CPU use of the server's process tree once a second for ``--watch`` seconds after each timeout.

Then a run is cancelled (its client disconnected, or the server is stopping: issue 63) with a call in flight, in
each phase of the call:

- **while reading the prompt**: a long prompt (about 2,000 tokens, tens of seconds of prompt processing on 2 cores),
  cancelled after 1 s, before its first token: the call policy restarts the embedded server;
- **while writing**: a short prompt and a long answer, cancelled after 4 s: the streamed call closes its stream.

For each it reports how long the call took to end and the machine's CPU use in the seconds after the cancel.

    .venv/bin/python benchmarks/llm_abort.py [--timeout 3] [--watch 12] [--out benchmarks/reports/llm_abort.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import openai
import psutil
from haystack.dataclasses import ChatMessage

from config.settings import Settings
from helpers.records.cancellation import Cancellation, RunCancelled, cancelling
from llm_access.call_policy import LLMComponent
from llm_access.embedded_server import MODEL_ALIAS, shared_server, stop_shared_server

LONG_TASK = "写一篇关于合同法的长文章，至少两千字。"
LONG_PROMPT = "用一句话概括下面的文字：\n" + ("个人信息处理者应当对其个人信息处理活动负责，"
                                          "并采取必要措施保障所处理的个人信息的安全。") * 60
MAX_TOKENS = 3000
IDLE_PERCENT = 20.0  # both cores: 200


def tree_cpu(pid: int, seconds: int) -> list[float]:
    """CPU use (% of one core, summed over the process and its children) in each of ``seconds`` one-second steps."""
    root = psutil.Process(pid)
    processes = [root, *root.children(recursive=True)]
    for process in processes:
        process.cpu_percent(None)
    samples = []
    for _ in range(seconds):
        time.sleep(1)
        samples.append(sum(p.cpu_percent(None) for p in processes if p.is_running()))
    return samples


def server_pid() -> int:
    settings = Settings.from_env()
    server = shared_server(settings.llm_gguf, n_ctx=settings.llm_ctx, n_threads=settings.llm_threads)
    assert server.pid is not None
    return server.pid


def abandoned(timeout: float, watch: int) -> list[float]:
    settings = Settings.from_env()
    server = shared_server(settings.llm_gguf, n_ctx=settings.llm_ctx, n_threads=settings.llm_threads)
    client = openai.OpenAI(base_url=server.base_url, api_key="sk-local", timeout=timeout, max_retries=0)
    try:
        client.chat.completions.create(model=MODEL_ALIAS, max_tokens=MAX_TOKENS,
                                       messages=[{"role": "user", "content": LONG_TASK}])
    except openai.APITimeoutError:
        pass
    return tree_cpu(server_pid(), watch)


def with_policy(watch: int) -> tuple[list[float], str | None, float, float]:
    """CPU after the timed-out call, its error, its seconds (the restart included) and the next short call's."""
    component = LLMComponent()
    component.warm_up()
    call = component.chat([ChatMessage.from_user(LONG_TASK)], {"max_tokens": MAX_TOKENS})
    cpu = tree_cpu(server_pid(), watch)
    again = component.chat([ChatMessage.from_user("1+1等于几？只回答数字。")], {"max_tokens": 8, "temperature": 0})
    return cpu, call.error, call.seconds, again.seconds


def machine_cpu(seconds: int) -> list[float]:
    """The machine's CPU use (% of one core, summed over the cores) in each of ``seconds`` one-second steps: the
    embedded server's process changes when it is restarted, the machine's use does not."""
    cores = os.cpu_count() or 1
    return [psutil.cpu_percent(interval=1) * cores for _ in range(seconds)]


def cancelled_call(phase: str, watch: int) -> tuple[list[float], float, str]:
    """A call cancelled ``phase`` ("prompt": 1 s into reading a long prompt; "answer": 4 s into a long answer): the
    machine's CPU after the cancel, the seconds from the cancel to the call's end, and how it ended."""
    component = LLMComponent()
    component.warm_up()
    cancel = Cancellation()
    messages = [ChatMessage.from_user(LONG_PROMPT if phase == "prompt" else LONG_TASK)]
    ended: dict[str, float | str] = {}

    def call() -> None:
        with cancelling(cancel):
            try:
                result = component.chat(messages, {"max_tokens": 64 if phase == "prompt" else MAX_TOKENS})
                ended["how"] = f"returned ({result.error or 'a reply'})"
            except RunCancelled:
                ended["how"] = "RunCancelled"
        ended["at"] = time.monotonic()

    worker = threading.Thread(target=call)
    worker.start()
    time.sleep(1.0 if phase == "prompt" else 4.0)
    cancelled_at = time.monotonic()
    cancel.cancel("the benchmark cancelled it")
    cpu = machine_cpu(watch)
    worker.join()
    return cpu, float(ended["at"]) - cancelled_at, str(ended["how"])


def idle_after(samples: list[float]) -> str:
    """The first second from which the CPU stays below `IDLE_PERCENT`."""
    for i in range(len(samples)):
        if all(s < IDLE_PERCENT for s in samples[i:]):
            return f"{i} s" if i else "at once"
    return f"not within {len(samples)} s"


def row(label: str, samples: list[float]) -> str:
    return f"| {label} | " + " | ".join(f"{s:.0f}" for s in samples) + " |"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--timeout", type=float, default=3.0, help="LLM_TIMEOUT for the long call (seconds)")
    parser.add_argument("--watch", type=int, default=12, help="seconds of CPU sampling after the timeout")
    parser.add_argument("--out", default="benchmarks/reports/llm_abort.md")
    args = parser.parse_args()
    os.environ["LLM_TIMEOUT"] = str(args.timeout)
    os.environ.pop("DEEPSEEK_API_KEY", None)
    os.environ.pop("LLM_BASE_URL", None)
    server_pid()  # start the embedded server before anything is timed
    tree_cpu(server_pid(), 2)  # and let it settle
    before = abandoned(args.timeout, args.watch)
    stop_shared_server()  # a fresh server for the second run, not one still busy with the first generation
    after, error, call_seconds, next_seconds = with_policy(args.watch)
    stop_shared_server()
    server_pid()
    tree_cpu(server_pid(), 2)
    reading, reading_end, reading_how = cancelled_call("prompt", args.watch)
    writing, writing_end, writing_how = cancelled_call("answer", args.watch)
    stop_shared_server()
    flags = [f for f in ("amx_tile", "avx512_vnni", "avx2") if f in Path("/proc/cpuinfo").read_text()]
    header = " | ".join(f"{i} s" for i in range(1, args.watch + 1))
    report = f"""# After a timed-out or cancelled LLM call

Command: `.venv/bin/python benchmarks/llm_abort.py --timeout {args.timeout:g} --watch {args.watch}`

- Machine: {os.cpu_count()} cores, {platform.machine()}, CPU flags {", ".join(flags) or "none of amx/avx512_vnni/avx2"}.
- The embedded llama.cpp server (`LLM_GGUF`, {os.environ.get("LLM_THREADS", "2")} threads) is asked for a long
  answer (`max_tokens` {MAX_TOKENS}) with a {args.timeout:g} s timeout; then the CPU use of its process tree is read
  once a second (% of one core; 200 = both cores busy).
- **abandoned**: a plain OpenAI client that times out, as before the fix. **call policy**: `LLMComponent.chat`,
  which restarts the embedded server after the timeout: the call returned `{error}` after {call_seconds:.1f} s
  (the timeout and the restart), and the next short call took {next_seconds:.1f} s.

| seconds after the timeout | {header} |
|---|{"---|" * args.watch}
{row("abandoned: % CPU", before)}
{row("call policy: % CPU", after)}

## A cancelled run (a client that left, a server stopping)

The call runs with a current `Cancellation` (`helpers.records.cancellation.cancelling`), as every call of an HTTP
request does; the machine's CPU use is read once a second after the cancel (% of one core; 200 = both cores busy).

| cancelled | the call ended | how | idle from | {header} |
|---|---|---|---|{"---|" * args.watch}
| while reading a ~2,000-token prompt (1 s in) | {reading_end:.1f} s after | {reading_how} | {idle_after(reading)} | \
{" | ".join(f"{s:.0f}" for s in reading)} |
| while writing a long answer (4 s in) | {writing_end:.1f} s after | {writing_how} | {idle_after(writing)} | \
{" | ".join(f"{s:.0f}" for s in writing)} |
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
