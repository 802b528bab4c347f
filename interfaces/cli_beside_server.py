"""The command line beside a running `serve` of this project: ``ask``, ``search``, ``stats`` and ``feedback`` that
find the embedded knowledge base in use by it are sent to it (`ServerClient`) and print what they print without it;
``index`` and the rest get one line saying how to do it beside the server.

Usage::

    try:
        run(args, settings)
    except StoreLockedError as error:
        beside_server(args, settings, error)   # forwards, or raises the "in use" error with what to do
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from application.feedback import load_last_answer
from application.validation import validate_query
from config.settings import Settings
from document_store.errors import StoreLockedError
from helpers.records.result import RAGResult
from interfaces.cli_output import (
    keep_last_answer,
    print_feedback,
    print_search,
    print_stats,
    print_warnings,
    show_answer,
)
from interfaces.server_client import ServerClient
from interfaces.server_record import running_server


def ask_server(args: argparse.Namespace, client: ServerClient) -> None:
    """`ask`, answered by the running server (``POST /agentic_rag/run``)."""
    payload = {"query": validate_query(args.query), "mode": args.mode, "knowledge_base": args.collection,
               "as_of": args.as_of}
    result = RAGResult(**client.run("agentic_rag", payload))
    keep_last_answer(Settings.from_env(), result, payload["query"])
    show_answer(result, args.json)


def search_server(args: argparse.Namespace, client: ServerClient) -> None:
    """`search`, by the running server's retrieve mode (its hybrid retrieval pipeline, ranked the same way)."""
    if args.mode != "hybrid":
        raise ValueError(f"the running server searches hybrid only; use --mode hybrid, or stop it to search "
                         f"--mode {args.mode}")
    query = validate_query(args.query)
    if not 1 <= args.top_k <= 100:
        raise ValueError(f"--top-k must be between 1 and 100, got {args.top_k}")
    result = client.run("agentic_rag", {"query": query, "mode": "retrieve", "top_k": args.top_k,
                                        "knowledge_base": args.collection, "as_of": args.as_of})
    print_warnings(result["warnings"])
    print_search(query, args.mode, result["documents"], result["trace"]["total_seconds"])


def stats_server(args: argparse.Namespace, client: ServerClient) -> None:
    """`stats`, from the running server (``POST /knowledge_bases/run``, action ``stats``)."""
    print_stats(client.run("knowledge_bases", {"action": "stats", "name": args.collection}))


def feedback_server(args: argparse.Namespace, client: ServerClient) -> None:
    """`feedback` with an article, resolved and recorded by the running server (``POST /feedback``) that gave
    the answer."""
    answered = load_last_answer(Settings.from_env().data_dir)
    record = client.post("/feedback", {"answer_id": answered.answer_id, "verdict": args.verdict,
                                       "article": args.article})
    print_feedback(record)


FORWARDED: dict[str, Callable[[argparse.Namespace, ServerClient], None]] = {
    "ask": ask_server, "search": search_server, "stats": stats_server, "feedback": feedback_server,
}


def beside_server(args: argparse.Namespace, settings: Settings, error: StoreLockedError) -> None:
    """A command that found the embedded knowledge base in use. Owned by this project's running `serve`
    (`interfaces.server_record`): ``ask``, ``search`` and ``stats`` are sent to it; any other command gets one line
    that says how to do it beside the server. Owned by anything else: the "in use" error as it was."""
    server = None if settings.qdrant_url else running_server(settings.qdrant_path)
    if server is None:
        raise error
    forward = None if getattr(args, "pipeline", None) else FORWARDED.get(args.command)
    if forward is not None:
        print(f"(the knowledge base is served by `serve` at {server.url}: asking it)", file=sys.stderr)
        forward(args, ServerClient(server.url, api_key=settings.api_key or None))
        return
    served = f"the knowledge base at {settings.qdrant_path} is served by `serve` (pid {server.pid}, {server.url})"
    if args.command == "index":
        laws = " ".join(f"-F laws={law}" for law in args.laws or []) or "-F laws=<law>"
        raise StoreLockedError(f"{served}: index through it with `curl -X POST {server.url}/index/run -F "
                               f"knowledge_base={args.collection or settings.collection} {laws}` (a job; "
                               f"GET {server.url}/index/jobs follows it), or stop the server and run this again")
    raise StoreLockedError(f"{served}: stop it to run `{args.command}`" + (
        " with --pipeline (without it, `ask` asks the server)" if getattr(args, "pipeline", None) else ""))
