"""The request-facing layer behind the Hayhooks wrappers: validation with 4xx errors, modes, knowledge bases,
multi-turn chat (follow-ups rewritten into standalone questions) and streaming with a final result event.

Usage::

    api = ChatAPI()
    api.ask(query="公司收集我的个人信息需要我同意吗", mode="rag")
    for piece in api.chat([{"role": "user", "content": "…"}], {"stream": True}): ...
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncGenerator, Iterator
from contextlib import contextmanager
from typing import Any

from fastapi import HTTPException
from fastapi_openai_compat import ChatCompletion
from fastapi_openai_compat.chat_completions.streaming import chat_completion_response
from hayhooks.events import PipelineEvent
from haystack import logging
from haystack.core.errors import PipelineRuntimeError
from haystack.dataclasses import ChatMessage, StreamingChunk
from haystack.utils.filters import FilterError

from application.filters import check_filters
from application.index_jobs import DONE, get_index_jobs
from application.service import KnowledgeBaseBusyError, RAGService, UnknownKnowledgeBaseError, get_service
from application.validation import MAX_QUERY_CHARS, validate_query
from document_store.errors import StoreConfigError, StoreLockedError
from document_store.statute_db import UnknownLawError
from document_store.text_files import FileLoadError
from helpers.records.cancellation import Cancellation, RunCancelled, cancelling, current_cancellation
from helpers.records.contracts import CHAT_MODES, PIPELINE_MODES, Mode
from helpers.records.result import RAGResult
from helpers.statutes.citations import UNVERIFIED_MARK
from helpers.statutes.versions import parse_as_of, with_versions
from llm_access.call_policy import LLMComponent

logger = logging.getLogger(__name__)

MAX_TOP_K = 50
CJK_RE = re.compile(r"[\u4e00-\u9fff]")
FOLLOW_UP_RE = re.compile(r"^(那|那么|这|这个|那个|它|其|如果|要是|还有|另外|违反|第.{1,8}条)|呢[？?]?$")
CONDENSE_SYSTEM = (
    "根据对话历史，把用户最后的问题改写成一个不依赖上下文、完整独立的中文问题（补全省略的法律名称、主体和事项）。"
    "只输出改写后的问题。"
)
CLIENT_ERRORS = (ValueError, UnknownLawError, FileLoadError, UnknownKnowledgeBaseError, FilterError)


def bad_request(message: str, status: int = 400) -> HTTPException:
    return HTTPException(status_code=status, detail=message)


@contextmanager
def http_errors() -> Iterator[None]:
    """Maps what the service raises to HTTP errors: bad input 400, unknown knowledge base 404, a knowledge base being
    indexed (delete) 409, locked or misconfigured store 503, a pipeline failure a 500 that names the stage (details in
    the server log, none to the client)."""
    try:
        yield
    except RunCancelled as error:
        raise cancelled(error) from None
    except UnknownKnowledgeBaseError as error:
        raise bad_request(str(error), 404) from error
    except KnowledgeBaseBusyError as error:
        raise bad_request(str(error), 409) from error
    except (StoreLockedError, StoreConfigError) as error:
        raise bad_request(str(error), 503) from error
    except CLIENT_ERRORS as error:
        raise bad_request(str(error)) from error
    except PipelineRuntimeError as error:
        if isinstance(error.__cause__, RunCancelled):  # the client went away, or the server is stopping
            raise cancelled(error.__cause__) from None
        if isinstance(error.__cause__, FilterError):
            raise bad_request(f"invalid filters: {error.__cause__}") from error
        logger.exception("pipeline failed in component {component}", component=error.component_name)
        raise bad_request(f"内部错误（{error.component_name}），请稍后重试；详情见服务器日志", 500) from error


def cancelled(error: RunCancelled) -> HTTPException:
    """A run stopped by its cancellation: one log line (no traceback) and a 503 that says why (the client that
    left reads nothing; one whose server is stopping reads this)."""
    logger.info("run stopped: {reason}", reason=str(error))
    return bad_request(f"请求已取消：{error}", 503)


def warnings_note(warnings: list[str]) -> str:
    """The result's warnings as a note after the answer text, for OpenAI clients that read nothing but the text
    (the REST result and the stream's ``rag_result`` event carry them as the ``warnings`` list)."""
    return f"\n\n〔注意：{'；'.join(warnings)}〕" if warnings else ""


def check_knowledge_base(name: Any) -> None:
    """A request's knowledge base: omitted (None: the default) or a name; an empty name is a mistake, not the
    default."""
    if name is not None and (not isinstance(name, str) or not name.strip()):
        raise ValueError("knowledge_base must be a non-empty name (omit it to ask the default knowledge base)")


def normalise_messages(messages: Any) -> list[dict[str, str]]:
    """OpenAI chat messages as {role, content} with text content (content parts joined); anything else is a 400."""
    if not isinstance(messages, list):
        raise bad_request("messages must be a list of {role, content} objects")
    out = []
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):  # [{"type": "text", "text": "..."}]
            content = "".join(str(p.get("text", "")) for p in content
                              if isinstance(p, dict) and p.get("type") == "text")
        if role not in ("system", "user", "assistant", "tool") or not isinstance(content, str | None):
            raise bad_request(f"messages[{i}] must have a role (system/user/assistant/tool) and text content")
        out.append({"role": role, "content": content or ""})
    return out


