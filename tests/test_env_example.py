"""Every environment variable the code reads is documented in .env.example."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
READ = re.compile(r'(?:os\.environ\.get|_env(?:_int|_float)?|from_env_var)\(\s*"([A-Z][A-Z0-9_]+)"')
NOT_SETTINGS = {"PYTHONPATH"}


def test_every_variable_read_by_the_code_is_in_env_example():
    text = (ROOT / ".env.example").read_text(encoding="utf-8")
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", text, re.MULTILINE))
    read = {name for folder in ("config", "helpers", "llm_access", "document_store", "components", "pipelines",
                                              "application", "interfaces", "provisioning", "serving")
            for path in (ROOT / folder).rglob("*.py") for name in READ.findall(path.read_text(encoding="utf-8"))}
    assert len(read) > 20
    assert read - NOT_SETTINGS - documented == set()
