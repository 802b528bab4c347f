"""QueryRouter: greetings and small talk get a short direct reply; questions go on to retrieval.

Cheap rules decide first; the LLM is asked (JSON ``{"route": "chitchat"|"retrieval"}``) only when the rules are
unsure. Anything unclear goes to retrieval: a missed greeting costs a search, a missed question costs an answer.

Usage::

    router = QueryRouter()
    router.run(query="你好")                       # {'reply': '你好！…', 'route': {...}}
    router.run(query="公司收集我的个人信息需要我同意吗")  # {'query': '公司收集…', 'route': {...}}
"""

import re
from typing import Any

from haystack import component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.dataclasses import ChatMessage

from helpers.checks.llm_json import parse_json_object
from llm_access.call_policy import LLMComponent

GREETING_RE = re.compile(
    r"^(你好|您好|嗨|哈喽|hello|hi|hey|早上好|上午好|中午好|下午好|晚上好|早安|晚安|在吗|在不在|谢谢|多谢|感谢|谢啦|"
    r"thanks|thank you|再见|拜拜|bye|好的|ok|嗯|你是谁|你叫什么|你能做什么|你会什么)"
    r"[\s!！。.,，~～?？呀啊呢吗哈]*$",
    re.IGNORECASE,
)
LEGAL_HINT_RE = re.compile(
    r"法|条|规定|权|责任|义务|合同|赔偿|起诉|诉讼|违法|犯罪|处罚|罚款|离婚|继承|劳动|工资|公司|个人信息|同意|"
    r"怎么办|能否|是否|可以|如何|吗|\?|？"
)
REPLIES = {
    "thanks": "不客气！还有其他法律问题可以继续问我。",
    "bye": "再见！有法律问题随时来问。",
    "who": "我是法律知识库助手，可以根据法律条文回答您的问题，并给出引用的法条。",
    "hello": "您好！我是法律知识库助手，请直接描述您的法律问题，例如：公司收集我的个人信息需要我同意吗？",
}
SYSTEM = (
    "判断用户输入是“闲聊”（问候、感谢、寒暄、与法律无关的闲谈）还是“需要检索法律知识库的问题”。"
    '只输出 JSON：{"route": "chitchat"} 或 {"route": "retrieval"}。'
)


def canned_reply(query: str) -> str:
    text = query.lower()
    if any(w in text for w in ("谢", "thank")):
        return REPLIES["thanks"]
    if any(w in text for w in ("再见", "拜拜", "bye")):
        return REPLIES["bye"]
    if any(w in text for w in ("你是谁", "你叫什么", "你能做什么", "你会什么")):
        return REPLIES["who"]
    return REPLIES["hello"]


@component
class QueryRouter(LLMComponent):
    """Routes a query to ``reply`` (small talk, answered here) or ``query`` (needs the knowledge base).

    :param chat_generator: LLM for unsure cases; ``None`` = the factory's light model at warm-up.
    :param use_llm: ask the LLM when the rules are unsure (otherwise unsure → retrieval).
    """

    _params = ("use_llm",)

    def __init__(self, chat_generator: OpenAIChatGenerator | None = None, role: str = "light",
                 use_llm: bool = True) -> None:
        LLMComponent.__init__(self, chat_generator, role)
        self.use_llm = use_llm

    def warm_up(self) -> None:
        if self.use_llm:
            LLMComponent.warm_up(self)

    def classify(self, query: str) -> dict[str, Any]:
        """The route with how it was decided (``rule`` or ``llm``) and the LLM's cost when it was asked."""
        text = query.strip()
        if GREETING_RE.match(text):
            return {"route": "chitchat", "decided_by": "rule", "llm_calls": 0, "seconds": 0.0}
        if LEGAL_HINT_RE.search(text) or len(text) > 20 or not self.use_llm:
            return {"route": "retrieval", "decided_by": "rule", "llm_calls": 0, "seconds": 0.0}
        call = self.chat([ChatMessage.from_system(SYSTEM), ChatMessage.from_user(text)],
                         {"temperature": 0, "max_tokens": 20, "response_format": {"type": "json_object"}})
        parsed = parse_json_object(call.text) or {}
        route = "chitchat" if parsed.get("route") == "chitchat" else "retrieval"
        info = {"route": route, "decided_by": "llm", "llm_calls": 1, "seconds": round(call.seconds, 3)}
        if call.error or "route" not in parsed:
            info["note"] = call.error or "LLM 输出无法解析，按需要检索处理"
        return info

    @component.output_types(query=str, reply=str, route=dict)
    def run(self, query: str) -> dict[str, Any]:
        """:returns: ``query`` (retrieval) or ``reply`` (small talk), and ``route`` for the trace."""
        if not query or not query.strip():
            raise ValueError("query is empty")
        info = self.classify(query)
        if info["route"] == "chitchat":
            return {"reply": canned_reply(query), "route": info}
        return {"query": query.strip(), "route": info}
