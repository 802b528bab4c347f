"""The web UI in headless Chromium (Debian's package, driven by Playwright) against the real server and the scripted
LLM server. Screenshots of the main states go to test-artifacts/screenshots/ (git-ignored)."""

import json
import shutil
from pathlib import Path

import pytest

from harness.app_server import index_laws, server_env
from harness.openai_server import TOOL_PREFIX, ScriptedOpenAIServer
from harness.server_process import ServerProcess

sync_api = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PIPL = "中华人民共和国个人信息保护法"
QUESTION = "公司收集我的个人信息需要我同意吗"
ANSWER = (f"【问题分析】公司收集个人信息属于处理个人信息。处理前应当告知处理目的和方式。一般需要在三十日内取得同意。同意可以撤回。撤回不影响撤回前的处理。\n【相关法条】《{PIPL}》第十四条规定，基于个人同意处理个人信息的，"
          f"该同意应当由个人在充分知情的前提下自愿、明确作出。另见《{PIPL}》第九十九条。\n【免责声明】仅供参考。")
HANDBOOK = "# 员工手册\n第一条 员工请假需提前三天申请。\n第二条 加班应当支付加班费，标准为工资的百分之一百五十。\n"

pytestmark = pytest.mark.skipif(not Path(CHROMIUM).exists(),
                                reason="Debian's chromium is not installed (`make test` installs it)")


@pytest.fixture(scope="module")
def server(tmp_path_factory, e5_model):
    data = tmp_path_factory.mktemp("ui") / "data"
    index_laws(data, e5_model, [PIPL])
    with ScriptedOpenAIServer(default="好的") as llm:
        llm.add_rule("员工手册", "依据《员工手册》第二条，加班应当支付加班费，标准为工资的百分之一百五十。")
        llm.add_rule("你是中国法律检索专家", '{"variants": ["个人信息处理者处理个人信息是否应当取得个人同意"], '
                                         '"keywords": ["个人信息", "同意"]}')
        llm.add_rule("法律检索质量评估员", '{"reasoning": "条文直接回答了问题", "relevance": 9, "completeness": 8, '
                                      '"accuracy": 9, "coverage": 8, "missing": ""}')
        llm.add_rule("严谨的中国法律咨询助手", ANSWER, chunk_delay=0.05)  # streamed over ~1.5 s
        with ServerProcess(server_env(data, e5_model, llm.base_url), log_path=data.parent / "server.log") as app:
            yield {"base": app.base_url, "llm": llm}


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
    assert message.locator(".trace").get_attribute("open") is None  # collapsed into a trace once done
    shot(page, "answer_agentic")
    message.locator(".trace > summary").click()
    assert judge.is_visible()
    shot(page, "answer_agentic_steps")

    message.locator("button.cite", has_text=f"《{PIPL}》第十四条").first.click()
    view = page.locator("#citation-view")
    view.wait_for(state="visible")
    assert "第十四条" in page.inner_text("#citation-title")
    assert "基于个人同意处理个人信息的，该同意应当由个人在充分知情的前提下自愿、明确作出" in page.inner_text("#citation-text")
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


def test_upload_into_a_new_knowledge_base_then_ask_it(page, server, tmp_path):
    handbook = tmp_path / "员工手册.md"
    handbook.write_text(HANDBOOK, encoding="utf-8")
    page.click("#kb-toggle")
    page.fill("#upload-kb", "handbook")
    page.set_input_files("#upload-files", str(handbook))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#upload-status:has-text('已添加')")
    assert "已添加 2 条" in page.inner_text("#upload-status")
    assert page.locator("#kb-list li[data-name=handbook]").inner_text().startswith("handbook：2 条")
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


def test_delete_a_knowledge_base_after_confirming(page, server, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("第一条 测试条文。\n", encoding="utf-8")
    page.click("#kb-toggle")
    page.fill("#upload-kb", "scratch")
    page.set_input_files("#upload-files", str(notes))
    page.click("#upload-form button[type=submit]")
    page.wait_for_selector("#kb-list li[data-name=scratch]")
    messages = []
    page.on("dialog", lambda dialog: (messages.append(dialog.message), dialog.accept()))
    page.click("#kb-list li[data-name=scratch] button")
    page.wait_for_selector("#kb-list li[data-name=scratch]", state="detached")
    assert "scratch" in messages[0] and "无法恢复" in messages[0]


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
