"""Shared plumbing of the components that call the LLM: lazy generator, timing, errors that never escape.

A component built without a ``chat_generator`` gets one from the project's single LLM factory
(`llm_access.factory.make_chat_generator`) at warm-up, so a YAML pipeline resolves DeepSeek / ``LLM_BASE_URL`` /
the embedded server on the machine that loads it. ``role="light"`` asks the factory for the cheaper model
(``LLM_LIGHT_MODEL``) used by the router and the judge.

Usage (inside a component)::

    class MyComponent(LLMComponent):
        def run(self, query: str):
            call = self.chat([ChatMessage.from_user(query)], {"temperature": 0})
            if call.error: ...
"""

import copy
import threading
import time
from dataclasses import dataclass
from types import TracebackType
from typing import Any, ClassVar, Self

from haystack import component, default_from_dict, default_to_dict, logging
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.dataclasses import ChatMessage, ChatRole
from openai import APIConnectionError, APITimeoutError, InternalServerError, OpenAIError, RateLimitError, Stream

from helpers.checks.prompt_guard import PromptLeakGuard
from helpers.records.cancellation import Cancellation, RunCancelled, current_cancellation

logger = logging.getLogger(__name__)

ECHO_WINDOW = 16  # a reply repeating this many consecutive characters of a ``no_echo`` text drops them

ROLES = ("main", "light")


@dataclass
class LLMCall:
    """The outcome of one LLM call: ``text`` (or, for a tool call, ``reply.tool_calls``) or an ``error``, never
    both, and its duration."""

    text: str | None
    error: str | None
    seconds: float
    reply: ChatMessage | None = None
    removed: int = 0  # sentences the leak and echo guards removed from the reply


