"""A large upload as an index job: how long `POST /index/run` takes to answer, and how its progress advances.

Starts the real server (scripted LLM, a temporary store holding the default law), uploads a generated file of about
``--megabytes`` MB (articles of about 1 KB), times the answer, then reads ``GET /index/jobs/{id}`` once a second for
``--watch`` seconds, then stops the server with SIGTERM and starts it again to read the job's state (it resumes).

    .venv/bin/python benchmarks/index_job.py [--megabytes 5] [--watch 60] [--out benchmarks/reports/index_job.md]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import httpx

from harness.app_server import index_laws, server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.server_process import ServerProcess

ROOT = Path(__file__).resolve().parent.parent
E5_MODEL = ROOT / "models" / "multilingual-e5-small"
LAW = "中华人民共和国个人信息保护法"
CLAUSE = ("用人单位应当依照本规章第{i}项规定，为在第{k}类岗位工作的劳动者"
          "提供符合国家标准的劳动保护用品和必要的职业健康检查，")


def upload(megabytes: float) -> tuple[bytes, int]:
    """A statute-like file of about ``megabytes`` MB and its number of articles."""
    lines, size, i = ["# 大型企业劳动保护规章"], 0, 0
    while size < megabytes * 1_000_000:
        i += 1
        body = "".join(CLAUSE.format(i=i, k=(i * j) % 97 + 1) for j in range(1, 7)) + "并按月公示执行情况。"
        line = f"第{i}条 {body}"
        lines.append(line)
        size += len(line.encode())
    return "\n".join(lines).encode(), i


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=float, default=5.0)
    parser.add_argument("--watch", type=int, default=60, help="seconds of progress read after the upload")
    parser.add_argument("--out", default="benchmarks/reports/index_job.md")
    args = parser.parse_args()
    data, articles = upload(args.megabytes)
    folder = Path(tempfile.mkdtemp()) / "data"
    index_laws(folder, E5_MODEL, [LAW])
    timeline: list[tuple[float, dict]] = []
    with ScriptedOpenAIServer(default="好的") as llm:
        env = server_env(folder, E5_MODEL, llm.base_url)
        with ServerProcess(env, log_path=folder.parent / "first.log") as server:
            started = time.perf_counter()
            answer = httpx.post(f"{server.base_url}/index/run", data={"knowledge_base": "big"},
                                files={"files": ("规章.md", data)}, timeout=120)
            answered = time.perf_counter() - started
            job = answer.json()["result"]
            while (elapsed := time.perf_counter() - started) < args.watch:
                state = httpx.get(f"{server.base_url}/index/jobs/{job['job_id']}", timeout=10).json()
                timeline.append((elapsed, state))
                if state["status"] not in ("queued", "running"):
                    break
                time.sleep(1)
        stopped_with = timeline[-1][1]
        with ServerProcess(env, log_path=folder.parent / "second.log") as again:
            after = httpx.get(f"{again.base_url}/index/jobs/{job['job_id']}", timeout=10).json()
    first = next((t for t, s in timeline if s["progress"]["done"] > 0), None)
    done = [(t, s["progress"]["done"]) for t, s in timeline if s["progress"]["done"] > 0]
    rate = (done[-1][1] - done[0][1]) / (done[-1][0] - done[0][0]) if len(done) > 1 else float("nan")
    flags = [f for f in ("amx_tile", "avx512_vnni", "avx2") if f in Path("/proc/cpuinfo").read_text()]
    steps = "\n".join(f"| {t:.1f} | {s['status']} | {s['progress']['phase']} | {s['progress']['done']} / "
                      f"{s['progress']['total']} |" for t, s in timeline[:: max(1, len(timeline) // 12)])
    report = f"""# A large upload as an index job

Command: `.venv/bin/python benchmarks/index_job.py --megabytes {args.megabytes:g} --watch {args.watch}`

- Machine: {os.cpu_count()} cores, {platform.machine()}, CPU flags {", ".join(flags)}.
- Upload: {len(data) / 1e6:.1f} MB, {articles} articles, into a new knowledge base of the real server
  (`python -m interfaces.server_app`, scripted LLM, the ONNX int8 embedder); the server was SIGTERM'd after
  {args.watch} s and started again.

| what | value |
|---|---|
| `POST /index/run` answered (HTTP {answer.status_code}, job `{job.get("status")}`) | {answered:.2f} s |
| first articles written | {f"{first:.1f} s" if first is not None else "not within the watch"} after the upload |
| articles written per second while watched | {rate:.1f} |
| state when the server was stopped | {stopped_with["status"]}, \
{stopped_with["progress"]["done"]} / {stopped_with["progress"]["total"]} |
| state read after the restart | {after["status"]} (resumed {after["resumed"]} time(s)), \
{after["progress"]["done"]} / {after["progress"]["total"]}{f": {after['error']}" if after["error"] else ""} |

Progress read (seconds after the upload):

| s | status | phase | articles |
|---|---|---|---|
{steps}
"""
    Path(args.out).write_text(report, encoding="utf-8")
    print(report)


if __name__ == "__main__":
    main()
