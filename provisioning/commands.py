"""The commands that build and train models, added to ``python -m pipelines``: ``setup``, ``train``, ``demo``, and
``prepare``: what a first answer needs, which ``serve`` has its server run while it already listens
(``--no-prepare`` skips it).

The product's command line (`interfaces.cli`) imports no tooling: it loads this module's `TOOLING` through the
``agentic_rag.cli`` entry point that pyproject.toml declares, so the import contract "the product does not import
provisioning" holds without exemptions, and a product installed without this package simply lacks these commands.

Usage::

    python -m pipelines setup --no-train
    python -m pipelines train --pairs my_pairs.jsonl
    python -m pipelines demo "公司收集我的个人信息需要我同意吗"
"""

from __future__ import annotations

import argparse

from application.feedback import FEEDBACK_FILE, FeedbackLog
from application.validation import SAMPLE_QUESTION, validate_query
from config.settings import Settings
from interfaces.cli import CliExtension, build_parser, cmd_ask, cmd_index, cmd_serve, stack_line
from interfaces.serve_command import prepare_command
from provisioning.phases import Phases


def cmd_setup(args: argparse.Namespace, settings: Settings) -> None:
    from provisioning.provision import provision

    phases = Phases()
    for line in provision(settings, llm=not args.no_llm, train=not args.no_train, phases=phases):
        print(line)
    print("\n".join(phases.summary()))


def cmd_train(args: argparse.Namespace, settings: Settings) -> None:
    from provisioning.train import train_models

    pairs: str | list | None = args.pairs
    if args.with_feedback:
        pairs = with_feedback(settings, args.pairs, args.collection)
    result = train_models(settings, pairs=pairs, collection=args.collection, progress=not args.quiet)
    how = "reused from cache" if result.reused else "trained"
    if result.embedder:
        print(f"adapted embedder {how}: {result.embedder} (linked at {settings.adapted_embedding_model}; "
              "knowledge bases are re-embedded by the next `index` run)")
    print(f"relevance evaluator {how}: {result.model}")
    print(f"EVALUATOR_MODEL {settings.evaluator_model} -> {result.model}")


def with_feedback(settings: Settings, pairs: str | None, collection: str | None) -> list:
    """The training pairs (``--pairs`` or the default) and the pairs users' feedback on answers from
    ``collection`` (default: the default knowledge base) gives (`FeedbackLog.pairs`)."""
    from provisioning.train import default_pairs
    from provisioning.training_pairs import Pair, load_pairs

    log = FeedbackLog(settings.data_dir / FEEDBACK_FILE)
    given = [Pair(p["query"], tuple(p["gold"]), f"feedback-{i}")
             for i, p in enumerate(log.pairs(collection or settings.collection), start=1)]
    print(f"with {len(given)} pair(s) from feedback ({log.path})")
    return load_pairs(pairs or default_pairs(settings)) + given


def cmd_demo(args: argparse.Namespace, settings: Settings) -> None:
    """The main job: the models, a first answer with the agentic pipeline, then the full trained stack
    (`provisioning.demo`)."""
    from provisioning.demo import run_demo

    # the sub-commands' own parser and defaults, so the demo's calls cannot drift from the CLI
    run_demo(validate_query(args.query), settings, build_parser(extensions=()), cmd_index, cmd_ask)


def cmd_prepare(args: argparse.Namespace, settings: Settings) -> None:
    """Build what a first answer needs (the demo's quick stack, skipping what is there), then say which stack the
    server will answer with."""
    from provisioning.demo import quick_stack

    phases = Phases()
    quick_stack(settings, build_parser(extensions=()), cmd_index, phases)
    print("\n".join(phases.summary()), flush=True)
    print(stack_line(Settings.from_env()), flush=True)  # what the server's deployments will load


def cmd_prepare_and_serve(args: argparse.Namespace, settings: Settings) -> None:
    """``serve``: the server listens at once and runs ``prepare`` before it loads its deployments (its imports and
    the embedded LLM's start meanwhile), unless ``--no-prepare``."""
    cmd_serve(args, settings, prepare=prepare_command() if args.prepare else ())


def add_parsers(sub: argparse._SubParsersAction) -> None:
    """The tooling commands' parsers, and ``serve --no-prepare``."""
    setup = sub.add_parser("setup", help="build the offline models (idempotent)")
    setup.add_argument("--no-llm", action="store_true", help="no LLM")
    setup.add_argument("--no-train", action="store_true", help="do not train the embedder and the relevance evaluator")
    train = sub.add_parser("train", help="train the adapted embedder and the relevance evaluator (default: the "
                                         "bundled STARD pairs)")
    train.add_argument("--pairs", help='JSON lines {"query": ..., "gold": [article keys]} (default: STARD train)')
    train.add_argument("--collection", help="the indexed knowledge base the gold keys name (default: all statutes)")
    train.add_argument("--quiet", action="store_true", help="no progress output")
    train.add_argument("--with-feedback", action="store_true",
                       help="add the pairs that feedback on answers gives (`feedback --export` shows them)")
    sub.add_parser("prepare", help="build what a first answer needs (e5-small, the LLM, a quick evaluator, the default "
                                   "laws indexed), skipping what is there: what `serve` runs first")
    demo = sub.add_parser("demo", help="setup + index the default laws + answer a sample question")
    demo.add_argument("query", nargs="?", default=SAMPLE_QUESTION)
    sub.choices["serve"].add_argument(
        "--no-prepare", dest="prepare", action="store_false",
        help="serve the models and store as they are (default: the server listens at once and first runs "
             "`prepare`, which builds what a first answer needs, skipping what is there)")


TOOLING = CliExtension(add_parsers=add_parsers, commands={
    "setup": cmd_setup, "train": cmd_train, "demo": cmd_demo, "prepare": cmd_prepare, "serve": cmd_prepare_and_serve})
