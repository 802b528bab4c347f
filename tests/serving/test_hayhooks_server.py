"""The real Hayhooks server as a subprocess, with the scripted LLM server, over HTTP and the openai client."""

import concurrent.futures
import json
import time
from pathlib import Path

import httpx
import openai
import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import TOOL_PREFIX, ScriptedOpenAIServer
from harness.server_process import DEPLOYMENTS, ServerProcess

PIPL = "中华人民共和国个人信息保护法"
QUESTION = "公司收集我的个人信息需要我同意吗"
LENDING = "最高人民法院关于审理民间借贷案件适用法律若干问题的规定"


@pytest.fixture(scope="module")
def server(tmp_path_factory, e5_model, tiny_coverage):
    # with a trained coverage check, as `make serve` has one: its scikit-learn (and SciPy) must load beside
    # `keep_torch_out` (they once failed on the `None` it put in sys.modules: "'NoneType' has no attribute 'Tensor'")
    data = tmp_path_factory.mktemp("serve") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm:
        llm.add_rule("你是中国法律检索专家", '{"variants": ["处理个人信息应当取得个人同意"], "keywords": ["同意"]}')
        llm.add_rule("法律检索质量评估员",
                     '{"reasoning": "相关", "relevance": 9, "completeness": 8, "accuracy": 9, "coverage": 8}')
        llm.add_rule("把用户最后的问题改写", "个人信息保护法第十四条规定了什么？")
        llm.add_rule("工具返回的内容是资料", [
            TOOL_PREFIX + json.dumps({"name": "search_knowledge_base", "arguments": {"query": "个人信息 同意"}}),
            f"需要同意，见《{PIPL}》第十四条。"])
        llm.add_rule("严谨的中国法律咨询助手", f"需要。依据《{PIPL}》第十四条，处理个人信息应当取得同意。")
        with ServerProcess(server_env(data, e5_model, llm.base_url, COVERAGE_CHECK="on",
                                      COVERAGE_MODEL=str(tiny_coverage)),
                           log_path=data.parent / "server.log") as app:
            assert app.process is not None
            yield {"base": app.base_url, "llm": llm, "startup_seconds": app.startup_seconds, "pid": app.process.pid,
                   "log": app.log_path, "data": data}


def run(server, payload, name="agentic_rag"):
    return httpx.post(f"{server['base']}/{name}/run", json=payload, timeout=120)


def test_status_lists_every_deployment(server):
    status = httpx.get(f"{server['base']}/status", timeout=5).json()
    assert DEPLOYMENTS <= set(status["pipelines"])


def test_a_question_about_a_document_the_store_lacks_is_uncovered_over_http(server):
    result = run(server, {"query": "借条约定的利率超过上限怎么办", "mode": "agentic"}).json()["result"]
    assert result["trace"]["verdict"] == result["scores"]["verdict"] == "uncovered"
    assert result["trace"]["rounds"][0]["evaluation"]["coverage"]["document"] == LENDING
    assert result["answer"].startswith(f"知识库未能确定：问题的决定性规则可能在《{LENDING}》中")
    assert result["trace"]["web"]["status"] == "skipped_no_key"


@pytest.mark.parametrize("mode", ["agentic", "rag", "agent"])
def test_run_api_in_every_mode(server, mode):
    response = run(server, {"query": QUESTION, "mode": mode})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["mode"] == mode
    assert f"{PIPL}第十四条" in [c["key"] for c in result["citations"]]
    if mode == "agent":
        assert result["steps"][0]["tool"] == "search_knowledge_base"
        assert result["steps"][0]["input"] == {"query": "个人信息 同意"}
        assert "第" in result["steps"][0]["observation"] and result["stop_reason"] == "final_answer"
    elif mode == "agentic":
        assert result["trace"]["rounds"][0]["evaluation"]["total"] == 34


def test_the_server_embeds_on_onnx_runtime_without_loading_torch(server):
    # the default EMBEDDING_BACKEND=onnx-int8 needs no torch; Haystack would import it anyway (~180 MiB)
    run(server, {"query": "处理个人信息应当取得个人同意", "mode": "retrieve", "top_k": 1}).raise_for_status()
    maps = Path(f"/proc/{server['pid']}/maps").read_text()
    assert "onnxruntime" in maps and "libtorch" not in maps


