"""The one place that decides which LLM the project talks to, and builds chat generators for it.

Resolution order:

1. ``DEEPSEEK_API_KEY`` set → DeepSeek (``DEEPSEEK_MODEL``, default ``deepseek-chat``);
2. ``LLM_BASE_URL`` set → that OpenAI-compatible server (``LLM_MODEL``, key from ``LLM_API_KEY`` if any);
3. otherwise → the embedded llama.cpp server, started on a free 127.0.0.1 port on first use.

Usage::

    from llm_access.factory import make_chat_generator
    generator = make_chat_generator(generation_kwargs={"temperature": 0})
    reply = generator.run(messages=[ChatMessage.from_user("你好")])["replies"][0].text
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from config.settings import Settings
from llm_access.embedded_server import MODEL_ALIAS, shared_server

LOCAL_KEY_ENV = "LLM_API_KEY"
LOCAL_KEY_PLACEHOLDER = "sk-local-no-key"


@dataclass(frozen=True)
class LLMEndpoint:
    """Where the chat model lives: ``kind`` is ``deepseek``, ``server`` or ``embedded``."""

    kind: str
    base_url: str
    model: str
    api_key_env: str


def uses_api_model(settings: Settings) -> bool:
    """Whether the LLM is an API model (DeepSeek or an ``LLM_BASE_URL`` server) rather than the embedded 1.5B one,
    decided without starting anything: the defaults that depend on the model's strength and speed read this."""
    return bool(os.environ.get("DEEPSEEK_API_KEY", "").strip() or settings.llm_base_url)


def resolve_endpoint(settings: Settings | None = None, *, logprobs: bool = False) -> LLMEndpoint:
    """Apply the resolution order above; starts the embedded server when it is the one chosen (``logprobs``: one
    that returns them; DeepSeek and other servers return them anyway)."""
    settings = settings or Settings.from_env()
    if os.environ.get("DEEPSEEK_API_KEY", "").strip():
        return LLMEndpoint("deepseek", settings.deepseek_base_url, settings.deepseek_model, "DEEPSEEK_API_KEY")
    # Local servers ignore the key, but the OpenAI client insists on one.
    if not os.environ.get(LOCAL_KEY_ENV, "").strip():
        os.environ[LOCAL_KEY_ENV] = LOCAL_KEY_PLACEHOLDER
    if settings.llm_base_url:
        return LLMEndpoint("server", settings.llm_base_url, settings.llm_model, LOCAL_KEY_ENV)
    server = shared_server(
        settings.llm_gguf,
        n_ctx=settings.llm_ctx,
        n_threads=settings.llm_threads,
        start_timeout=settings.llm_start_timeout,
        log_path=settings.data_dir / "llm_server.log",
        logprobs=logprobs,
    )
    return LLMEndpoint("embedded", server.base_url, MODEL_ALIAS, LOCAL_KEY_ENV)


def make_chat_generator(
    settings: Settings | None = None,
    *,
    role: str = "main",
    generation_kwargs: dict[str, Any] | None = None,
    streaming_callback: Any = None,
    logprobs: bool = False,
) -> OpenAIChatGenerator:
    """An `OpenAIChatGenerator` for the resolved endpoint, with the configured timeout and retries.

    ``role="light"`` selects ``LLM_LIGHT_MODEL`` (the cheaper model for routing and judging) when it is set;
    ``logprobs``: the caller reads the replies' logprobs (the embedded server then keeps them).
    """
    settings = settings or Settings.from_env()
    endpoint = resolve_endpoint(settings, logprobs=logprobs)
    model = settings.llm_light_model if role == "light" and settings.llm_light_model else endpoint.model
    return OpenAIChatGenerator(
        api_key=Secret.from_env_var(endpoint.api_key_env),
        model=model,
        api_base_url=endpoint.base_url,
        generation_kwargs=generation_kwargs or {},
        streaming_callback=streaming_callback,
        timeout=settings.llm_timeout,
        # a retry of a timed-out request would queue behind the generation that timed out: the embedded server is
        # not retried; the call policy stops that generation instead and restarts a dead server
        max_retries=0 if endpoint.kind == "embedded" else settings.llm_max_retries,
    )
