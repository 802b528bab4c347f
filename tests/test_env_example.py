"""Every environment variable the code reads is documented in .env.example."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READ = re.compile(r'(?:os\.environ\.get|setting|from_env_var)\(\s*"([A-Z][A-Z0-9_]+)"')
# a variable read through a named constant (``API_KEY_ENV = "QDRANT_API_KEY"`` … ``Secret.from_env_var(API_KEY_ENV)``)
NAMED = re.compile(r'^[A-Z_]*_ENV\s*=\s*"([A-Z][A-Z0-9_]+)"', re.MULTILINE)
NOT_SETTINGS = {"PYTHONPATH"}


PRODUCT = ("config", "helpers", "llm_access", "document_store", "components", "pipelines", "application",
           "interfaces", "provisioning", "serving")


def documented_names() -> set[str]:
    return set(re.findall(r"^([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(encoding="utf-8"), re.MULTILINE))


def read_names(text: str) -> set[str]:
    """The environment variables a module's source reads, directly or through a named constant."""
    return set(READ.findall(text)) | set(NAMED.findall(text))


def test_every_variable_read_by_the_code_is_in_env_example():
    read = {name for folder in PRODUCT for path in (ROOT / folder).rglob("*.py")
            for name in read_names(path.read_text(encoding="utf-8"))}
    assert len(read) > 20
    assert read - NOT_SETTINGS - documented_names() == set()


def test_a_variable_read_through_a_constant_is_found():
    """The drift that hid QDRANT_API_KEY: the name is only in a constant that `Secret.from_env_var` reads."""
    source = 'API_KEY_ENV = "SOME_SERVER_KEY"\napi_key = Secret.from_env_var(API_KEY_ENV, strict=False)\n'
    assert read_names(source) == {"SOME_SERVER_KEY"}
    assert "SOME_SERVER_KEY" not in documented_names()


def test_every_settings_field_is_in_env_example():
    """By the fields themselves, not by reading the source: a setting declared any way is documented."""
    from dataclasses import fields

    from config.settings import Settings

    declared = {f.metadata["env"] for f in fields(Settings) if f.metadata.get("env")}
    assert len(declared) > 40
    assert declared - documented_names() == set()


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


# Where the product reads the environment outside `config.settings`, and why (issue 65: settings read once).
ENV_READS_OUTSIDE_SETTINGS = {
    # a secret's presence decides which LLM answers; its value goes through Secret.from_env_var
    "llm_access/factory.py": {"DEEPSEEK_API_KEY", "LOCAL_KEY_ENV"},
    "llm_access/server_child.py": {"key"},  # the embedded server's child drops the API keys it must not see
    # a component's own fallback, as the openai client's OPENAI_BASE_URL: a YAML pipeline loaded anywhere keeps it
    "components/websearch/serpapi_web_search.py": {"SERPAPI_BASE_URL"},
    "interfaces/serve_command.py": {"PYTHONPATH"},  # the server's environment is this one's, plus the repository
}
ENV_READ = re.compile(r'os\.(?:environ\.get|getenv)\(\s*"?([A-Za-z_][A-Za-z0-9_]*)"?'
                      r'|os\.environ\[\s*"?([A-Za-z_][A-Za-z0-9_]*)')


def env_reads(text: str) -> set[str]:
    return {a or b for a, b in ENV_READ.findall(text)}


def test_the_environment_is_read_in_settings_only():
    found = {}
    for folder in PRODUCT:
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("config/") or not (names := env_reads(path.read_text(encoding="utf-8"))):
                continue
            found[relative] = names
    assert found == ENV_READS_OUTSIDE_SETTINGS


def test_a_planted_environment_read_is_found():
    assert env_reads('port = int(os.environ.get("API_PORT", "1416"))\nx = os.environ["LLM_COOLDOWN"]') == {
        "API_PORT", "LLM_COOLDOWN"}