class Condenser(LLMComponent):
    """Rewrites a follow-up (“那第十四条呢？”) into a standalone question using the conversation history."""

    def condense(self, history: list[dict[str, str]], question: str) -> tuple[str, dict[str, Any]]:
        users = [m["content"] for m in history if m.get("role") == "user"]
        if not users or not FOLLOW_UP_RE.search(question.strip()):
            return question, {"condensed": False}
        transcript = "\n".join(f"{m['role']}: {str(m.get('content', ''))[:500]}" for m in history[-6:])
        call = self.chat([ChatMessage.from_system(CONDENSE_SYSTEM),
                          ChatMessage.from_user(f"对话历史：\n{transcript}\n\n最后的问题：{question}")],
                         {"temperature": 0, "max_tokens": 120})
        standalone = (call.text or "").strip().splitlines()[0].strip() if call.text else ""
        usable = len(CJK_RE.findall(standalone)) >= 2 and len(standalone) <= 4 * len(question) + 200
        if call.error or not usable:  # fall back to keeping the previous question's topic
            standalone = f"{users[-1]}；{question}"
        return standalone[:MAX_QUERY_CHARS], {"condensed": True, "from": question, "standalone": standalone,
                                              "by": "llm" if usable and not call.error else "rule"}


class ChatAPI:
    """Shared by every wrapper; all state lives in the process-wide service."""

    def __init__(self, service: RAGService | None = None) -> None:
        self.service = service or get_service()
        self.condenser = Condenser(role="light")

    def warm_up(self) -> None:
        """Open the default knowledge base and load its models now (skipped while it does not exist yet)."""
        try:
            self.service.rag()
            self.condenser.warm_up()
        except UnknownKnowledgeBaseError:
            logger.warning("default knowledge base not indexed yet; run `python -m pipelines index`")

    @staticmethod
    def _checked(query: Any, mode: Any, top_k: Any, filters: Any,
                 as_of: Any = None) -> tuple[str, int, dict[str, Any] | None]:
        """The request's query, top_k and filters, validated (a `ValueError` is an HTTP 400); ``as_of`` (a date,
        ``YYYY-MM-DD``: the statutes in force that day) is folded into the filters."""
        if not isinstance(query, str):
            raise ValueError("query must be a string")  # noqa: TRY004 - a client error: HTTP 400
        query = validate_query(query)
        Mode.parse(mode)
        if isinstance(top_k, bool) or not isinstance(top_k, int) or not 1 <= top_k <= MAX_TOP_K:  # "5" too, as REST
            raise ValueError(f"top_k must be an integer between 1 and {MAX_TOP_K}, got {top_k!r}")
        if as_of is not None and not isinstance(as_of, str):
            raise ValueError(f"as_of must be a date written YYYY-MM-DD, got {as_of!r}")
        filters = check_filters(filters)
        return query, top_k, with_versions(filters, as_of) if parse_as_of(as_of) else filters

    def ask(self, query: str, mode: str = "agentic", top_k: int = 10, filters: Any = None,
            knowledge_base: str | None = None, streaming_callback: Any = None,
            on_step: Any = None, cancel: Cancellation | None = None, as_of: Any = None) -> RAGResult:
        """Answer (or, mode ``retrieve``, search) one question; ``as_of`` asks for the statutes in force on that
        day (``YYYY-MM-DD``) instead of today's (the result warns of a law it names that is held in no version of
        that day).

        Inside an HTTP request the run is cancelled when its client disconnects or the server stops
        (`current_cancellation`); every LLM call of the run then stops (`llm_access.call_policy`)."""
        cancel = cancel or current_cancellation()
        with http_errors(), cancelling(cancel):
            query, top_k, filters = self._checked(query, mode, top_k, filters, as_of)
            check_knowledge_base(knowledge_base)
            if mode == Mode.RETRIEVE:
                return self.service.rag(knowledge_base).retrieve(query, filters=filters, top_k=top_k, as_of=as_of)
            if mode == Mode.AGENT:
                result = self.service.agent(knowledge_base).ask(query, cancel=cancel, filters=filters, as_of=as_of)
            else:
                result = self.service.ask(query, mode=mode, knowledge_base=knowledge_base, filters=filters,
                                          top_k=top_k, streaming_callback=streaming_callback, on_step=on_step,
                                          cancel=cancel, as_of=as_of)
            return self.service.remember(result, query)  # its answer_id: what feedback on it names

    def _chat_request(self, messages: list[dict], body: dict) -> tuple[str, dict[str, Any], dict[str, Any]]:
        history = normalise_messages(messages)
        if not any(m["role"] == "user" and m["content"].strip() for m in history):
            raise bad_request("the chat request has no user message")
        last = max(i for i, m in enumerate(history) if m["role"] == "user")
        options = {"mode": body.get("mode", "agentic"), "knowledge_base": body.get("knowledge_base"),
                   "top_k": body.get("top_k", 10), "filters": body.get("filters"), "as_of": body.get("as_of")}
        with http_errors():  # bad input and an unknown knowledge base are HTTP errors before any streaming starts
            Mode.parse(options["mode"], CHAT_MODES)
            self._checked(history[last]["content"], options["mode"], options["top_k"], options["filters"],
                          options["as_of"])
            check_knowledge_base(options["knowledge_base"])
            self.service.rag(options["knowledge_base"])
        standalone, info = self.condenser.condense(history[:last], history[last]["content"])
        return standalone, info, options

    async def chat(self, messages: list[dict], body: dict) -> ChatCompletion | AsyncGenerator[Any, None]:
        """The OpenAI-compatible chat: the answer as a `ChatCompletion` whose id is its ``answer_id``, or (``stream``)
        an async generator of text pieces and events.

        Leaving the generator (the client disconnected: Hayhooks closes it) cancels the run: it stops at the next
        stage boundary, and an LLM answer being streamed stops at its next chunk.
        """
        query, condensed, options = await asyncio.to_thread(self._chat_request, messages, body)
        if not body.get("stream"):
            result = await asyncio.to_thread(self.ask, query, **options)
            result.trace["condensed"] = condensed
            # its id is the answer_id, what `POST /feedback` names (a stream's `rag_result` event carries it)
            return chat_completion_response(result.answer + warnings_note(result.warnings), result.answer_id or "",
                                            str(body.get("model") or "agentic_rag"))
        return self._stream(query, condensed, options)

    async def _stream(self, query: str, condensed: dict, options: dict) -> AsyncGenerator[Any, None]:
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[Any] = asyncio.Queue()
        done = object()
        outcome: dict[str, Any] = {}
        cancel = Cancellation()  # the request's (`current_cancellation`) ends with this generator: the stream's own
        if (request := current_cancellation()) is not None:
            request.on_cancel(lambda: cancel.cancel(request.reason))  # the server stopping cancels it too

        def put(item: Any) -> None:
            try:
                loop.call_soon_threadsafe(pieces.put_nowait, item)
            except RuntimeError:  # the event loop has closed (the server is stopping): nobody reads any more
                cancel.cancel()

        def on_chunk(chunk: StreamingChunk) -> None:
            cancel.check()
            if chunk.content:
                put(chunk.content)

        def on_step(event: dict[str, Any]) -> None:
            put(PipelineEvent(type="rag_step", data=event))

        def work() -> None:
            try:
                step = on_step if options["mode"] in PIPELINE_MODES else None
                outcome["result"] = self.ask(query, streaming_callback=on_chunk, on_step=step, cancel=cancel,
                                             **options)
            except HTTPException as error:  # a cancelled run too: 请求已取消：<why>
                outcome["error"] = str(error.detail)
            except Exception as error:  # noqa: BLE001 - reported to the client, never kills the worker
                logger.error("chat stream failed: {error}", error=str(error))
                outcome["error"] = "服务器内部错误，请稍后重试"
            finally:
                put(done)

        threading.Thread(target=work, daemon=True, name="chat-stream").start()
        try:
            streamed = ""
            if condensed.get("condensed"):
                yield PipelineEvent(type="rag_step", data={"stage": "condense", **condensed})
            while (piece := await pieces.get()) is not done:
                if isinstance(piece, str):
                    streamed += piece
                yield piece
            if "error" in outcome:
                yield f"\n错误：{outcome['error']}"
                yield PipelineEvent(type="rag_error", data={"message": outcome["error"]})
                return
            result = outcome["result"]
            if tail := self.unsent_part(streamed, result.answer, result.unverified_citations):
                yield tail
            if note := warnings_note(result.warnings):
                yield note
            result.trace["condensed"] = condensed
            yield PipelineEvent(type="rag_result", data=result.to_dict())
        finally:
            cancel.cancel("the client disconnected")  # a client that left mid-stream: the run stops

    @staticmethod
    def unsent_part(streamed: str, answer: str, unverified: list[str]) -> str:
        """What a plain OpenAI client still needs after the streamed text to hold the checked answer: the rest of
        it, and the citations that failed verification (their marks were added after the text streamed)."""
        if answer.startswith(streamed):
            return answer[len(streamed):]
        plain = answer.replace(UNVERIFIED_MARK, "")
        note = f"\n\n〔未核实的引用：{'、'.join(unverified)}〕" if unverified else ""
        if plain.startswith(streamed):
            return plain[len(streamed):] + note
        return f"\n\n——核对后的回答——\n{answer}"

    def index(self, knowledge_base: str, laws: list[str] | None, files: list[tuple[str, bytes]],
              wait: bool = False) -> dict[str, Any]:
        """Queue an index job and return it at once (``GET /index/jobs/{job_id}`` follows it); with ``wait``, return
        when it has ended, with its results (a failed job is an HTTP 500 with its one-line reason)."""
        with http_errors():
            job = get_index_jobs().submit(knowledge_base, laws=laws, files=files)
        answer = {"job_id": job.job_id, "knowledge_base": job.knowledge_base, "status_url": f"/index/jobs/{job.job_id}"}
        if not wait:
            return {**answer, "status": job.status}
        job = get_index_jobs().wait(job.job_id)
        if job.status != DONE:
            raise bad_request(f"indexing failed: {job.error}", 500)
        return {**answer, "status": job.status, "results": job.results}

    def manage(self, action: str, name: str | None) -> dict[str, Any]:
        with http_errors():
            if action == "list":
                return {"knowledge_bases": self.service.knowledge_bases(), "default": self.service.settings.collection}
            if action == "delete":
                if not name:
                    raise ValueError("name is required to delete a knowledge base")
                self.service.delete(name)
                return {"deleted": name}
            if action == "stats":
                check_knowledge_base(name)  # an empty name is a mistake, not the default knowledge base
                return self.service.stats(name)
            raise ValueError(f"action must be 'list', 'stats' or 'delete', got {action!r}")
