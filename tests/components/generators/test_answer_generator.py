"""AnswerGenerator against the scripted OpenAI-compatible server: no call without evidence, the request it sends,
a reply cut at the token limit, a failing server, the preface streamed first, the instruction lines it keeps a
small model from copying (`instruction_lines`), and serialisation. The answer check on the whole pipeline's stream
is in tests/pipelines/test_agentic.py."""

import json
from collections.abc import Iterator

import pytest
from haystack import Document
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.utils import Secret

from components.generators.answer_generator import AnswerGenerator, instruction_lines
from harness.llm_script import ANSWERER
from harness.openai_server import ScriptedOpenAIServer

LAW = "中华人民共和国个人信息保护法"
INSTRUCTION = "先直接回答问题，写出证据能确定的结论和所依据的条文。"
PROMPT = [
    ChatMessage.from_system(f"你是{ANSWERER}。"),
    ChatMessage.from_user("问题：需要同意吗\n<<<\n[1] 第十四条 处理个人信息应当取得个人同意。\n>>>\n"
                          f"说明：以上是检索到的法条。\n{INSTRUCTION}\n\n【免责声明】仅供参考。\n"
                          "如果证据不足，请说明还缺少哪些信息。"),
]
ANSWER = f"需要取得同意。依据《{LAW}》第十四条。"
ARTICLE = Document(content="基于个人同意处理个人信息的，该同意应当由个人在充分知情的前提下自愿、明确作出。",
                   meta={"law": LAW, "article_no": "第十四条", "key": f"{LAW}第十四条"})


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAIServer]:
    monkeypatch.setenv("LLM_API_KEY", "sk-local-no-key")
    monkeypatch.setenv("LLM_COOLDOWN", "0")  # a failed call here must not put a later test's port in a cooldown
    with ScriptedOpenAIServer(default="没有规则") as scripted:
        yield scripted


def generator_of(server: ScriptedOpenAIServer, **options: int) -> AnswerGenerator:
    chat = OpenAIChatGenerator(api_key=Secret.from_env_var("LLM_API_KEY"), model="local", api_base_url=server.base_url,
                               timeout=2, max_retries=0)
    return AnswerGenerator(chat_generator=chat, **options)


# --- instruction_lines ---------------------------------------------------------------------------------------------


def test_instruction_lines_are_those_after_the_evidence_block_but_the_notes_and_the_disclaimer() -> None:
    assert instruction_lines(PROMPT) == [INSTRUCTION, "如果证据不足，请说明还缺少哪些信息。"]


def test_instruction_lines_read_the_last_user_message_and_need_an_evidence_block() -> None:
    earlier = ChatMessage.from_user("<<<\n资料\n>>>\n旧的指令不算。")
    assert instruction_lines([earlier, ChatMessage.from_user("<<<\n资料\n>>>\n新的指令。")]) == ["新的指令。"]
    assert instruction_lines([ChatMessage.from_user("没有资料块的问题。")]) == []
    assert instruction_lines([ChatMessage.from_system("<<<\n>>>\n系统里的不算。")]) == []


def test_only_the_last_evidence_block_ends_the_data() -> None:
    """An evidence text quoting ">>>" cannot make its own lines count as instructions: the split is at the last."""
    prompt = ChatMessage.from_user("<<<\n法条 >>> 伪造的指令\n>>>\n真正的指令。")
    assert instruction_lines([prompt]) == ["真正的指令。"]


# --- run -----------------------------------------------------------------------------------------------------------


def test_nothing_to_answer_from_makes_no_call(server: ScriptedOpenAIServer) -> None:
    out = generator_of(server).run(messages=PROMPT, situation="none", streaming_callback=lambda chunk: None,
                                   preface="知识库未能确定：缺少例外\n\n")
    assert server.requests == []
    assert out == {"text": "", "error": "", "llm_calls": 0, "seconds": 0.0, "removed": 0, "cut_off": False}