def test_retrieve_mode_returns_ranked_articles_without_the_llm(server):
    calls = len(server["llm"].requests)
    result = run(server, {"query": "处理个人信息应当取得个人同意", "mode": "retrieve", "top_k": 3}).json()["result"]
    assert len(result["documents"]) == 3 and result["documents"][0]["key"].startswith(PIPL)
    assert len(server["llm"].requests) == calls
    assert result["knowledge_base"] == "statutes"  # issue 63: null when it was the default or named


def test_bad_input_is_a_400_with_a_message(server):
    response = run(server, {"query": "   "})
    assert response.status_code == 400 and "empty" in response.json()["detail"]
    response = run(server, {"query": QUESTION, "mode": "magic"})
    assert response.status_code == 400 and "mode" in response.json()["detail"]
    response = run(server, {"query": QUESTION, "knowledge_base": "nope"})
    assert response.status_code == 404
    response = run(server, {"query": QUESTION, "knowledge_base": ""})  # issue 46: silently the default before
    assert response.status_code == 400 and "knowledge_base" in response.json()["detail"]
    stats = run(server, {"action": "stats", "name": " "}, name="knowledge_bases")  # issue 63: the default's stats
    assert stats.status_code == 400 and "knowledge_base" in stats.json()["detail"]
    response = run(server, {"query": "问" * 100_000, "mode": "retrieve"})
    assert response.status_code == 400 and "limit is 2000" in response.json()["detail"]
    for top_k in (0, 51, -3, "many", True, 2.5):  # issue 46: JSON true was taken as 1
        response = run(server, {"query": QUESTION, "mode": "retrieve", "top_k": top_k})
        assert response.status_code in (400, 422) and "top_k" in json.dumps(response.json()), top_k
    for filters in ({"field": "meta.law"}, {"field": "meta.law", "operator": "~~", "value": 1}, "law=民法典"):
        response = run(server, {"query": QUESTION, "mode": "retrieve", "filters": filters})
        assert response.status_code in (400, 422) and response.json()["detail"], filters
    nested = {"field": "meta.law", "operator": "==", "value": PIPL}
    for _ in range(200):
        nested = {"operator": "NOT", "conditions": [nested]}
    for filters, reason in ((nested, "nest at most"),  # issue 63: a 500 (maximum recursion depth exceeded)
                            # 内部错误（bm25）
                            ({"field": "meta.law", "operator": "==", "value": {"a": 1}}, "must be a string"),
                            ({"field": "meta.law", "operator": "in", "value": [[PIPL]]}, "must be a list")):
        response = run(server, {"query": QUESTION, "mode": "retrieve", "filters": filters})
        assert response.status_code == 400 and reason in response.json()["detail"], response.text[:300]
    for query in ("\x00\x00", "\u200b\u200d", "\ufeff \u3000"):  # issue 63: counted as non-empty
        response = run(server, {"query": query, "mode": "retrieve"})
        assert response.status_code == 400 and "empty" in response.json()["detail"], query
    response = httpx.post(f"{server['base']}/agentic_rag/run", timeout=30, headers={"content-type": "application/json"},
                          content=b'{"query": "\\ud800\u4e2a\u4eba\u4fe1\u606f", "mode": "retrieve"}')
    assert response.status_code == 400 and "surrogate" in response.json()["detail"]  # 内部错误（dense） before
    missing = run(server, {"mode": "retrieve"})  # a pydantic error list before
    assert missing.status_code == 422 and missing.json()["detail"] == "invalid request: query: Field required"
    chat = httpx.post(f"{server['base']}/v1/chat/completions", timeout=30, json={
        "model": "agentic_rag", "messages": [{"role": "system", "content": "你是助手"}]})
    assert chat.status_code == 400 and "no user message" in chat.json()["detail"]
    for as_of in ("2020/01/01", "2021-02-30", 20200101):
        response = run(server, {"query": QUESTION, "mode": "retrieve", "as_of": as_of})
        assert response.status_code in (400, 422) and "as_of" in json.dumps(response.json()), as_of
    chat = httpx.post(f"{server['base']}/v1/chat/completions", timeout=30, json={
        "model": "agentic_rag", "as_of": "yesterday", "messages": [{"role": "user", "content": QUESTION}]})
    assert chat.status_code == 400 and "as_of must be a date" in chat.json()["detail"]
    chat = httpx.post(f"{server['base']}/v1/chat/completions", timeout=30, json={  # issue 63: taken as 5 before
        "model": "agentic_rag", "top_k": "5", "messages": [{"role": "user", "content": QUESTION}]})
    assert chat.status_code == 400 and "top_k must be an integer" in chat.json()["detail"]


