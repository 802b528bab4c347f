"""The web UI in headless Chromium (Debian's package, driven by Playwright) against the real server and the scripted
LLM server. Screenshots of the main states go to test-artifacts/screenshots/ (git-ignored)."""

import json
import re
import shutil
import urllib.request
from itertools import pairwise
from pathlib import Path
from xml.etree import ElementTree

import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import TOOL_PREFIX, Rule, ScriptedOpenAIServer
from harness.serpapi_server import ScriptedSerpAPIServer
from harness.server_process import ServerProcess

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PIPL = "中华人民共和国个人信息保护法"
QUESTION = "公司收集我的个人信息需要我同意吗"
ANSWER = (f"【问题分析】公司收集个人信息属于处理个人信息。处理前应当告知处理目的和方式。"
          "一般需要在三十日内取得同意。同意可以撤回。撤回不影响撤回前的处理。\n"
          f"【相关法条】《{PIPL}》第十四条规定，基于个人同意处理个人信息的，"
          f"该同意应当由个人在充分知情的前提下自愿、明确作出。另见《{PIPL}》第九十九条。\n【免责声明】仅供参考。")
HANDBOOK = "# 员工手册\n第一条 员工请假需提前三天申请。\n第二条 加班应当支付加班费，标准为工资的百分之一百五十。\n"
JUDGE = "法律检索质量评估员"
WEB_SNIPPET = "网页摘要：个人信息处理的告知同意规则（界面测试）"  # only the answer prompt carries it
WEB_RESULTS = [{"title": "可疑链接", "link": "javascript:alert(1)", "snippet": WEB_SNIPPET},
               {"title": "正常链接", "link": "https://example.cn/pipl", "snippet": "个人信息保护法全文"}]
# a conversation kept by an earlier visit (the page restores it from localStorage)
KEPT = [{"question": "之前的问题", "result": {"answer": "之前的回答", "mode": "rag", "trace": {}, "citations": []}}]

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (`make test` installs it)")


@pytest.fixture(scope="module")
def server(tmp_path_factory, e5_model):
    data = tmp_path_factory.mktemp("ui") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm, ScriptedSerpAPIServer(results=WEB_RESULTS) as serp:
        llm.add_rule("员工手册", "依据《员工手册》第二条，加班应当支付加班费，标准为工资的百分之一百五十。")
        llm.add_rule("你是中国法律检索专家", '{"variants": ["个人信息处理者处理个人信息是否应当取得个人同意"], '
                                         '"keywords": ["个人信息", "同意"]}')
        llm.add_rule("法律检索质量评估员", '{"reasoning": "条文直接回答了问题", "relevance": 9, "completeness": 8, '
                                      '"accuracy": 9, "coverage": 8, "missing": ""}')
        llm.add_rule("严谨的中国法律咨询助手", ANSWER, chunk_delay=0.05)  # streamed over ~1.5 s
        env = server_env(data, e5_model, llm.base_url, SERPAPI_API_KEY="ui-test-key", SERPAPI_BASE_URL=serp.base_url)
        with ServerProcess(env, log_path=data.parent / "server.log") as app:
            yield {"base": app.base_url, "llm": llm, "serp": serp, "data": data}


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, server):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="zh-CN")
    page = context.new_page()
    page.goto(f"{server['base']}/")
    page.wait_for_selector("#kb-select option", state="attached")
    yield page
    context.close()