class LLMComponent:
    """Base for components that talk to the chat LLM (subclasses list their own init params in ``_params``)."""

    _params: tuple[str, ...] = ()
    needs_logprobs: bool = False  # the component reads its replies' logprobs

    def __init__(self, chat_generator: OpenAIChatGenerator | None = None, role: str = "main") -> None:
        if role not in ROLES:
            raise ValueError(f"role must be one of {ROLES}, got {role!r}")
        self.chat_generator = chat_generator
        self.role = role
        self._factory_made = chat_generator is None

    def warm_up(self) -> None:
        if self.chat_generator is None:
            from llm_access.factory import make_chat_generator

            self.chat_generator = make_chat_generator(role=self.role, logprobs=self.needs_logprobs)
        self.chat_generator.warm_up()

    def to_dict(self) -> dict[str, Any]:
        # A factory-made generator is not serialised: whoever loads the pipeline resolves their own LLM.
        generator = None if self._factory_made else self.chat_generator
        params = {name: getattr(self, name) for name in self._params}
        return default_to_dict(
            self,
            chat_generator=component_to_dict(generator, "chat_generator") if generator else None,
            role=self.role,
            **params,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Any:
        params = data["init_parameters"]
        if params.get("chat_generator"):
            params["chat_generator"] = component_from_dict(OpenAIChatGenerator, params["chat_generator"],
                                                           "chat_generator")
        return default_from_dict(cls, data)

    def _revive(self) -> bool:
        """Restart the embedded LLM server if that is what this component talks to and its process has died."""
        from llm_access.embedded_server import revive_shared_server

        return revive_shared_server(getattr(self.chat_generator, "api_base_url", None))

    def _abort_generation(self) -> bool:
        """After a timeout: stop the generation the embedded LLM server would otherwise finish for nobody (True if
        that is what this component talks to and it was restarted)."""
        from llm_access.embedded_server import abort_shared_generation

        return abort_shared_generation(getattr(self.chat_generator, "api_base_url", None))

    def _endpoint(self) -> str:
        generator = self.chat_generator
        return f"{getattr(generator, 'api_base_url', None)}|{getattr(generator, 'model', None)}"

    def chat(
        self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None,
        streaming_callback: Any = None,
        no_echo: list[str] | None = None, tools: list[Any] | None = None,
    ) -> LLMCall:
        """One chat call; transport errors, timeouts and empty replies come back as ``error``.

        The openai client retries 429/5xx/connection errors with backoff (``LLM_MAX_RETRIES``). A connection refused
        by an embedded server whose process died (a crash, an out-of-memory kill) restarts it and tries once more.
        When the retries are spent, the endpoint counts as unavailable for ``LLM_COOLDOWN`` seconds and further calls
        fail at once, so one question costs at most one timeout cycle. A free-text reply that repeats the system prompt
        has those sentences removed, and the sentences holding runs of `ECHO_WINDOW` characters copied from ``no_echo``
        (instructions a small model may copy into its reply) are dropped; the streamed text gets the same treatment as
        the returned one.
        """
        if self.chat_generator is None:
            self.warm_up()
        assert self.chat_generator is not None
        started = time.perf_counter()
        endpoint = self._endpoint()
        if COOLDOWNS.active(endpoint):
            return LLMCall(None, "LLM 暂时不可用（刚才的请求已失败，稍后自动重试）", 0.0)
        json_mode = bool((generation_kwargs or {}).get("response_format"))  # structured output quotes its format
        guards = [guard for guard in (
            PromptLeakGuard(no_echo or [], window=ECHO_WINDOW, replacement="", stop_stream=False),
            PromptLeakGuard([] if json_mode else [m.text or "" for m in messages if m.is_from(ChatRole.SYSTEM)]),
        ) if guard.active]
        stream, filters = streaming_callback, []
        if streaming_callback is not None:
            for guard in reversed(guards):  # the first guard sees the raw chunks, and forwards to the next
                stream = guard.stream_filter(stream)
                filters.append(stream)
        cancel = current_cancellation()
        for attempt in (1, 2):
            try:
                with StoppableCall(self, cancel, stream, streamable=not tools and not self.needs_logprobs) as call:
                    result = self.chat_generator.run(messages=messages, generation_kwargs=generation_kwargs,
                                                     streaming_callback=call.callback,
                                                     **({"tools": tools} if tools else {}))
                break
            except RunCancelled as cancelled:  # the run's caller went away, or the server is stopping
                _close_streams(cancelled)
                raise
            except (APITimeoutError, APIConnectionError, RateLimitError, InternalServerError) as error:
                if attempt == 1 and isinstance(error, APIConnectionError) and self._revive():
                    continue  # the embedded server had died and is back on the same port: one more try
                if not (isinstance(error, APITimeoutError) and self._abort_generation()):
                    COOLDOWNS.start(endpoint)  # (an embedded server restarted to stop the generation is ready now)
                logger.warning("LLM unavailable: {error}", error=type(error).__name__)
                reason = ("LLM 请求超时" if isinstance(error, APITimeoutError)
                          else f"LLM 调用失败：{type(error).__name__}")
                return LLMCall(None, reason, time.perf_counter() - started)
            except (OpenAIError, ValueError, RuntimeError) as error:
                logger.warning("LLM call failed: {error}", error=type(error).__name__)
                return LLMCall(None, f"LLM 调用失败：{type(error).__name__}", time.perf_counter() - started)
        COOLDOWNS.clear(endpoint)
        for stream_filter in reversed(filters):  # the outermost first, so each flush reaches the next one
            stream_filter.flush()
        replies = result.get("replies") or []
        text = replies[0].text if replies else None
        removed = 0
        for guard in guards:
            if text:
                text, count = guard.redact_counted(text)
                removed += count
        tool_calls = replies[0].tool_calls if replies else []
        if not text and not tool_calls:
            return LLMCall(None, "LLM 返回了空回复", time.perf_counter() - started)
        reply = replies[0] if text == replies[0].text else ChatMessage.from_assistant(
            text=text, tool_calls=tool_calls, meta=replies[0].meta)  # what a guard removed is gone from the reply too
        return LLMCall(text, None, time.perf_counter() - started, reply, removed)


class StoppableCall:
    """One LLM call that stops when its run is cancelled (`helpers.records.cancellation.current_cancellation`).

    Where the reply can be streamed (no tools, no logprobs) it is, even when nobody reads the chunks: each chunk
    checks the cancellation, and a raised `RunCancelled` closes the HTTP stream, which stops llama.cpp's
    generation at its next token (a non-streamed one runs to its end for nobody). A call cancelled before its
    first chunk (the embedded server still reading the prompt, tens of seconds for a long one on 2 cores) has the
    embedded server stopped at once: restarted on its port, in a thread, when this is its only call in flight.
    Any failure of a cancelled call is `RunCancelled`, never an error to retry."""

    _in_flight: ClassVar[dict[str, int]] = {}  # calls per endpoint, in this process
    _lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, owner: "LLMComponent", cancel: Cancellation | None, callback: Any, streamable: bool) -> None:
        self.owner, self.cancel, self.endpoint = owner, cancel, owner._endpoint()
        self.first_chunk = threading.Event()
        self.callback = callback
        if cancel is not None and (callback is not None or streamable):
            self.callback = self._checked
        self._forwarded = callback
        self._unregister: Any = None

    def _checked(self, chunk: Any) -> None:
        self.first_chunk.set()
        assert self.cancel is not None
        self.cancel.check()
        if self._forwarded is not None:
            self._forwarded(chunk)

    def _stop_now(self) -> None:
        if self.first_chunk.is_set():
            return  # streaming: the next chunk raises
        with self._lock:
            alone = self._in_flight.get(self.endpoint, 0) == 1
        if alone:  # no other caller's generation is cut
            threading.Thread(target=self.owner._abort_generation, daemon=True, name="llm-abort").start()

    def __enter__(self) -> Self:
        if self.cancel is not None:
            self.cancel.check()  # a run already cancelled makes no further call
        with self._lock:
            self._in_flight[self.endpoint] = self._in_flight.get(self.endpoint, 0) + 1
        if self.cancel is not None:
            self._unregister = self.cancel.on_cancel(self._stop_now)
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        if self._unregister is not None:
            self._unregister()
        with self._lock:
            self._in_flight[self.endpoint] -= 1
        if error is not None and not isinstance(error, RunCancelled) and self.cancel is not None \
                and self.cancel.cancelled:  # the stream or the server stopped under it: not an LLM failure
            _close_streams(error)
            raise RunCancelled(f"the run was cancelled: {self.cancel.reason}") from None