def test_as_of_answers_from_the_statutes_in_force_that_day(server):
    """The 个人信息保护法 took effect on 2021-11-01: on an earlier day it was not law, so nothing is found."""
    before = run(server, {"query": QUESTION, "mode": "retrieve", "as_of": "2021-10-31"}).json()["result"]
    after = run(server, {"query": QUESTION, "mode": "retrieve", "as_of": "2021-11-01"}).json()["result"]
    assert before["documents"] == [] and after["documents"]
    assert all(d["in_force"] and d["version_mark"] == "" for d in after["documents"])


def test_openai_client_non_streaming_and_streaming(server):
    client = openai.OpenAI(base_url=f"{server['base']}/v1", api_key="unused")
    reply = client.chat.completions.create(model="agentic_rag", messages=[{"role": "user", "content": QUESTION}])
    assert "第十四条" in reply.choices[0].message.content
    stream = client.chat.completions.create(model="agentic_rag", stream=True,
                                            messages=[{"role": "user", "content": QUESTION + "？"}])
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "第十四条" in text


def test_the_model_list_names_only_the_chat_model(server):
    """Issue 63: /v1/models listed `index` and `knowledge_bases`, deployments that take no chat messages."""
    client = openai.OpenAI(base_url=f"{server['base']}/v1", api_key="unused")
    assert [model.id for model in client.models.list()] == ["agentic_rag"]
    assert [m["id"] for m in httpx.get(f"{server['base']}/models").json()["data"]] == ["agentic_rag"]


def test_streamed_text_is_complete_when_a_citation_fails_verification(server):
    client = openai.OpenAI(base_url=f"{server['base']}/v1", api_key="unused")
    # 第十四条 is not retrieved
    question = [{"role": "user", "content": "将英烈姓名用于商业用途，是否构成侵害其名誉权？"}]
    full = client.chat.completions.create(model="agentic_rag", messages=question).choices[0].message.content
    assert "第十四条〔未核实〕" in full and "参考法条" in full
    stream = client.chat.completions.create(model="agentic_rag", stream=True, messages=question,
                                            extra_body={"top_k": 9})  # another cache key: really streamed
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == full  # the stream is checked as it goes: the flag streams with the text (issue 20)


def test_stream_ends_with_citations_and_trace_and_follow_up_is_condensed(server):
    messages = [{"role": "user", "content": QUESTION}, {"role": "assistant", "content": "需要同意。"},
                {"role": "user", "content": "那第十四条呢？"}]
    with httpx.stream("POST", f"{server['base']}/v1/chat/completions", timeout=120,
                      json={"model": "agentic_rag", "stream": True, "messages": messages}) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]" and lines.count("data: [DONE]") == 1  # issue 63: as OpenAI ends a stream
    events = [json.loads(line[6:]) for line in lines[:-1]]
    assert events[-1]["choices"][0]["finish_reason"] == "stop"
    final = [e for e in events if "rag_result" in json.dumps(e)]
    assert final, events[-3:]
    payload = json.dumps(final[-1], ensure_ascii=False)
    assert f"{PIPL}第十四条" in payload and "个人信息保护法第十四条规定了什么" in payload
    judge_calls = server["llm"].calls("法律检索质量评估员")  # the standalone question is what was searched and judged
    assert any("个人信息保护法第十四条规定了什么" in json.dumps(c, ensure_ascii=False) for c in judge_calls)


def test_index_endpoint_adds_laws_by_name_as_a_form(server):
    law = "中华人民共和国刑法修正案（十）"
    response = httpx.post(f"{server['base']}/index/run", data={"knowledge_base": "amendments", "laws": [law],
                                                               "wait": "true"}, timeout=120)
    assert response.status_code == 200, response.text
    assert response.json()["result"]["results"] == [{"source": f"law:{law}", "action": "added", "count": 1}]
    unknown = httpx.post(f"{server['base']}/index/run", data={"knowledge_base": "amendments", "laws": ["不存在的法律"]},
                         timeout=120)
    assert unknown.status_code == 400 and "不存在的法律" in unknown.json()["detail"]