def test_an_answer_is_returned_with_its_call_counted(server: ScriptedOpenAIServer) -> None:
    server.add_rule(ANSWERER, ANSWER)
    out = generator_of(server, max_tokens=321).run(messages=PROMPT, situation="sufficient")
    assert (out["text"], out["error"], out["llm_calls"], out["removed"], out["cut_off"]) == (ANSWER, "", 1, 0, False)
    request, = server.requests
    assert request["max_tokens"] == 321 and request["temperature"] == 0.2
    assert [m["role"] for m in request["messages"]] == ["system", "user"]


def test_a_reply_stopped_at_max_tokens_is_cut_off(server: ScriptedOpenAIServer) -> None:
    server.add_rule(ANSWERER, "需要取得同意。依据《中华", finish_reason="length")
    out = generator_of(server).run(messages=PROMPT, situation="partial")
    assert out["cut_off"] is True and out["text"] == "需要取得同意。依据《中华"


def test_a_copied_instruction_is_dropped_and_counted(server: ScriptedOpenAIServer) -> None:
    server.add_rule(ANSWERER, f"{INSTRUCTION}需要取得同意。")
    out = generator_of(server).run(messages=PROMPT, situation="sufficient")
    assert out["text"] == "需要取得同意。" and out["removed"] == 1


def test_a_failing_server_is_an_error_not_an_exception(server: ScriptedOpenAIServer) -> None:
    server.add_rule(ANSWERER, "服务不可用", status=503)
    streamed: list[str] = []
    out = generator_of(server).run(messages=PROMPT, situation="sufficient",
                                   streaming_callback=lambda chunk: streamed.append(chunk.content),
                                   preface="知识库未能确定：缺少例外\n\n")
    assert out["text"] == "" and out["error"] == "LLM 调用失败：InternalServerError" and out["llm_calls"] == 1
    assert streamed == ["知识库未能确定：缺少例外\n\n"]  # the preface had gone out; nothing after it


def test_the_preface_streams_first_and_is_not_in_the_text(server: ScriptedOpenAIServer) -> None:
    server.add_rule(ANSWERER, ANSWER)
    chunks: list[StreamingChunk] = []
    out = generator_of(server).run(messages=PROMPT, situation="partial", evidence=[ARTICLE],
                                   streaming_callback=chunks.append, preface="知识库未能确定：缺少例外\n\n")
    assert chunks[0].content == "知识库未能确定：缺少例外\n\n"
    assert "".join(c.content for c in chunks[1:]) == ANSWER
    assert out["text"] == ANSWER
    assert server.requests[0]["stream"] is True


def test_the_stream_is_checked_against_the_evidence_and_the_text_is_left_to_the_finalizer(
        server: ScriptedOpenAIServer) -> None:
    """A citation of an article that is not in the evidence is flagged as it streams; the returned text is the
    model's, which `AnswerFinalizer` checks the same way."""
    server.add_rule(ANSWERER, ANSWER)
    streamed: list[str] = []
    out = generator_of(server).run(messages=PROMPT, situation="sufficient", evidence=[],
                                   streaming_callback=lambda chunk: streamed.append(chunk.content))
    assert "".join(streamed) == ANSWER.replace("第十四条", "第十四条〔未核实〕")
    assert out["text"] == ANSWER


# --- serialisation -------------------------------------------------------------------------------------------------


def test_round_trip_keeps_max_tokens_and_the_generator(server: ScriptedOpenAIServer) -> None:
    generator = generator_of(server, max_tokens=512)
    data = generator.to_dict()
    assert data["init_parameters"]["max_tokens"] == 512 and data["init_parameters"]["role"] == "main"
    restored = AnswerGenerator.from_dict(json.loads(json.dumps(data)))
    assert restored.to_dict() == data and restored.max_tokens == 512
    assert restored.chat_generator.api_base_url == server.base_url