def shot(page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


def ask(page, question: str, mode: str = "agentic") -> object:
    page.check(f"input[name=mode][value={mode}]")
    page.fill("#question", question)
    before = page.locator(".msg.assistant, .msg.error").count()
    page.press("#question", "Enter")
    page.wait_for_function(f"() => document.querySelectorAll('.msg.assistant, .msg.error').length > {before}"
                           " && !document.querySelector('#send').disabled", timeout=60_000)
    return page.locator(".msg.assistant, .msg.error").last


def test_agentic_answer_streams_with_live_steps_and_a_clickable_citation(page, server):
    steps_seen = []
    page.expose_function("recordStep", lambda stage: steps_seen.append(stage))
    page.evaluate("""() => new MutationObserver(records => records.forEach(r => r.addedNodes.forEach(n => {
        if (n.dataset && n.dataset.stage) window.recordStep(n.dataset.stage); })))
        .observe(document.querySelector('#messages'), {childList: true, subtree: true})""")
    page.evaluate("""() => { window.answerLengths = [];
        new MutationObserver(() => { const a = document.querySelector('.msg.assistant:last-child .answer');
            if (a) window.answerLengths.push(a.textContent.length); })
        .observe(document.querySelector('#messages'), {childList: true, subtree: true, characterData: true}); }""")
    message = ask(page, QUESTION)
    final = message.locator(".answer").inner_text()
    assert "基于个人同意处理个人信息" in final
    partial = {n for n in page.evaluate("window.answerLengths") if 0 < n < len(ANSWER) - 20}
    assert len(partial) >= 3  # the answer grew on the page while it streamed
    stages = [li.get_attribute("data-stage") for li in message.locator(".trace li").all()]
    assert stages[0] == "route" and "rewrite" in stages and "judge" in stages and stages[-1] == "answer"
    assert {"retrieve", "fuse", "decision", "evidence"} <= set(stages)
    assert steps_seen[: len(stages)] == stages  # the steps appeared one by one, in order, while the question ran
    judge = message.locator(".trace li[data-stage=judge]")
    assert "相关性 9" in judge.text_content() and "34/40" in judge.text_content()
    # the rubric decided
    assert "最高分 34/40" in message.locator(".trace li[data-stage=decision]").first.text_content()
    assert message.locator(".trace").get_attribute("open") is None  # collapsed into a trace once done
    shot(page, "answer_agentic")
    message.locator(".trace > summary").click()
    assert judge.is_visible()
    shot(page, "answer_agentic_steps")

    message.locator("button.cite", has_text=f"《{PIPL}》第十四条").first.click()
    view = page.locator("#citation-view")
    view.wait_for(state="visible")
    assert "第十四条" in page.inner_text("#citation-title")
    assert ("基于个人同意处理个人信息的，该同意应当由个人在充分知情的前提下自愿、明确作出"
            in page.inner_text("#citation-text"))
    shot(page, "citation")

    flagged = message.locator(".cite.unverified:not(.flag)")
    assert flagged.count() == 1 and "第九十九条" in flagged.inner_text()  # PIPL has 74 articles: not in evidence
    flagged.click()
    assert "未核实" in page.inner_text("#citation-flag")
    number = message.locator(".flag")  # issue 20: a figure no article backs is marked like an unverified citation
    assert number.count() == 1 and number.inner_text() == "〔未见依据〕"
    assert number.get_attribute("title").startswith("未见依据")


def test_switching_to_rag_mode_skips_the_judge(page, server):
    judge_calls = len(server["llm"].calls("法律检索质量评估员"))
    message = ask(page, "处理敏感个人信息有什么要求", mode="rag")
    stages = [li.get_attribute("data-stage") for li in message.locator(".trace li").all()]
    assert "judge" not in stages and "rewrite" not in stages and stages[-1] == "answer"
    assert "retrieve" in stages and len(server["llm"].calls("法律检索质量评估员")) == judge_calls
    sent = server["llm"].requests[-1]
    assert "处理敏感个人信息有什么要求" in json.dumps(sent["messages"], ensure_ascii=False)


def test_feedback_under_an_answer_suggests_articles_and_is_stored(page, server):
    """Issue 50, item 4: 👍 / 👎 and "the right article is …" with suggestions from the knowledge base."""
    from application.feedback import FEEDBACK_FILE, FeedbackLog

    message = ask(page, "处理个人信息需要告知什么", mode="rag")
    bar = message.locator("form.feedback")
    # issue 63: the emoji rendered as empty boxes with the fonts `make` installs; the thumbs are drawn (SVG) now
    for kind, label in (("up", "有帮助"), ("down", "有问题")):
        button = bar.locator(f"button.{kind}")
        assert button.locator("svg.thumb path").count() == 1 and button.inner_text().strip() == label
    bar.locator("input").fill("个人信息保护法第十三")  # issue 63: suggested 第三十一条 but not 第十三条
    page.wait_for_function("() => [...document.querySelectorAll('.msg.assistant:last-of-type form.feedback option')]"
                           f".some(o => o.value === '{PIPL}第十三条')", timeout=30_000)
    bar.locator("input").fill("个人信息保护法 同意")
    page.wait_for_function("() => [...document.querySelectorAll('.msg.assistant:last-of-type form.feedback option')]"
                           f".some(o => o.value === '{PIPL}第十四条')", timeout=30_000)
    bar.locator("input").fill("个人信息保护法第十四条")
    bar.locator("button.down").click()
    page.wait_for_function("() => document.querySelector('.msg.assistant:last-of-type form.feedback .status')"
                           ".textContent.startsWith('已记录')", timeout=30_000)
    assert bar.locator(".status").inner_text() == "已记录：个人信息保护法第十四条，谢谢"
    shot(page, "feedback")
    record = FeedbackLog(server["data"] / FEEDBACK_FILE).records()[-1]
    assert (record["question"], record["verdict"], record["article"]) == (
        "处理个人信息需要告知什么", "down", f"{PIPL}第十四条")
    bar.locator("input").fill("民法典第一条")
    bar.locator("button.send-article").click()
    page.wait_for_function("() => document.querySelector('.msg.assistant:last-of-type form.feedback .status')"
                           ".classList.contains('error')", timeout=30_000)
    assert "unknown article" in bar.locator(".status").inner_text()


def test_the_conversation_survives_a_reload_and_new_chat_clears_it(page, server):
    ask(page, QUESTION, mode="rag")
    page.reload()
    page.wait_for_selector(".msg.assistant button.cite")
    assert page.locator(".msg.user").first.inner_text() == QUESTION
    page.locator(".msg.assistant button.cite").first.click()
    assert "基于个人同意处理个人信息" in page.inner_text("#citation-text")
    ask(page, "那第十四条呢？", mode="rag")  # a follow-up: the restored history goes to the server
    sent = json.dumps(server["llm"].calls("把用户最后的问题改写")[-1]["messages"], ensure_ascii=False)
    assert QUESTION in sent
    page.click("#new-chat")
    page.reload()
    page.wait_for_selector("#kb-select option", state="attached")
    assert page.locator(".msg").count() == 0


def test_agent_mode_shows_its_tool_calls(page, server):
    server["llm"].add_rule("工具返回的内容是资料", [
        TOOL_PREFIX + json.dumps({"name": "search_knowledge_base", "arguments": {"query": "敏感个人信息"}}),
        f"需要取得单独同意，见《{PIPL}》第二十九条。"])
    message = ask(page, "处理我的敏感个人信息要单独同意吗", mode="agent")
    tools = message.locator(".trace li[data-stage=tool]")
    assert tools.count() == 1 and "敏感个人信息" in tools.first.text_content()
    assert message.locator(".trace li[data-stage=stop]").text_content().endswith("final_answer")
    assert message.locator(".cite").first.inner_text() == f"《{PIPL}》第二十九条"


def keep_conversation(page) -> None:
    """Reload the page with `KEPT` in its localStorage, as if from an earlier visit."""
    page.evaluate("turns => localStorage.setItem('conversation', JSON.stringify(turns))", KEPT)
    page.reload()
    page.wait_for_selector("#kb-select option", state="attached")
    assert page.locator(".msg").count() == 2


def test_upload_into_a_new_knowledge_base_then_ask_it(page, server, tmp_path):
    handbook = tmp_path / "员工手册.md"
    handbook.write_text(HANDBOOK, encoding="utf-8")
    keep_conversation(page)
    polls = []
    page.on("request", lambda request: polls.append(request.url) if "/index/jobs/" in request.url else None)
    page.click("#kb-toggle")
    page.fill("#upload-kb", "handbook")
    page.set_input_files("#upload-files", str(handbook))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('已添加')")
    assert "已嵌入 2 / 2 条" in page.inner_text("#upload-status") and "已添加 2 条" in page.inner_text("#upload-status")
    assert page.eval_on_selector("#upload-progress", "p => [p.value, p.max, p.hidden]") == [2, 2, False]
    assert polls  # the upload became a job, followed on GET /index/jobs/<id>
    page.wait_for_selector("#kb-list li[data-name=handbook]")
    assert page.locator("#kb-list li[data-name=handbook]").inner_text().startswith("handbook：2 条")
    assert page.locator(".msg").count() == 2  # refreshing the knowledge bases did not restore the conversation again
    shot(page, "knowledge_bases")
    page.fill("#laws-kb", "handbook")
    page.fill("#laws-names", "不存在的法律")
    page.click("#laws-form button[type=submit]")
    page.wait_for_selector("#laws-status.error")
    assert "400" in page.inner_text("#laws-status") and "不存在的法律" in page.inner_text("#laws-status")
    page.select_option("#kb-select", "handbook")
    message = ask(page, "加班费怎么算", mode="rag")
    link = message.locator(".cite").first
    assert link.inner_text() == "《员工手册》第二条" and "unverified" not in (link.get_attribute("class") or "")
    link.click()
    assert "工资的百分之一百五十" in page.inner_text("#citation-text")


JOB = "0123456789abcdef"


def stand_in_index_server(page, states: list[tuple[int, dict]]) -> list[int]:
    """Answer the page's POST /index/run with a queued job and its GET /index/jobs/<id> with ``states`` in turn
    (the last repeating); the page keeps the times it polled at (ms) in ``window.polls``."""
    page.evaluate("""() => { window.polls = []; const fetch = window.fetch;
        window.fetch = (url, ...rest) => { if (String(url).includes('/index/jobs/')) \
window.polls.push(performance.now());
                                           return fetch(url, ...rest); }; }""")
    polls: list[int] = []
    queued = {"job_id": JOB, "status": "queued", "knowledge_base": "big", "status_url": f"/index/jobs/{JOB}"}
    page.route("**/index/run", lambda route: route.fulfill(json={"result": queued}))

    def job(route) -> None:
        polls.append(len(polls))
        status, body = states[min(len(polls), len(states)) - 1]
        route.fulfill(status=status, json=body)

    page.route(f"**/index/jobs/{JOB}", job)
    return polls


def job_state(status: str, done: int, total: int, phase: str, **extra: object) -> tuple[int, dict]:
    return 200, {"job_id": JOB, "knowledge_base": "big", "status": status, "error": None, "results": [],
                 "progress": {"done": done, "total": total, "phase": phase}, "created_at": 1.0, "updated_at": 2.0,
                 **extra}


def test_an_index_job_shows_its_progress_until_it_is_done(page):
    keep_conversation(page)
    polls = stand_in_index_server(page, [
        job_state("running", 0, 0, "preparing"), job_state("running", 1200, 4794, "indexing"),
        job_state("done", 4794, 4794, "done", results=[{"source": "大文件.md", "action": "added", "count": 4794}])])
    page.evaluate("""() => { window.seen = []; const status = document.querySelector('#upload-status');
        new MutationObserver(() => { const p = document.querySelector('#upload-progress');
            window.seen.push([status.textContent, p.hasAttribute('value') ? p.value : null, p.max]); })
        .observe(status, {childList: true, characterData: true, subtree: true}); }""")
    page.click("#kb-toggle")
    page.fill("#upload-kb", "big")
    page.set_input_files("#upload-files", {"name": "大文件.md", "mimeType": "text/markdown",
                                           "buffer": "第一条 测试。\n".encode()})
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('已添加')", timeout=15_000)
    seen = page.evaluate("window.seen")
    texts = [text for text, _, _ in seen]
    assert "排队等待索引…" in texts and "正在切分和检查…" in texts
    assert ["已嵌入 1200 / 4794 条", 1200, 4794] in seen  # the bar and its text follow the job
    assert any(value is None for _, value, _ in seen)  # an indeterminate bar while the total is unknown
    assert page.inner_text("#upload-status") == "已嵌入 4794 / 4794 条，完成。\n已添加 4794 条：大文件.md"
    assert page.eval_on_selector("#upload-progress", "p => [p.value, p.max]") == [4794, 4794]
    times = page.evaluate("window.polls")
    assert len(polls) == len(times) == 3 and all(later - earlier >= 800 for earlier, later in pairwise(times))
    assert page.locator(".msg").count() == 2  # the conversation was not restored a second time
    assert not page.is_disabled("#upload-form button[type=submit]")
    shot(page, "index_job_done")


def test_a_page_loaded_while_an_index_job_runs_follows_it(page):
    running = job_state("running", 300, 4794, "indexing")[1]
    page.route(re.compile(r".*/index/jobs\?limit=1$"), lambda route: route.fulfill(json={"jobs": [running]}))
    stand_in_index_server(page, [job_state("running", 1200, 4794, "indexing"), job_state(
        "done", 4794, 4794, "done", results=[{"source": "大文件.md", "action": "added", "count": 4794}])])
    page.reload()
    page.wait_for_selector("#upload-status:has-text('已添加')", timeout=15_000)
    assert page.is_visible("#kb-panel")
    assert page.inner_text("#upload-status") == "已嵌入 4794 / 4794 条，完成。\n已添加 4794 条：大文件.md"


def test_a_failed_or_unknown_index_job_is_shown_as_an_error(page):
    keep_conversation(page)
    failed = "no articles found in 空文件.md: is it UTF-8 text with 第X条 headings?"
    stand_in_index_server(page, [job_state("running", 10, 40, "indexing"),
                                 job_state("failed", 10, 40, "failed", error=failed)])
    page.click("#kb-toggle")
    page.fill("#laws-names", "劳动合同法")
    page.click("#laws-form button[type=submit]")
    page.wait_for_selector("#laws-status.error", timeout=15_000)
    assert page.inner_text("#laws-status") == f"索引失败：{failed}"
    assert page.eval_on_selector("#laws-progress", "p => [p.value, p.max, p.hidden]") == [10, 40, False]
    shot(page, "index_job_failed")
    page.unroute(f"**/index/jobs/{JOB}")
    page.route(f"**/index/jobs/{JOB}",
               lambda route: route.fulfill(status=404, json={"detail": f"unknown index job '{JOB}'"}))
    page.click("#laws-form button[type=submit]")
    page.wait_for_selector("#laws-status.error:has-text('404')", timeout=15_000)
    assert JOB in page.inner_text("#laws-status")
    assert page.locator(".msg").count() == 2


def test_delete_a_knowledge_base_after_confirming(page, server, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("第一条 测试条文。\n", encoding="utf-8")
    page.click("#kb-toggle")
    page.fill("#upload-kb", "scratch")
    page.set_input_files("#upload-files", str(notes))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#kb-list li[data-name=scratch]", timeout=30_000)
    messages = []
    page.on("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    page.click("#kb-list li[data-name=scratch] button")
    page.wait_for_selector("#kb-list li[data-name=scratch]", state="detached")
    assert "scratch" in messages[0] and "无法恢复" in messages[0]


def test_a_web_result_with_a_javascript_url_gets_no_link(page, server):
    """Evidence from the web is the least trusted text on the page: a link must not run script."""
    llm = server["llm"]
    failing = json.dumps({"reasoning": "条文不够", "relevance": 2, "completeness": 1, "accuracy": 2, "coverage": 1,
                          "missing": "缺少实践做法"}, ensure_ascii=False)
    rules = [Rule(JUDGE, [failing]), Rule(WEB_SNIPPET, "可参考[网页1]和[网页2]的说明。")]
    llm.rules[:0] = rules  # ahead of the module's passing judge
    try:
        message = ask(page, "网页上说收集个人信息要怎么告知")
    finally:
        for rule in rules:
            llm.rules.remove(rule)
    assert server["serp"].requests
    assert message.locator(".trace li[data-stage=web_search]").count() == 1
    message.locator("button.cite", has_text="[网页1]").click()
    page.locator("#citation-view").wait_for(state="visible")
    assert WEB_SNIPPET in page.inner_text("#citation-text")
    assert page.is_hidden("#citation-link") and page.get_attribute("#citation-link", "href") is None
    assert page.inner_text("#citation-url") == "javascript:alert(1)"  # shown, as text only
    assert page.locator("a[href^='javascript' i]").count() == 0
    shot(page, "citation_unsafe_url")
    page.click("#citation-view .close")
    message.locator("button.cite", has_text="[网页2]").click()
    assert page.get_attribute("#citation-link", "href") == "https://example.cn/pipl"
    assert page.is_visible("#citation-link") and page.is_hidden("#citation-url")
    checks = page.evaluate("""() => ["javascript:alert(1)", " JavaScript:alert(1)", "java\tscript:alert(1)",
        "data:text/html,<script>alert(1)</script>", "vbscript:x", "", null, "https://example.cn/a?b=1",
        "http://example.cn/", "/ui/favicon.svg", "../status"].map(safeUrl)""")
    origin = server["base"]
    assert checks == [None] * 7 + ["https://example.cn/a?b=1", "http://example.cn/", f"{origin}/ui/favicon.svg",
                                   f"{origin}/status"]


def test_warnings_are_shown_under_the_answer(page, server):
    assert page.get_attribute("#as-of", "placeholder") == "年-月-日"  # issue 50: not the browser's mm/dd/yyyy
    dates = page.evaluate("""() => ["2015-01-01", "2015/1/1", " 2015年1月1日 ", "", "2015-02-30", "1/1/2015"]
        .map(asOfDate)""")
    assert dates == ["2015-01-01", "2015-01-01", "2015-01-01", "", None, None]
    page.fill("#as-of", "1/1/2015")
    before = page.locator(".msg").count()
    page.fill("#question", "第十四条")
    page.press("#question", "Enter")
    assert page.locator(".msg").count() == before  # not sent: the date field says how to write it
    assert page.input_value("#question") == "第十四条"  # and the question is still there to send again
    assert "年-月-日" in page.evaluate("document.querySelector('#as-of').validationMessage")
    page.fill("#as-of", "2015年1月1日")  # the 个人信息保护法 in the knowledge base applies from 2021-11-01
    message = ask(page, f"{PIPL}第十四条规定了什么", mode="rag")
    warnings = message.locator(".warnings li")
    assert warnings.count() >= 1
    text = warnings.first.inner_text()
    assert PIPL in text and "2015" in text and "--versions" in text
    assert message.locator(".warnings").evaluate("box => box.previousElementSibling.className") == "answer"
    shot(page, "answer_warnings")
    plain = page.evaluate("""() => { const message = document.createElement('div');
        showResult(message, Object.assign(document.createElement('details'), \
{innerHTML: '<summary></summary><ol></ol>'}),
                   document.createElement('div'), {answer: "a", warnings: ["<img src=x onerror=alert(1)>"], trace: {}});
        return [message.querySelector('.warnings li').textContent, message.querySelectorAll('img').length]; }""")
    assert plain == ["<img src=x onerror=alert(1)>", 0]  # server text is text, never markup


def test_the_favicon(page, server):
    with urllib.request.urlopen(f"{server['base']}/favicon.ico") as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("image/svg+xml")
        body = response.read()
    assert ElementTree.fromstring(body).tag == "{http://www.w3.org/2000/svg}svg"
    icon = page.eval_on_selector("link[rel=icon]", "link => link.href")
    assert icon == f"{server['base']}/ui/favicon.svg" and page.request.get(icon).body() == body


def test_server_errors_are_shown_as_messages(page, server):
    message = ask(page, "问" * 2100)  # over the 2,000-character limit: the server answers 400
    assert "error" in message.get_attribute("class")
    assert "400" in message.inner_text() and "2000" in message.inner_text()
    page.select_option("#kb-select", "statutes")
    page.evaluate("() => { const o = document.createElement('option'); o.value = 'gone'; o.text = 'gone';"
                  " document.querySelector('#kb-select').append(o); }")
    page.select_option("#kb-select", "gone")
    message = ask(page, QUESTION, mode="rag")
    assert "404" in message.inner_text() and "gone" in message.inner_text()
    shot(page, "error")


def test_phone_width_layout(browser, server):
    context = browser.new_context(viewport={"width": 390, "height": 844}, locale="zh-CN", is_mobile=True)
    page = context.new_page()
    page.goto(f"{server['base']}/ui/")
    page.wait_for_selector("#kb-select option", state="attached")
    assert page.input_value("#kb-select") == "statutes"  # the server's default knowledge base is preselected
    message = ask(page, QUESTION, mode="rag")
    assert "基于个人同意处理个人信息" in message.inner_text()
    assert message.bounding_box()["width"] <= 390
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390  # nothing overflows sideways
    shot(page, "phone")
    context.close()


@pytest.fixture(scope="module")
def evaluator_server(tmp_path_factory, e5_model, tiny_evaluator):
    """The server with the trained evaluator as judge (JUDGE=evaluator, a threshold every retrieval passes)."""
    data = tmp_path_factory.mktemp("ui_evaluator") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm:
        llm.add_rule("严谨的中国法律咨询助手", ANSWER)
        env = server_env(data, e5_model, llm.base_url, JUDGE="evaluator", EVALUATOR_MODEL=str(tiny_evaluator),
                         EVALUATOR_THRESHOLD="0.001")
        with ServerProcess(env, log_path=data.parent / "server.log") as app:
            yield {"base": app.base_url, "llm": llm}


def test_the_evaluator_judge_step_shows_probabilities(browser, evaluator_server):
    context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="zh-CN")
    page = context.new_page()
    page.goto(f"{evaluator_server['base']}/")
    page.wait_for_selector("#kb-select option", state="attached")
    message = ask(page, QUESTION)
    judge = message.locator(".trace li[data-stage=judge]")
    text = judge.text_content()
    assert "相关概率" in text and "通过线 0.00" in text and "通过" in text
    assert f"{PIPL}第" in text  # the judged passages with their own probabilities
    assert "相关概率" in message.locator(".meta").inner_text()
    assert evaluator_server["llm"].calls("法律检索质量评估员") == []
    message.locator(".trace > summary").click()
    shot(page, "answer_evaluator_steps")
    context.close()


def test_with_api_key_set_the_page_asks_for_the_key_before_the_first_question(browser, server, e5_model, tmp_path):
    """Issue 63, item 8: with API_KEY set the knowledge-base list was empty, two 401s sat in the console, and the
    key field stayed in the hidden panel until a question failed."""
    data = tmp_path / "data"
    index_laws(data, e5_model, [PIPL])
    env = server_env(data, e5_model, server["llm"].base_url, API_KEY="ui-secret")
    with ServerProcess(env, log_path=tmp_path / "server.log", headers={"Authorization": "Bearer ui-secret"}) as app:
        context = browser.new_context(viewport={"width": 1280, "height": 860}, locale="zh-CN")
        page = context.new_page()
        try:
            page.goto(f"{app.base_url}/")
            page.wait_for_selector("#key-status:has-text('API 密钥')", timeout=30_000)
            assert page.locator("#kb-panel").is_visible()
            assert page.evaluate("document.activeElement.id") == "api-key"
            assert page.locator("#key-status").inner_text() == "服务器设置了 API 密钥：请先填写"
            page.locator("#api-key").fill("wrong")
            page.locator("#key-form button").click()
            page.wait_for_selector("#key-status:has-text('不正确')", timeout=30_000)
            page.locator("#api-key").fill("ui-secret")
            page.locator("#key-form button").click()
            page.wait_for_selector("#kb-select option[value=statutes]", state="attached", timeout=30_000)
            assert page.locator("#key-status").inner_text() == ""
            shot(page, "api-key")
        finally:
            context.close()