@pytest.mark.parametrize(("name", "data", "message"), [
    ("上传.txt", b"\x00\x01binary", "binary"), ("上传.txt", b"  \n", "empty"),
    ("上传.txt", "第一条 内容".encode("gbk"), "not valid UTF-8"),
    ("上传.pdf", "第一条 内容".encode(), "unsupported file type .pdf"),  # issue 46: text in a .pdf was indexed
    ("上传.txt", b"%PDF-1.7\n%binary", "the content is a PDF"), ("上传.md", b"PK\x03\x04docx", "Office")])
def test_unusable_uploads_are_a_400_that_names_the_problem(server, name, data, message):
    response = httpx.post(f"{server['base']}/index/run", data={"knowledge_base": "bad_uploads"},
                          files={"files": (name, data)}, timeout=60)
    detail = response.json()["detail"]
    assert response.status_code == 400 and message in detail and name in detail and "\n" not in detail


def test_index_endpoint_adds_a_document_the_next_query_finds(server):
    files = {"files": ("员工手册.md",
                       "# 员工手册\n第一条 员工请假需提前三天申请。\n第二条 加班应当支付加班费。\n".encode())}
    response = httpx.post(f"{server['base']}/index/run", data={"knowledge_base": "handbook"}, files=files, timeout=120)
    assert response.status_code == 200, response.text
    job = response.json()["result"]  # issue 46: a job, answered at once
    assert job["status"] in ("queued", "running") and job["status_url"] == f"/index/jobs/{job['job_id']}"
    deadline = time.monotonic() + 120
    while (state := httpx.get(f"{server['base']}{job['status_url']}", timeout=10).json())["status"] != "done":
        assert state["status"] in ("queued", "running") and time.monotonic() < deadline, state
        time.sleep(0.5)
    assert state["results"][0]["action"] == "added" and state["progress"] == {"done": 2, "total": 2, "phase": "done"}
    assert httpx.get(f"{server['base']}/index/jobs/nope", timeout=10).status_code == 404
    answer = run(server, {"query": "加班费怎么算", "mode": "rag", "knowledge_base": "handbook"}).json()["result"]
    assert answer["evidence"][0]["key"] == "员工手册第二条"
    statutes = run(server, {"query": "加班应当支付加班费", "mode": "rag"}).json()["result"]
    assert not any(e["key"].startswith("员工手册") for e in statutes["evidence"])  # knowledge bases stay apart
    listed = run(server, {"action": "list"}, "knowledge_bases").json()["result"]["knowledge_bases"]
    assert {"name": "handbook", "documents": 2, "sources": 1, "stale_sources": 0, "stale_weight_sources": 0,
            "incomplete_sources": 0} in listed
    assert run(server, {"action": "delete", "name": "handbook"}, "knowledge_bases").status_code == 200
    assert run(server, {"query": "加班", "knowledge_base": "handbook"}).status_code == 404