def _close_streams(error: BaseException) -> None:
    """Close the HTTP stream an exception from a streaming callback left open, so the LLM server stops generating
    now. Haystack's sync streaming loop does not close it on a callback error (its async loop does on cancel); the
    stream would stay open until the garbage collector broke the traceback's cycle."""
    traceback = error.__traceback__
    while traceback is not None:
        for value in list(traceback.tb_frame.f_locals.values()):
            if isinstance(value, Stream):
                value.close()
        traceback = traceback.tb_next


class EndpointCooldowns:
    """Endpoints whose retries were spent, and until when calls to them fail fast (``LLM_COOLDOWN`` seconds).

    Lifetime: one table per process (`COOLDOWNS`), shared by every caller of the policy, so one question costs at
    most one timeout cycle however many components ask; an endpoint's entry ends with its first successful call.
    """

    def __init__(self) -> None:
        self._until: dict[str, float] = {}
        self._lock = threading.Lock()

    def active(self, endpoint: str) -> bool:
        with self._lock:
            return time.monotonic() < self._until.get(endpoint, 0.0)

    def start(self, endpoint: str) -> None:
        with self._lock:
            self._until[endpoint] = time.monotonic() + cooldown_seconds()

    def clear(self, endpoint: str) -> None:
        """End the cooldown of ``endpoint`` (after a successful call)."""
        with self._lock:
            self._until.pop(endpoint, None)


COOLDOWNS = EndpointCooldowns()


def cooldown_seconds() -> float:
    from config.settings import Settings

    return Settings.from_env().llm_cooldown


class LLMUnavailableError(RuntimeError):
    """Raised by `PolicyChatGenerator` where the call policy returned an error (timeout, server down, cooldown)."""


@component
class PolicyChatGenerator:
    """A chat generator that makes every call through the call policy of `LLMComponent.chat` (retries, cooldown,
    server revive, leak and echo guards), for code that needs a generator object: Haystack's `Agent`.

    Usage::

        agent = Agent(chat_generator=PolicyChatGenerator(make_chat_generator()), tools=[...])
    """

    def __init__(self, chat_generator: OpenAIChatGenerator, cancel: Cancellation | None = None) -> None:
        self.policy = LLMComponent(chat_generator)
        self.cancel = cancel

    def warm_up(self) -> None:
        self.policy.warm_up()

    def cancellable(self, cancel: Cancellation | None) -> Any:
        """The same generator, checking ``cancel`` before every call (one run's; the policy is shared)."""
        twin = copy.copy(self)
        twin.cancel = cancel
        return twin

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage], generation_kwargs: dict[str, Any] | None = None,
            tools: list[Any] | None = None, streaming_callback: Any = None) -> dict[str, list[ChatMessage]]:
        if self.cancel is not None:
            self.cancel.check()  # the caller went away: no further step
        call = self.policy.chat(messages, generation_kwargs, streaming_callback, tools=tools)
        if call.error is not None or call.reply is None:
            raise LLMUnavailableError(call.error or "no reply")
        return {"replies": [call.reply]}
