"""The project is an installable package whose every direct dependency is pinned, once."""

import importlib.metadata
import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENT = re.compile(r"^([A-Za-z0-9_.\-]+)(\[[a-z,]+\])?==[0-9][0-9A-Za-z.\-+]*$")


def requirement_lines(name: str) -> list[str]:
    lines = (ROOT / name).read_text(encoding="utf-8").splitlines()
    return [line.split("#")[0].strip() for line in lines if line.split("#")[0].strip() and not line.startswith("-r")]


def test_pyproject_has_a_project_table_reading_the_pinned_requirements():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert project["project"]["name"] and "dependencies" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["dependencies"]["file"] == ["requirements.txt"]


def test_every_direct_dependency_is_pinned():
    for name in ("requirements.txt", "requirements-dev.txt"):
        loose = [line for line in requirement_lines(name) if not REQUIREMENT.match(line)]
        assert loose == [], f"{name}: not pinned with ==: {loose}"


def test_the_installed_package_is_this_checkout():
    """`make` installs the project editable: its metadata names the pinned dependencies."""
    requires = importlib.metadata.requires("agentic-rag-statutes") or []
    assert any(line.startswith("haystack-ai==") for line in requires)