def test_client_notebook_runs_against_the_server(server, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    notebooks = Path(__file__).resolve().parents[2] / "notebooks"
    monkeypatch.setenv("RAG_API_URL", server["base"])
    notebook = nbformat.read(notebooks / "calling_the_server.ipynb", as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3").execute()
    text = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "agentic_rag" in text and f"{PIPL}第十四条" in text


def test_eight_concurrent_requests_do_not_mix(server):
    queries = [f"{QUESTION}（情形{i}）" for i in range(8)]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        responses = list(pool.map(lambda q: run(server, {"query": q, "mode": "agentic"}), queries))
    assert all(r.status_code == 200 for r in responses), [r.text[:200] for r in responses if r.status_code != 200]
    for query, response in zip(queries, responses, strict=True):
        trace = response.json()["result"]["trace"]
        assert trace["query"] == query and trace["rounds"][0]["queries"][0] == query


def test_a_client_that_disconnects_mid_stream_cancels_its_run(server):
    """Issue 19, bug 8: the run went on after its client had gone, and the model kept writing an answer nobody
    would read (minutes, with every other request waiting behind it on 2 cores)."""
    from harness.openai_server import Rule

    llm = server["llm"]
    llm.aborted.clear()
    long_answer = f"需要。依据《{PIPL}》第十四条，处理个人信息应当取得个人同意。" * 30  # ~120 chunks, 0.2 s apart
    llm.rules.insert(0, Rule("流式取消", long_answer, chunk_delay=0.2))
    body = {"model": "agentic_rag", "stream": True, "mode": "rag",
            "messages": [{"role": "user", "content": "公司收集我的个人信息需要我同意吗（流式取消）"}]}
    with httpx.stream("POST", f"{server['base']}/v1/chat/completions", json=body, timeout=120) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            chunk = json.loads(line[len("data: "):]) if line.startswith("data: {") else {}
            if any((choice.get("delta") or {}).get("content") for choice in chunk.get("choices", [])):
                break  # the answer is streaming: leave, as a closed browser tab does
    assert llm.aborted.wait(10), "the LLM stream went on after the client had disconnected"
    started = time.monotonic()
    assert run(server, {"query": QUESTION, "mode": "retrieve"}).status_code == 200
    assert time.monotonic() - started < 10


def test_a_client_that_leaves_a_non_streaming_run_cancels_it(server):
    """Issue 46, bug 2: a non-streamed /agentic_rag/run whose client had gone ran for minutes more. Now the answer
    the LLM is writing stops (the scripted server sees its connection dropped) and the run makes no further call."""
    from harness.openai_server import Rule

    llm = server["llm"]
    llm.aborted.clear()
    long_answer = f"需要。依据《{PIPL}》第十四条，处理个人信息应当取得个人同意。" * 30  # ~120 chunks, 0.2 s apart
    llm.rules.insert(0, Rule("非流式取消", long_answer, chunk_delay=0.2))
    before = len(llm.requests)
    with pytest.raises(httpx.ReadTimeout):  # the client gives up while the answer is being written
        httpx.post(f"{server['base']}/agentic_rag/run", timeout=4,
                   json={"query": f"{QUESTION}（非流式取消）", "mode": "rag"})
    assert llm.aborted.wait(10), "the LLM went on writing an answer nobody reads"
    calls = len(llm.requests)
    time.sleep(3)
    assert len(llm.requests) == calls, "the cancelled run went on calling the LLM"
    assert calls > before


def test_api_docs_load_without_internet_and_the_log_survives_markup_in_queries(server):
    """Issue 46: /docs loaded Swagger UI from a CDN (a blank page offline); a query with <script> made the log line
    of its request raise inside the logger."""
    docs = httpx.get(f"{server['base']}/docs", timeout=10)
    assert docs.status_code == 200 and "/docs-assets/swagger-ui-bundle.js" in docs.text and "cdn" not in docs.text
    assert httpx.get(f"{server['base']}/docs-assets/swagger-ui-bundle.js", timeout=10).status_code == 200
    marked = "<script>alert(1)</script></b><red>个人信息"
    assert run(server, {"query": marked, "mode": "retrieve", "top_k": 1}).status_code == 200
    log = Path(server["log"]).read_text(errors="replace")
    assert f"'query': '{marked}'" in log
    assert "Traceback" not in log


def test_openai_clients_that_read_only_the_text_get_the_warnings_too(server):
    """Issue 46, item 4: the chat reply is only text for a plain OpenAI client; the result's warnings follow the
    answer as a note, streamed or not."""
    client = openai.OpenAI(base_url=f"{server['base']}/v1", api_key="-", max_retries=0)
    question = [{"role": "user", "content": f"{PIPL}规定处理个人信息需要同意吗"}]
    reply = client.chat.completions.create(model="agentic_rag", messages=question,
                                           extra_body={"mode": "rag", "as_of": "2015-01-01"})
    text = reply.choices[0].message.content
    assert "〔注意：" in text and "2015-01-01" in text and PIPL in text.split("〔注意：")[1]
    stream = client.chat.completions.create(model="agentic_rag", messages=question, stream=True,
                                            extra_body={"mode": "rag", "as_of": "2015-01-01"})
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert "〔注意：" in streamed and "2015-01-01" in streamed
    plain = client.chat.completions.create(model="agentic_rag", messages=question, extra_body={"mode": "rag"})
    assert "〔注意：" not in plain.choices[0].message.content


def chat_stream_result(server, question):
    """The ``rag_result`` event's data of a streamed chat answer."""
    with httpx.stream("POST", f"{server['base']}/v1/chat/completions", timeout=120,
                      json={"model": "agentic_rag", "stream": True, "mode": "rag",
                            "messages": [{"role": "user", "content": question}]}) as response:
        events = [json.loads(line[6:]) for line in response.iter_lines()
                  if line.startswith("data: ") and line != "data: [DONE]"]
    return next(e["event"]["data"] for e in events if (e.get("event") or {}).get("type") == "rag_result")


def test_feedback_on_an_answer_is_stored_with_the_question_and_its_evidence(server):
    """Issue 50, item 4: the answer_id of a REST result or of the chat stream's result names the answer."""
    from application.feedback import FEEDBACK_FILE, FeedbackLog

    result = run(server, {"query": QUESTION, "mode": "rag"}).json()["result"]
    streamed = chat_stream_result(server, "个人信息保护法第十四条是怎么规定的")
    assert result["answer_id"] and streamed["answer_id"] and result["answer_id"] != streamed["answer_id"]
    first = httpx.post(f"{server['base']}/feedback", timeout=30,
                       json={"answer_id": result["answer_id"], "verdict": "👎", "article": "个人信息保护法第十四条"})
    assert first.status_code == 201, first.text
    assert first.json()["article"] == f"{PIPL}第十四条" and first.json()["verdict"] == "down"
    second = httpx.post(f"{server['base']}/feedback", timeout=30,
                        json={"answer_id": streamed["answer_id"], "verdict": "up"})
    assert second.status_code == 201, second.text
    client = openai.OpenAI(base_url=f"{server['base']}/v1", api_key="unused")  # a non-streamed chat: its id
    reply = client.chat.completions.create(model="agentic_rag",
                                           messages=[{"role": "user", "content": "同意可以撤回吗"}],
                                           extra_body={"mode": "rag"})
    third = httpx.post(f"{server['base']}/feedback", timeout=30, json={"answer_id": reply.id, "verdict": "up"})
    assert third.status_code == 201, third.text
    records = FeedbackLog(server["data"] / FEEDBACK_FILE).records()  # on disk when the server answered
    assert [r["feedback_id"] for r in records[-3:]] == [first.json()["feedback_id"], second.json()["feedback_id"],
                                                        third.json()["feedback_id"]]
    assert records[-3]["question"] == QUESTION and f"{PIPL}第十四条" in records[-3]["evidence"]
    assert records[-3]["answer"] == result["answer"] and records[-3]["knowledge_base"] == "statutes"
    assert records[-1]["question"] == "同意可以撤回吗" and reply.choices[0].message.content == records[-1]["answer"]


@pytest.mark.parametrize(("body", "status", "message"), [
    (None, 400, "the body must be JSON"),
    ({}, 400, "answer_id is required"),
    ({"answer_id": "nope", "verdict": "up"}, 404, "unknown answer_id 'nope'"),
    ({"answer_id": "ANSWER", "verdict": "meh"}, 400, "verdict must be one of"),
    ({"answer_id": "ANSWER"}, 400, "needs a verdict"),
    ({"answer_id": "ANSWER", "article": "民法典第一条"}, 400, "unknown article"),
    ({"answer_id": "ANSWER", "verdict": "up", "rating": 5}, 400, "unknown field(s) rating"),
])
def test_bad_feedback_is_a_one_line_4xx(server, body, status, message):
    answer_id = run(server, {"query": QUESTION, "mode": "rag"}).json()["result"]["answer_id"]
    content = b"" if body is None else json.dumps({k: answer_id if v == "ANSWER" else v for k, v in body.items()})
    response = httpx.post(f"{server['base']}/feedback", content=content, timeout=30,
                          headers={"content-type": "application/json"})
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert message in detail and "\n" not in detail


def test_the_server_log_file_holds_no_colour_codes(server):
    """Issue 63: uvicorn's start-up lines put ANSI escape sequences into a log file."""
    log = Path(server["log"]).read_text(encoding="utf-8", errors="replace")
    assert "Uvicorn running on http://" in log and "\x1b" not in log
