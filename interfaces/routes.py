"""Which of Hayhooks' routes this server offers: the runtime-deployment, file and responses routes are removed, and
the OpenAI-compatible model list names the chat model only.

Usage::

    app = hayhooks.create_app()
    offer_only_our_routes(app)
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI

# Hayhooks routes this server does not offer: runtime deployment (a client could upload and run Python or YAML),
# /draw (calls an outside rendering service), the OpenAI responses and files APIs (not implemented here: 501).
BLOCKED_PREFIXES = ("/deploy", "/undeploy", "/draw", "/responses", "/v1/responses", "/files", "/v1/files",
                    "/docs", "/redoc")  # FastAPI's API docs load Swagger from a CDN: the server app serves them offline
MODEL_LIST_PATHS = ("/v1/models", "/models")


def prune_routes(routes: list[Any], prefixes: tuple[str, ...] = BLOCKED_PREFIXES, base: str = "") -> None:
    """Remove, in place and inside included routers, every route whose path as served (``base``, the prefixes its
    routers were included under, then its own path) starts with one of ``prefixes``."""
    routes[:] = [r for r in routes if not (base + str(getattr(r, "path", None) or "")).startswith(prefixes)]
    for route in routes:
        if (inner := getattr(route, "original_router", None)) is not None:
            context = getattr(route, "include_context", None)
            prune_routes(inner.routes, prefixes, base + str(getattr(context, "prefix", "") or ""))


def list_chat_models(app: FastAPI) -> None:
    """``/v1/models`` (and ``/models``) list the chat model this server answers as, not every deployment Hayhooks
    holds (``index`` and ``knowledge_bases`` take no chat messages)."""
    from fastapi_openai_compat import create_models_router

    from interfaces.startup import CHAT_DEPLOYMENT

    prune_routes(app.router.routes, MODEL_LIST_PATHS)
    app.include_router(create_models_router(list_models=lambda: [CHAT_DEPLOYMENT], owned_by="hayhooks"))


def offer_only_our_routes(app: FastAPI) -> None:
    """Remove the `BLOCKED_PREFIXES` routes and replace Hayhooks' model list by `list_chat_models`."""
    prune_routes(app.router.routes)
    list_chat_models(app)
