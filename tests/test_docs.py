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


# --- environment variables and HTTP routes the docs name (issue 65, item 6) ---------------------------------------

ENV_LIKE = re.compile(r"`([A-Z][A-Z0-9]*_[A-Z0-9_]+)(?:=[^`]*)?`")
ROUTE = re.compile(r"`(?:GET |POST |DELETE |PUT )?(/[a-z_{}/.0-9-]*)`")
PRODUCT = ("config", "helpers", "llm_access", "document_store", "components", "pipelines", "application",
           "interfaces", "provisioning")
ROUTES = """
import json
from interfaces.app_factory import create_server_app

def paths(routes):
    for route in routes:
        if getattr(route, "path", None):
            yield route.path
        if (inner := getattr(route, "original_router", None)) is not None:  # FastAPI's included routers
            yield from paths(inner.routes)

print(json.dumps(list(paths(create_server_app().routes))))
"""


def unknown_variables(text: str, settings: set[str], constants: set[str]) -> list[str]:
    """``NAME`` or ``NAME=value`` in backticks that is neither a setting (`.env.example`) nor a constant of the
    code."""
    return sorted({name for name in ENV_LIKE.findall(text) if name not in settings | constants})


def shape(route: str) -> str:
    return re.sub(r"\{[^}]*\}", "{}", route.rstrip("/") or "/")


def unknown_routes(text: str, served: set[str], removed: tuple[str, ...]) -> list[str]:
    """Routes in backticks that the server does not offer (the ones the docs say were removed aside)."""
    offered = {shape(route) for route in served}
    return sorted({route for route in ROUTE.findall(text)
                   if shape(route) not in offered and not route.startswith(removed)})


@pytest.fixture(scope="module")
def names() -> tuple[set[str], set[str]]:
    settings = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(encoding="utf-8"),
                              re.MULTILINE))
    constants = {name for folder in PRODUCT for path in (ROOT / folder).rglob("*.py")
                 for name in re.findall(r"^([A-Z][A-Z0-9_]+)\s*(?::[^=]+)?=", path.read_text(encoding="utf-8"),
                                        re.MULTILINE)}
    return settings, constants


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> set[str]:
    """The server app's routes (built in a process of its own: it keeps torch out of the process that builds it),
    plus the deployments' ``/{name}/run``, which Hayhooks adds as each one loads."""
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "DATA_DIR": str(tmp_path_factory.mktemp("routes")), "ENV_FILE": ""}
    routes = json.loads(subprocess.run([sys.executable, "-c", ROUTES], check=True, capture_output=True, text=True,
                                       cwd=ROOT, env=env, timeout=120).stdout.strip().splitlines()[-1])
    deployments = [p.name for p in (ROOT / "serving").iterdir() if (p / "pipeline_wrapper.py").exists()]
    return {*routes, *(f"/{name}/run" for name in deployments)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_variable_and_route_the_docs_name_exists(doc, names, served):
    from interfaces.routes import BLOCKED_PREFIXES

    text = doc.read_text(encoding="utf-8")
    assert unknown_variables(text, *names) == []
    assert unknown_routes(text, served, BLOCKED_PREFIXES) == []


def test_the_checks_catch_a_variable_and_a_route_that_drifted(names, served):
    drifted = "Set `LLM_TIMEOUT=60` and `LLM_TIMEOUT_S=60`; `POST /agentic_rag/run`, `GET /index/jobs/{id}`, " \
              "`POST /ask`; `/deploy-yaml` is removed."
    assert unknown_variables(drifted, *names) == ["LLM_TIMEOUT_S"]
    assert unknown_routes(drifted, served, ("/deploy",)) == ["/ask"]
