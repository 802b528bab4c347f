"""Command line: ``python -m pipelines {index,reweight,search,ask,feedback,stats,laws,export-yaml,serve}``, and the
commands that extensions installed under the ``agentic_rag.cli`` entry point add (`CliExtension`): the model
tooling's ``setup``, ``train`` and ``demo`` (`provisioning.commands`).

Usage::

    python -m pipelines index --laws 个人信息保护法 民法典
    python -m pipelines search "公司收集我的个人信息需要我同意吗" --mode hybrid --top-k 5
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import entry_points
from pathlib import Path

from config.offline import apply_offline_defaults

apply_offline_defaults()  # before anything imports Haystack or Hugging Face

from application.feedback import (
    FEEDBACK_FILE,
    FeedbackLog,
    UnknownAnswerError,
    load_last_answer,
    parse_verdict,
    resolve_article,
)
from application.validation import validate_query
from config.settings import Settings
from document_store.errors import StoreConfigError, StoreLockedError
from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import SourceManifest
from document_store.statute_db import CURRENT, StatuteDB, UnknownLawError
from document_store.text_files import FileLoadError
from helpers.records.contracts import PIPELINE_MODES, Mode, RetrievalPath
from helpers.records.result import RAGResult
from helpers.statutes.versions import parse_as_of, version_mark, with_versions
from interfaces.cli_beside_server import beside_server, refuse_beside_server
from interfaces.cli_output import (
    keep_last_answer,
    print_feedback,
    print_search,
    print_stats,
    print_warnings,
    show_answer,
)
from interfaces.serve_command import EXTENSIONS_GROUP, add_serve_arguments, exec_server
from llm_access.embedded_server import LLMServerError
from pipelines.stores import open_document_store

EXPECTED_ERRORS = (UnknownLawError, FileLoadError, StoreLockedError, StoreConfigError, LLMServerError, ValueError,
                   UnknownAnswerError)

Command = Callable[[argparse.Namespace, Settings], None]


@dataclass(frozen=True)
class CliExtension:
    """Commands a package adds to this command line (by an ``agentic_rag.cli`` entry point naming an instance):
    ``add_parsers`` adds their sub-parsers (and may add options to the product's own), ``commands`` maps a command's
    name to what runs it (a product command's name replaces the product's, e.g. a ``serve`` that prepares first)."""

    add_parsers: Callable[[argparse._SubParsersAction], None]
    commands: Mapping[str, Command] = field(default_factory=dict)


def installed_extensions() -> tuple[CliExtension, ...]:
    """The `CliExtension`s installed packages declare under the ``agentic_rag.cli`` entry point group."""
    found = tuple(point.load() for point in entry_points(group=EXTENSIONS_GROUP))
    for extension in found:
        if not isinstance(extension, CliExtension):
            raise TypeError(f"an {EXTENSIONS_GROUP} entry point must name a CliExtension, got {type(extension)}")
    return found


def cmd_index(args: argparse.Namespace, settings: Settings) -> None:
    from pipelines.indexing import Indexer, file_sources, law_sources

    laws = args.laws if args.laws is not None else ([] if args.files else list(settings.default_laws))
    sources = (law_sources(laws, versions=args.versions) if laws else []) + file_sources(args.files or [])
    store = open_document_store(settings, args.collection)
    try:
        started = time.perf_counter()
        results = Indexer(store, settings).index(sources, progress=not args.quiet)
        for result in results:
            print(f"{result.action:9s} {result.count:6d}  {result.source}")
        print(f"{store.count_documents()} documents in '{store.knowledge_base}' "
              f"({time.perf_counter() - started:.1f} s)")
    finally:
        store.close()


def cmd_reweight(args: argparse.Namespace, settings: Settings) -> None:
    from pipelines.indexing import Indexer

    store = open_document_store(settings, args.collection)
    try:
        started = time.perf_counter()
        results = Indexer(store, settings).reweight(force=args.force, progress=not args.quiet)
        for result in results:
            print(f"{result.action:10s} {result.count:6d}  {result.source}")
        print(f"BM25 weights of {len(results)} source(s) rewritten in '{store.knowledge_base}' "
              f"({time.perf_counter() - started:.1f} s)" if results else
              f"the BM25 weights of '{store.knowledge_base}' are current "
              f"(within BM25_MAX_DRIFT={settings.bm25_max_drift:g})")
    finally:
        store.close()


def _store_warnings(store: KnowledgeBaseStore, settings: Settings) -> list[str]:
    """What is wrong with the knowledge base in ``store`` (interrupted sources, stale weights, …)."""
    from pipelines.knowledge_base_warnings import knowledge_base_warnings

    return knowledge_base_warnings(SourceManifest(store), settings, store.knowledge_base)


def cmd_search(args: argparse.Namespace, settings: Settings) -> None:
    from pipelines.knowledge_base_warnings import as_of_warnings
    from pipelines.retrieval import build_retrieval_pipeline, retrieve

    query = validate_query(args.query)
    if not 1 <= args.top_k <= 100:
        raise ValueError(f"--top-k must be between 1 and 100, got {args.top_k}")
    filters = _as_of_filters(args)
    store = open_document_store(settings, args.collection)
    try:
        if store.count_documents() == 0:
            raise ValueError(f"the knowledge base '{store.knowledge_base}' is empty; "
                             "run `python -m pipelines index` first")
        pipeline = build_retrieval_pipeline(store, settings, mode=args.mode, top_k=args.top_k)
        pipeline.warm_up()
        print_warnings(_store_warnings(store, settings) + as_of_warnings(
            pipeline, query, args.as_of, filters, store.knowledge_base))
        started = time.perf_counter()
        docs = retrieve(pipeline, [query], top_k=args.top_k, filters=filters)
        rows = [{"score": doc.score, "paths": doc.meta.get("retrieval", {}).get("paths", []),
                 "key": doc.meta.get("key"), "version_mark": version_mark(doc.meta), "text": doc.content}
                for doc in docs]
        print_search(query, args.mode, rows, time.perf_counter() - started)
    finally:
        store.close()


def _as_of_filters(args: argparse.Namespace) -> dict | None:
    """``--as-of YYYY-MM-DD`` as the filters that select the statute versions in force that day (None: today's)."""
    return with_versions(None, args.as_of) if parse_as_of(args.as_of) else None


def cmd_ask(args: argparse.Namespace, settings: Settings) -> None:
    from application.rag import AgenticRAG

    query = validate_query(args.query)
    filters = _as_of_filters(args)
    if args.pipeline:
        result = _ask_yaml(Path(args.pipeline), query, filters)
    else:
        rag = AgenticRAG.from_settings(settings, args.collection)
        try:
            if rag.store.count_documents() == 0:
                raise ValueError(f"the knowledge base '{rag.name}' is empty; run `python -m pipelines index` "
                                 "first")
            result = rag.ask(query, mode=args.mode, filters=filters, as_of=args.as_of)
            result.knowledge_base = rag.name
        finally:
            rag.close()
    keep_last_answer(settings, result, query)
    show_answer(result, args.json)


def _ask_yaml(path: Path, query: str, filters: dict | None = None) -> RAGResult:
    from application.rag import answer_with
    from pipelines.yaml_export import load_query_pipeline

    pipeline, mode = load_query_pipeline(path)
    try:
        return answer_with(pipeline, mode, query, filters=filters)
    finally:
        for name in (RetrievalPath.BM25, RetrievalPath.DENSE):
            store = getattr(pipeline.get_component(name.value), "document_store", None)
            if store is not None:
                store.close()


def cmd_feedback(args: argparse.Namespace, settings: Settings) -> None:
    """Feedback on the last answer `ask` gave (👍/👎, the right article), or ``--export`` every feedback as
    ``train --pairs`` input."""
    log = FeedbackLog(settings.data_dir / FEEDBACK_FILE)
    if args.export:
        if args.verdict or args.article:
            raise ValueError("--export writes the feedback given so far; give a verdict or --article without it")
        count = log.export(Path(args.export), args.collection)
        print(f"wrote {count} pair(s) from {log.path} to {args.export} (`train --pairs {args.export}`, or "
              "`train --with-feedback`)")
        return
    answered = load_last_answer(settings.data_dir)
    verdict, key = parse_verdict(args.verdict), None
    if args.article:
        store = open_document_store(settings, answered.knowledge_base)
        try:
            key = resolve_article(store, args.article)
        finally:
            store.close()
    print_feedback(log.add(answered, verdict, key, source="cli"))


def cmd_export_yaml(args: argparse.Namespace, settings: Settings) -> None:
    from pipelines.yaml_export import export_yaml

    for path in export_yaml():
        print(f"wrote {path}")


def stack_line(settings: Settings) -> str:
    """Which stack these settings answer with, in one line, and how to build the rest when it is not the full one."""
    from pipelines.judges import describe_judge, evaluator_scope

    embedder = Path(settings.embedding_model).name
    full = (Path(settings.embedding_model) == Path(settings.adapted_embedding_model)
            and evaluator_scope(settings) == "full")
    line = (f"answering with the {'full' if full else 'quick'} stack: embedder {embedder}; "
            f"judge: {describe_judge(settings)}")
    if full or not settings.trained_models:
        return line
    return (f"{line}. The full stack (adapted embedder, evaluator over every article, ~20 min): `make run` or "
            "`python -m pipelines setup`, then restart the server")


def cmd_serve(args: argparse.Namespace, settings: Settings, prepare: Sequence[str] = ()) -> None:
    """Run the Hayhooks server in the foreground, as this very process (`interfaces.serve_command.exec_server`). With
    ``prepare`` (a command that builds what is missing and then says which stack it built) the server runs it first;
    without, this says which stack it serves."""
    if not prepare:
        print(stack_line(Settings.from_env()), flush=True)  # what the server's own settings will load
    exec_server(args.host, args.port, prepare)


def cmd_stats(args: argparse.Namespace, settings: Settings) -> None:
    from pipelines.knowledge_base_stats import knowledge_base_stats

    store = open_document_store(settings, args.collection)
    try:
        print_stats(knowledge_base_stats(store, settings))
    finally:
        store.close()


def cmd_laws(args: argparse.Namespace, settings: Settings) -> None:
    db = StatuteDB()
    amended = {v.law_name for v in db.versions() if v.in_force and v.status != CURRENT}
    for name, count in db.law_counts().items():
        print(f"{count:6d}  {name}" + ("  (in force as amended since: its amendments are linked)" if name in amended
                                       else ""))
    older = db.older_versions(["all"])
    print(f"and {len(older)} older or repealed versions (`index --laws all --versions` adds them):")
    for version in older:
        print(f"        {version.law_name} {version.version_date} ({version.status})")


def build_parser(extensions: Sequence[CliExtension] | None = None) -> argparse.ArgumentParser:
    """The product's commands and those of ``extensions`` (default: the installed ones, `installed_extensions`)."""
    parser = argparse.ArgumentParser(prog="python -m pipelines", description="Agentic RAG over Chinese statutes")
    sub = parser.add_subparsers(dest="command", required=True)
    index = sub.add_parser("index", help="index laws from the statute database and/or .txt/.md files")
    index.add_argument("--laws", nargs="*", help="law names (short names work; 'all' = every law in force)")
    index.add_argument("--versions", action="store_true",
                       help="also their older versions (searched only with --as-of / as_of)")
    index.add_argument("--files", nargs="*", help=".txt/.md files")
    index.add_argument("--collection", help="knowledge base (Qdrant collection) name")
    index.add_argument("--quiet", action="store_true", help="no progress bar")
    reweight = sub.add_parser("reweight", help="rewrite out-of-date BM25 weights in place (no re-embedding)")
    reweight.add_argument("--collection", help="knowledge base (Qdrant collection) name")
    reweight.add_argument("--force", action="store_true", help="rewrite every source's weights")
    reweight.add_argument("--quiet", action="store_true", help="no progress bar")
    search = sub.add_parser("search", help="retrieve articles for a query")
    search.add_argument("query")
    search.add_argument("--mode", choices=["bm25", "dense", "hybrid"], default="hybrid")
    search.add_argument("--top-k", type=int, default=10)
    search.add_argument("--collection")
    search.add_argument("--as-of", help="YYYY-MM-DD: the statutes in force that day (default: today's)")
    stats = sub.add_parser("stats", help="what the knowledge base holds")
    stats.add_argument("--collection")
    ask = sub.add_parser("ask", help="answer a question with citations (agentic loop or plain RAG)")
    ask.add_argument("query")
    ask.add_argument("--mode", choices=[m.value for m in PIPELINE_MODES], default=Mode.AGENTIC.value)
    ask.add_argument("--json", action="store_true", help="the whole result, trace included, as JSON")
    ask.add_argument("--collection")
    ask.add_argument("--pipeline", help="run a query pipeline YAML instead (e.g. yaml_pipelines/agentic.yaml)")
    ask.add_argument("--as-of", help="YYYY-MM-DD: answer from the statutes in force that day (default: today's)")
    feedback = sub.add_parser("feedback", help="feedback on the last answer (👍/👎, the right article), or "
                              "--export it as training pairs")
    feedback.add_argument("verdict", nargs="?", help="up or down (👍 or 👎)")
    feedback.add_argument("--last", action="store_true", help="on the last answer `ask` gave (the default)")
    feedback.add_argument("--article", help="the article that answers the question, e.g. 劳动合同法第八十二条")
    feedback.add_argument("--export", metavar="FILE", help="write the feedback as `train --pairs` input instead")
    feedback.add_argument("--collection", help="with --export: only feedback on answers from this knowledge base")
    sub.add_parser("laws", help="list the laws of the statute database")
    sub.add_parser("export-yaml", help="regenerate yaml_pipelines/ from the builders")
    serve = sub.add_parser("serve", help="serve the REST and OpenAI-compatible API (Hayhooks)")
    add_serve_arguments(serve)
    for extension in installed_extensions() if extensions is None else extensions:
        extension.add_parsers(sub)
    return parser


COMMANDS: dict[str, Command] = {
    "index": cmd_index, "reweight": cmd_reweight, "search": cmd_search, "stats": cmd_stats, "laws": cmd_laws,
    "ask": cmd_ask, "export-yaml": cmd_export_yaml, "serve": cmd_serve, "feedback": cmd_feedback,
}


def main(argv: list[str] | None = None, extensions: Sequence[CliExtension] | None = None) -> int:
    """Run one command (``argv``, default: the process's arguments) with the product's commands and those of
    ``extensions`` (default: the installed ones); the exit code."""
    extensions = installed_extensions() if extensions is None else extensions
    args = build_parser(extensions).parse_args(argv)
    commands = {**COMMANDS, **{name: run for extension in extensions for name, run in extension.commands.items()}}
    try:
        settings = Settings.from_env()
        try:
            refuse_beside_server(args, settings)
            commands[args.command](args, settings)
        except StoreLockedError as error:
            beside_server(args, settings, error)
    except EXPECTED_ERRORS as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted; re-run the same command to finish", file=sys.stderr)
        return 130
    return 0
