"""The layer contract of pyproject.toml ([tool.importlinter]) holds, and it does catch an upward import."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(LINT_IMPORTS), "--no-cache"], check=False, cwd=root, capture_output=True, text=True,
                          timeout=120)


def test_the_product_layers_only_import_downward() -> None:
    result = lint_imports(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout
    assert "ignored import" not in result.stdout  # no contract has an exemption (issue 49)


def test_an_upward_import_breaks_the_contract(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", "data", "models", ".git", "test-artifacts",
                                                              "*.jsonl", "node_modules", "__pycache__"))
    # a component reaching up into the application, inside a function as the old LLM plumbing did
    with open(copy / "components" / "retrievers" / "dense_retriever.py", "a", encoding="utf-8") as handle:
        handle.write("\n\ndef _upward():\n    from application.rag import AgenticRAG  # noqa: F401\n")
    result = lint_imports(copy)
    assert result.returncode != 0
    assert "components.retrievers.dense_retriever -> application.rag" in result.stdout


def test_an_interface_importing_the_model_tooling_breaks_the_contract(tmp_path: Path) -> None:
    """The command line is product: it reaches setup/train through its entry point, never by an import (not even a
    lazy one, which the contract sees too)."""
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", "data", "models", ".git", "test-artifacts",
                                                              "*.jsonl", "node_modules", "__pycache__"))
    with open(copy / "interfaces" / "cli.py", "a", encoding="utf-8") as handle:
        handle.write("\n\ndef _tooling():\n    from provisioning.phases import Phases  # noqa: F401\n")
    result = lint_imports(copy)
    assert result.returncode != 0
    assert "interfaces.cli -> provisioning.phases" in result.stdout


PACKAGES = ("config", "helpers", "llm_access", "document_store", "components", "pipelines", "application",
            "interfaces", "provisioning", "harness")


CYCLES = """
import grimp, json, sys
graph = grimp.build_graph(*sys.argv[1:], cache_dir=None)
print(json.dumps(sorted({tuple(sorted((module, imported))) for module in graph.modules
                         for imported in graph.find_modules_directly_imported_by(module)
                         if graph.chain_exists(importer=imported, imported=module)})))
"""


def import_cycles(root: Path) -> set[tuple[str, ...]]:
    """Each pair of modules that import each other, directly or through others (imports under TYPE_CHECKING
    count: they are how a cycle hides), found with grimp, import-linter's graph, in a process of its own (this
    one has the modules of ``ROOT`` imported already)."""
    result = subprocess.run([sys.executable, "-c", CYCLES, *PACKAGES], check=True, cwd=root, capture_output=True,
                            text=True, timeout=120, env={"PYTHONPATH": str(root), "PATH": ""})
    return {tuple(pair) for pair in json.loads(result.stdout)}


def test_no_module_imports_itself_back() -> None:
    """Issue 65: the store protocol, the source manifest and the Edge store imported each other, and so did the
    console script and the command line."""
    assert import_cycles(ROOT) == set()


def test_a_planted_cycle_is_found(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    shutil.copytree(ROOT, copy, ignore=shutil.ignore_patterns(".venv", "data", "models", ".git", "test-artifacts",
                                                              "*.jsonl", "node_modules", "__pycache__", "research",
                                                              "benchmarks", "tests", "training_data", "notebooks"))
    with open(copy / "document_store" / "knowledge_base_store.py", "a", encoding="utf-8") as handle:
        handle.write("\n\ndef _back():\n    from document_store.source_manifest import SourceManifest  # noqa: F401\n")
    assert ("document_store.knowledge_base_store", "document_store.source_manifest") in import_cycles(copy)
