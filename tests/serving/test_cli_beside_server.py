"""The CLI beside a running `serve` (issue 50, item 3): ``ask``, ``search`` and ``stats`` are answered by the server
that owns the embedded store, with the output they give without it (``feedback`` on the server's answer too);
``index`` becomes an index job of the server, never a second writer (issue 63, item 4); a second `serve` on the same
store exits at once and leaves the first's record; a store held by anything else is still "in use"."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import ScriptedOpenAIServer
from harness.server_process import ServerProcess
from interfaces.serve_command import serve_command
from interfaces.server_record import RECORD_FILE, client_url, read_server_record, running_server, write_server_record
from llm_access.embedded_server import free_port

ROOT = Path(__file__).resolve().parents[2]
PIPL = "中华人民共和国个人信息保护法"
QUESTION = "公司收集我的个人信息需要我同意吗"
HOLD_THE_STORE = ("import time\nfrom config.settings import Settings\n"
                  "from pipelines.stores import open_document_store\n"
                  "open_document_store(Settings.from_env())\nprint('open', flush=True)\ntime.sleep(120)")
HANDBOOK = "# 员工手册\n第一条 员工应当遵守考勤制度。\n第二条 年休假按国家规定执行。\n"
COMMANDS = {
    "search": ["search", QUESTION, "--top-k", "5"],
    "stats": ["stats"],
    "ask": ["ask", QUESTION, "--mode", "rag", "--json"],
}


def cli(env: dict[str, str | None], *args: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ}
    for name, value in env.items():
        if value is None:
            full.pop(name, None)
        else:
            full[name] = value
    return subprocess.run([sys.executable, "-m", "pipelines", *args], capture_output=True, text=True, timeout=300,
                          check=False, env=full, cwd=ROOT)


def comparable(command: str, stdout: str) -> object:
    """What must be the same with and without the server: everything but timings."""
    if command == "ask":
        result = json.loads(stdout)
        return result["answer"], result["citations"], result["situation"], result["mode"]
    return re.sub(r"\(hybrid, \d+ ms\)", "(hybrid, N ms)", stdout)


@pytest.fixture(scope="module")
def beside(tmp_path_factory, e5_model):
    data = tmp_path_factory.mktemp("beside") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm:
        llm.add_rule("法律检索质量评估员",
                     '{"reasoning": "相关", "relevance": 9, "completeness": 8, "accuracy": 9, "coverage": 8}')
        llm.add_rule("严谨的中国法律咨询助手", f"需要。依据《{PIPL}》第十四条，处理个人信息应当取得同意。")
        env = server_env(data, e5_model, llm.base_url)
        alone = {name: cli(env, *args) for name, args in COMMANDS.items()}
        with ServerProcess(env, log_path=data.parent / "server.log") as app:
            served = {name: cli(env, *args) for name, args in COMMANDS.items()}
            handbook = data.parent / "员工手册.md"
            handbook.write_text(HANDBOOK, encoding="utf-8")
            index = cli(env, "index", "--collection", "handbook", "--files", str(handbook))  # a knowledge base
            versions = cli(env, "index", "--laws", "民法典", "--versions")                  # the server had not opened
            port = free_port()
            command, second_env = serve_command("127.0.0.1", port)
            second = subprocess.run(command, env={**second_env, **{k: v for k, v in env.items() if v is not None}},
                                    capture_output=True, text=True, timeout=120, check=False, cwd=ROOT)
            feedback = cli(env, "feedback", "--last", "👎", "--article", "个人信息保护法第十四条")
            yield {"data": data, "env": env, "alone": alone, "served": served, "index": index, "app": app,
                   "feedback": feedback, "versions": versions, "second": second}


def test_ask_search_and_stats_answer_beside_the_server_as_without_it(beside):
    for name in COMMANDS:
        alone, served = beside["alone"][name], beside["served"][name]
        assert alone.returncode == 0, alone.stderr
        assert served.returncode == 0, served.stderr
        assert "is served by `serve`" in served.stderr and "in use" not in served.stderr
        assert comparable(name, served.stdout) == comparable(name, alone.stdout)
    assert "第十四条" in json.loads(beside["served"]["ask"].stdout)["answer"]
    assert "74 documents" in beside["served"]["stats"].stdout


def test_feedback_on_the_servers_answer_goes_to_the_server(beside):
    """The last answer came from the server: the right article is resolved and recorded there."""
    from application.feedback import FEEDBACK_FILE, FeedbackLog

    done = beside["feedback"]
    assert done.returncode == 0, done.stderr
    answer_id = json.loads(beside["served"]["ask"].stdout)["answer_id"]
    assert f"feedback recorded on answer {answer_id}" in done.stdout and "asking it" in done.stderr
    record = FeedbackLog(beside["data"] / FEEDBACK_FILE).records()[-1]
    assert (record["answer_id"], record["article"], record["source"]) == (answer_id, f"{PIPL}第十四条", "api")


def test_the_server_records_itself_and_removes_the_record_when_it_stops(beside):
    folder = beside["data"] / "qdrant"
    record = read_server_record(folder)
    assert record is not None and record.pid == beside["app"].process.pid
    assert record.url == beside["app"].base_url and running_server(folder) == record


def test_index_beside_the_server_is_an_index_job_of_the_server(beside):
    """Issue 63, item 4: `index --collection X --files f` wrote to the store itself while `serve` owned it (the
    server had not opened X, so nothing was locked)."""
    done = beside["index"]
    assert done.returncode == 0, done.stderr
    assert "index job" in done.stderr and "indexing 2/2" in done.stderr
    assert done.stdout.splitlines()[0].split() == ["added", "2", "file:员工手册.md"]  # as `index` prints it alone
    jobs = httpx.get(f"{beside['app'].base_url}/index/jobs", timeout=10).json()["jobs"]
    assert [(j["knowledge_base"], j["status"]) for j in jobs if j["knowledge_base"] == "handbook"] == [
        ("handbook", "done")]  # the server wrote it: its own job
    versions = beside["versions"]
    assert versions.returncode == 2 and "stop it to index with --versions" in versions.stderr


def test_a_second_server_on_the_same_store_exits_and_leaves_the_first_ones_record(beside):
    second = beside["second"]
    assert second.returncode == 3, second.stderr[-2000:]
    assert f"served by another `serve` (pid {beside['app'].process.pid}" in second.stderr
    record = read_server_record(beside["data"] / "qdrant")
    assert record is not None and record.pid == beside["app"].process.pid


def test_a_store_held_by_something_else_is_still_in_use(beside, tmp_path):
    """A record whose process is not this project's server (here: the holder itself, which answers no HTTP) does
    not send the request anywhere."""
    data = beside["data"]
    beside["app"].stop()
    assert not (data / "qdrant" / RECORD_FILE).exists()  # removed by the server on SIGTERM
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_STORE],
        env={**os.environ, **{k: v for k, v in beside["env"].items() if v is not None}}, cwd=ROOT,
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        (data / "qdrant" / RECORD_FILE).write_text(json.dumps(
            {"pid": holder.pid, "url": "http://127.0.0.1:9", "started": 0}), encoding="utf-8")
        done = cli(beside["env"], *COMMANDS["search"])
        assert done.returncode == 2 and "in use by another process" in done.stderr
        assert "asking it" not in done.stderr
    finally:
        holder.kill()
        holder.wait()


def test_a_server_record_is_written_whole_and_only_its_writer_removes_it(tmp_path):
    from interfaces.server_record import remove_server_record

    path = write_server_record(tmp_path, client_url("0.0.0.0", 1416))
    assert read_server_record(tmp_path).url == "http://127.0.0.1:1416"
    assert client_url("::", 8000) == "http://[::1]:8000"
    assert running_server(tmp_path) is None  # this process answers no /status
    path.write_text(json.dumps({"pid": os.getpid() + 1, "url": "http://127.0.0.1:1", "started": 0}))
    remove_server_record(tmp_path)  # another process's record stays
    assert path.exists()
    path.write_text("{not json")
    assert read_server_record(tmp_path) is None
