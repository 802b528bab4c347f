"""The docs cannot drift silently (issue 49, item 6): every CLI command and option they show exists, and every
repository path they name or link is there. (Every setting `.env.example` lists is checked by test_env_example.py.)"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "benchmarks" / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
# folders a command writes into (git-ignored): the docs may name a file there that a fresh clone does not have yet
OUTPUTS = ("data/", "models/", "benchmarks/runs/", "benchmarks/cache/", "test-artifacts/", ".venv/")
COMMAND = re.compile(r"python -m pipelines ([a-z][a-z-]*)([^\n`]*)")
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
QUOTED_PATH = re.compile(r"`((?:[\w.-]+/)+[\w.-]+\.(?:py|md|ipynb|ya?ml|jsonl|json|txt|toml|sh|html|js|css))`")


def unknown_options(text: str) -> list[str]:
    """``python -m pipelines <command> --option`` uses in ``text`` that the CLI's parser does not know."""
    from interfaces.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if a.dest == "command").choices  # argparse keeps them only here
    problems = []
    for command, rest in COMMAND.findall(text):
        if command not in commands:
            problems.append(f"unknown command: {command}")
            continue
        known = {s for action in commands[command]._actions for s in action.option_strings}
        rest = rest.split("  #")[0]  # a comment after the command
        problems += [f"{command}: unknown option {o}" for o in re.findall(r"(?<![\w-])--[a-z][a-z-]*", rest)
                     if o not in known]
    return problems


def missing_paths(text: str, folder: Path) -> list[str]:
    """Links and quoted repository paths in ``text`` (a document in ``folder``) that do not exist."""
    problems = []
    for target in LINK.findall(text):
        if "://" not in target and not target.startswith("mailto:") and not (folder / target).exists():
            problems.append(f"link {target}")
    for path in QUOTED_PATH.findall(text):
        if not path.startswith(OUTPUTS) and not (ROOT / path).exists() and not (folder / path).exists():
            problems.append(f"path {path}")
    return problems


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_command_and_option_the_docs_show_exists(doc):
    assert unknown_options(doc.read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_the_docs_name_exists(doc):
    assert missing_paths(doc.read_text(encoding="utf-8"), doc.parent) == []


def test_the_checks_catch_a_broken_command_option_and_path():
    """What the two tests above would say of a README that drifted."""
    drifted = ("```bash\npython -m pipelines index --laws 民法典 --fast   # --fast was never an option\n"
               "python -m pipelines query \"x\"\npython -m pipelines ask \"x\" [--mode agentic|rag] [--json]\n```\n"
               "See [the design](docs/missing.md) and `pipelines/retrieval.py`, `pipelines/gone.py`, "
               "`data/corpus_qdrant/x.json`.")
    assert unknown_options(drifted) == ["index: unknown option --fast", "unknown command: query"]
    assert missing_paths(drifted, ROOT) == ["link docs/missing.md", "path pipelines/gone.py"]
