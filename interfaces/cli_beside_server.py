"""The command line beside a running `serve` of this project: ``ask``, ``search``, ``stats`` and ``feedback`` that
find the embedded knowledge base in use by it are sent to it (`ServerClient`) and print what they print without it;
``index`` becomes an index job of the server (one writer: it never opens a store the server owns); the rest get one
line saying how to do it beside the server.

Usage::

    try:
        refuse_beside_server(args, settings)   # index / reweight: before any knowledge base is opened
        run(args, settings)
    except StoreLockedError as error:
        beside_server(args, settings, error)   # forwards, or raises the "in use" error with what to do
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

from application.feedback import load_last_answer
from application.index_jobs import DONE, ENDED
from application.validation import validate_query
from config.settings import Settings
from document_store.errors import StoreLockedError
from document_store.text_files import load_text_file
from helpers.records.result import RAGResult
from interfaces.cli_output import (
    keep_last_answer,
    print_feedback,
    print_search,
    print_stats,
    print_warnings,
    show_answer,
)
from interfaces.server_client import ServerClient, ServerRequestError
from interfaces.server_record import running_server

JOB_POLL_SECONDS = 1.0


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


def index_server(args: argparse.Namespace, client: ServerClient) -> None:
    """`index`, as an index job of the running server: the files uploaded (checked here first), its progress
    followed, its results printed as `index` prints them. Older versions (``--versions``) are indexed only without
    a server."""
    if args.versions:
        raise ValueError("the running server indexes the laws in force only: stop it to index with --versions")
    settings = Settings.from_env()
    laws = args.laws if args.laws is not None else ([] if args.files else list(settings.default_laws))
    files = []
    for path in args.files or []:
        load_text_file(path)  # a missing, unreadable or non-text file is a one-line error before any upload
        files.append(("files", (Path(path).name, Path(path).read_bytes())))
    form = {"knowledge_base": args.collection or settings.collection, "laws": laws}
    job = client.request("POST", "/index/run", data=form, files=files or None)["result"]
    print(f"(index job {job['job_id']} of the server)", file=sys.stderr)
    while job.get("status") not in ENDED:
        time.sleep(JOB_POLL_SECONDS)
        job = client.request("GET", f"/index/jobs/{job['job_id']}")
        if not args.quiet and (progress := job.get("progress") or {}).get("total"):
            print(f"\rindexing {progress['done']}/{progress['total']}", end="", file=sys.stderr, flush=True)
    if not args.quiet:
        print(file=sys.stderr)
    if job["status"] != DONE:
        raise ServerRequestError(f"the server's index job {job['job_id']} {job['status']}: {job.get('error')}")
    for result in job["results"]:
        print(f"{result['action']:9s} {result['count']:6d}  {result['source']}")
    print(f"indexed into '{job['knowledge_base']}' by the server")


FORWARDED: dict[str, Callable[[argparse.Namespace, ServerClient], None]] = {
    "ask": ask_server, "search": search_server, "stats": stats_server, "feedback": feedback_server,
    "index": index_server,
}
WRITERS = ("index", "reweight")  # commands that write to the store: never beside a server that owns it


def refuse_beside_server(args: argparse.Namespace, settings: Settings) -> None:
    """A command that writes to the embedded store raises `StoreLockedError` when this project's server owns it,
    before opening any knowledge base: the server may hold only some of them open, and a knowledge base it has not
    opened yet would otherwise get a second writer."""
    if args.command in WRITERS and not settings.qdrant_url and running_server(settings.qdrant_path) is not None:
        raise StoreLockedError(f"the knowledge bases at {settings.qdrant_path} are served by `serve`")


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
    raise StoreLockedError(f"{served}: stop it to run `{args.command}`" + (
        " with --pipeline (without it, `ask` asks the server)" if getattr(args, "pipeline", None) else ""))
