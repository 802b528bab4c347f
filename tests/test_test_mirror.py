"""Every product module has a test file of its own (tests/README.md: the tests of ``a/b/c.py`` are in
``tests/a/b/test_c.py``, ``test_c_<topic>.py``, or ``test_b_c.py`` where two modules share a name), so a maintainer
finds a module's tests without searching."""

import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PRODUCT = ("application", "components", "config", "document_store", "harness", "helpers", "interfaces",
           "llm_access", "pipelines", "provisioning", "serving")
# modules with no behaviour of their own to test (each with the reason)
NO_FILE = {
    "helpers/records/ranking.py": "a three-field dataclass; the RRF joiner's and the retrievers' tests build it",
}


def untested(root: Path) -> list[str]:
    """The product modules under ``root`` (tracked by git) that have no test file of their own."""
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.py"], cwd=root,
                             capture_output=True, text=True, check=True).stdout.split()
    missing = []
    for name in tracked:
        path = Path(name)
        if path.parts[0] not in PRODUCT or path.name in ("__init__.py", "__main__.py") or name in NO_FILE:
            continue
        folder = root / "tests" / path.parent
        names = (f"test_{path.stem}.py", f"test_{path.parent.name}_{path.stem}.py")
        if not any((folder / n).exists() for n in names) and not any(folder.glob(f"test_{path.stem}_*.py")):
            missing.append(name)
    return missing


def test_every_product_module_has_a_test_file_of_its_own() -> None:
    assert untested(ROOT) == []


def test_a_new_module_without_tests_is_found(tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    (tmp_path / "helpers").mkdir()
    (tmp_path / "helpers" / "tested.py").write_text("X = 1\n")
    (tmp_path / "helpers" / "untested.py").write_text("Y = 2\n")
    (tmp_path / "helpers" / "__init__.py").write_text("")
    (tmp_path / "tests" / "helpers").mkdir(parents=True)
    (tmp_path / "tests" / "helpers" / "test_tested_topic.py").write_text("")
    assert untested(tmp_path) == ["helpers/untested.py"]


def test_the_modules_without_a_file_still_exist() -> None:
    assert [name for name in NO_FILE if not (ROOT / name).is_file()] == []
