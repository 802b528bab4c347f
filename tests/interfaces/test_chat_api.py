"""Follow-up questions are made standalone from the history; unusable LLM output falls back to a rule."""

import pytest
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from harness.openai_server import ScriptedOpenAIServer
from interfaces.chat_api import Condenser

HISTORY = [{"role": "user", "content": "个人信息保护法第十三条规定了什么"},
           {"role": "assistant", "content": "规定了……"}]


@pytest.fixture
def condenser():
    with ScriptedOpenAIServer() as server:
        generator = OpenAIChatGenerator(api_key=Secret.from_token("unused"), model="local",
                                        api_base_url=server.base_url, timeout=2, max_retries=0)
        yield Condenser(chat_generator=generator), server


def test_a_standalone_question_is_left_alone(condenser):
    component, server = condenser
    assert component.condense(HISTORY, "民法典第一千零三十二条规定了什么")[1] == {"condensed": False}
    assert server.requests == []


def test_a_follow_up_is_rewritten_by_the_llm(condenser):
    component, server = condenser
    server.add_rule("把用户最后的问题改写", "个人信息保护法第十四条规定了什么？")
    question, info = component.condense(HISTORY, "那第十四条呢？")
    assert question == "个人信息保护法第十四条规定了什么？" and info["by"] == "llm"


@pytest.mark.parametrize(("reply", "status"), [("}{", 200), ("ok", 200), ("x", 500)])
def test_unusable_llm_output_falls_back_to_the_previous_topic(condenser, reply, status):
    component, server = condenser
    server.add_rule("", reply, status=status)
    question, info = component.condense(HISTORY, "那第十四条呢？")
    assert question == "个人信息保护法第十三条规定了什么；那第十四条呢？" and info["by"] == "rule"
