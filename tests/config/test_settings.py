"""A `.env` file configures the system as `.env.example` promises; the environment wins over it (issue 50)."""

import os
from pathlib import Path

import pytest
from haystack.dataclasses import ChatMessage

from config.settings import Settings
from harness.openai_server import ScriptedOpenAIServer
from harness.serpapi_server import ScriptedSerpAPIServer

FILE_KEYS = ("DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL", "SERPAPI_API_KEY", "SERPAPI_BASE_URL", "RERANKER", "MAX_ROUNDS")


@pytest.fixture(autouse=True)
def clean_environment():
    """`load_env_file` writes into os.environ: put it back as it was, and start without the file's keys."""
    saved = dict(os.environ)
    for name in FILE_KEYS:
        os.environ.pop(name, None)
    yield
    os.environ.clear()
    os.environ.update(saved)


def write_env(folder: Path, text: str) -> Path:
    path = folder / ".env"
    path.write_text(text, encoding="utf-8")
    return path


def test_keys_in_the_env_file_reach_the_llm_factory_and_the_web_search(tmp_path):
    from components.websearch.serpapi_web_search import SerpAPIWebSearch
    from llm_access.factory import make_chat_generator, resolve_endpoint

    with ScriptedOpenAIServer(default="你好") as llm, ScriptedSerpAPIServer(
            results=[{"title": "个人信息保护法", "link": "https://example.cn/pipl", "snippet": "第十三条"}],
            valid_key="serp-from-file") as serp:
        os.environ["ENV_FILE"] = str(write_env(tmp_path, (
            f"DEEPSEEK_API_KEY=sk-from-file\nDEEPSEEK_BASE_URL={llm.base_url}   # a comment after the value\n"
            f"SERPAPI_API_KEY=serp-from-file\nSERPAPI_BASE_URL={serp.base_url}\n")))
        settings = Settings.from_env()
        assert resolve_endpoint(settings).kind == "deepseek"
        generator = make_chat_generator(settings)
        assert generator.run(messages=[ChatMessage.from_user("你好吗")])["replies"][0].text == "你好"
        assert len(llm.requests) == 1  # DeepSeek's URL came from the file too
        web = SerpAPIWebSearch().run(query="个人信息 同意")  # its key: the default Secret, read from the env
    assert web["status"] == "ok", web["message"]
    assert serp.requests[0]["api_key"] == "serp-from-file"


def test_the_environment_wins_and_an_empty_env_file_setting_reads_none(tmp_path):
    os.environ["ENV_FILE"] = str(write_env(tmp_path, "RERANKER=llm\nMAX_ROUNDS=2\n"))
    os.environ["RERANKER"] = "none"
    settings = Settings.from_env()
    assert (settings.reranker, settings.max_rounds) == ("none", 2)

    os.environ.pop("MAX_ROUNDS")
    os.environ["ENV_FILE"] = ""
    assert Settings.from_env().max_rounds == Settings().max_rounds == 3


def test_the_default_is_the_nearest_env_file_from_the_working_directory_up(tmp_path, monkeypatch):
    write_env(tmp_path, "MAX_ROUNDS=1\n")
    (tmp_path / "notebooks").mkdir()
    monkeypatch.chdir(tmp_path / "notebooks")  # a notebook runs in its own folder
    os.environ.pop("ENV_FILE")
    assert Settings.from_env().max_rounds == 1

    os.environ.pop("MAX_ROUNDS")
    os.environ["ENV_FILE"] = str(tmp_path / "missing.env")  # no file: the environment alone, as before
    assert Settings.from_env().max_rounds == 3


def test_the_servers_settings_are_read_once_here_and_the_key_stays_out_of_the_repr(monkeypatch):
    """Issue 65: API_KEY, MAX_BODY_BYTES and CORS_ALLOW_ORIGINS were read from os.environ by the server app."""
    monkeypatch.setenv("API_KEY", "sk-very-secret")
    monkeypatch.setenv("MAX_BODY_BYTES", "1024")
    monkeypatch.setenv("CORS_ALLOW_ORIGINS", "http://a.example, http://b.example")
    settings = Settings.from_env()
    assert (settings.api_key, settings.max_body_bytes) == ("sk-very-secret", 1024)
    assert settings.cors_allow_origins == ("http://a.example", "http://b.example")
    assert "sk-very-secret" not in repr(settings)
    monkeypatch.setenv("MAX_BODY_BYTES", "0")
    with pytest.raises(ValueError, match="MAX_BODY_BYTES must be >= 1, got 0"):
        Settings.from_env()


def test_one_setting_is_read_without_the_others(monkeypatch):
    """`serve --port`'s default: a bad unrelated setting is reported by the command, not while its parser is
    built (issue 65: the CLI failed with a traceback when API_PORT's default came from the whole Settings)."""
    monkeypatch.setenv("ENV_FILE", "")
    monkeypatch.setenv("API_PORT", "1497")
    monkeypatch.setenv("REWRITE_FIRST_ROUND", "maybe")
    assert Settings.value("api_port") == 1497
    monkeypatch.delenv("API_PORT")
    assert Settings.value("api_port") == 1416
    with pytest.raises(ValueError, match="REWRITE_FIRST_ROUND must be true or false"):
        Settings.value("rewrite_first_round")
