"""Every environment variable the code reads is documented in .env.example."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READ = re.compile(r'(?:os\.environ\.get|setting|from_env_var)\(\s*"([A-Z][A-Z0-9_]+)"')
NOT_SETTINGS = {"PYTHONPATH"}


def test_every_variable_read_by_the_code_is_in_env_example():
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", text, re.MULTILINE))
    read = {name for folder in ("config", "helpers", "llm_access", "document_store", "components", "pipelines",
                                              "application", "interfaces", "provisioning", "serving")
            for path in (ROOT / folder).rglob("*.py") for name in READ.findall(path.read_text(encoding="utf-8"))}
    assert len(read) > 20
    assert read - NOT_SETTINGS - documented == set()


def test_the_defaults_in_env_example_are_the_code_defaults(monkeypatch):
    """Setting every variable to the value .env.example documents changes no setting."""
    from config.settings import Settings

    documented = {}
    for line in (ROOT / ".env.example").read_text(encoding="utf-8").splitlines():
        if match := re.match(r'^([A-Z][A-Z0-9_]+)=("[^"]*"|\S*)', line):
            documented[match.group(1)] = match.group(2).strip('"')
    for name in documented:
        monkeypatch.delenv(name, raising=False)
    defaults = Settings.from_env()
    for name, value in documented.items():
        monkeypatch.setenv(name, value)
    assert Settings.from_env() == defaults
    assert len(documented) > 40


def test_embedding_prefixes_keep_their_spaces_and_may_be_set_empty(monkeypatch):
    """A bug the defaults test found: the value .env.example documents, "query: ", was read as "query:" (values
    were stripped), and setting both empty, as it says to for models without prefixes, kept the e5 prefixes."""
    from config.settings import Settings

    monkeypatch.setenv("EMBEDDING_QUERY_PREFIX", "query: ")
    monkeypatch.setenv("EMBEDDING_PASSAGE_PREFIX", "")
    settings = Settings.from_env()
    assert (settings.query_prefix, settings.passage_prefix) == ("query: ", "")
