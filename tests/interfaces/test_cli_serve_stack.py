"""``serve`` says in one line which stack it answers with, and how to build the rest (issue 50, item 2)."""

import json
from pathlib import Path

import pytest

from config.settings import ADAPTED_EMBEDDER, EVALUATOR, Settings
from interfaces.cli import build_parser, stack_line


def install_evaluator(models: Path, scope: str, trained: Path) -> None:
    """``trained``'s evaluator.json, recorded as of ``scope``."""
    data = json.loads((trained / "evaluator.json").read_text(encoding="utf-8"))
    (models / EVALUATOR).mkdir(parents=True, exist_ok=True)
    (models / EVALUATOR / "evaluator.json").write_text(json.dumps({**data, "scope": scope}), encoding="utf-8")


def test_serve_names_the_quick_stack_and_how_to_build_the_full_one(tmp_path, monkeypatch, tiny_evaluator):
    monkeypatch.setenv("MODELS_DIR", str(tmp_path / "models"))
    for name in ("EMBEDDING_MODEL", "EVALUATOR_MODEL", "JUDGE", "TRAINED_MODELS"):
        monkeypatch.delenv(name, raising=False)
    install_evaluator(tmp_path / "models", "quick", tiny_evaluator)
    line = stack_line(Settings.from_env())
    assert line.startswith("answering with the quick stack: embedder multilingual-e5-small; judge: the quick")
    assert "`make run` or `python -m pipelines setup`, then restart the server" in line

    (tmp_path / "models" / ADAPTED_EMBEDDER).mkdir()  # what `setup` installs: a restart picks it up
    install_evaluator(tmp_path / "models", "full", tiny_evaluator)
    line = stack_line(Settings.from_env())
    assert line.startswith(f"answering with the full stack: embedder {ADAPTED_EMBEDDER}; judge: the full")
    assert "make run" not in line and "\n" not in line


def test_serve_prepares_by_default_and_can_serve_as_is():
    parser = build_parser()
    assert parser.parse_args(["serve"]).prepare is True
    assert parser.parse_args(["serve", "--no-prepare"]).prepare is False


class Exec(Exception):
    pass


def test_serve_has_its_server_run_prepare_while_it_listens_and_no_prepare_serves_at_once(monkeypatch, capsys):
    """Issue 50: `serve` execs the server at once with `prepare` as the command it runs before its deployments load
    (its imports and the LLM's start meanwhile); `prepare` then says which stack, `--no-prepare` says it itself."""
    import os
    import shlex
    import sys

    from interfaces.cli import main

    def execve(path, argv, env):
        raise Exec(argv)

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.chdir(os.getcwd())  # cmd_serve changes to the project's folder
    with pytest.raises(Exec) as served:
        main(["serve", "--port", "1499"])
    argv = served.value.args[0]
    assert argv[1:3] == ["-m", "interfaces.server_app"] and argv[argv.index("--port") + 1] == "1499"
    prepare = shlex.split(argv[argv.index("--prepare-command") + 1])
    assert prepare == [sys.executable, "-m", "pipelines", "prepare"]
    assert "answering with" not in capsys.readouterr().out  # `prepare` says it once it has built the stack
    assert build_parser().parse_args(["prepare"]).command == "prepare"

    with pytest.raises(Exec) as served:
        main(["serve", "--no-prepare"])
    assert "--prepare-command" not in served.value.args[0]
    assert capsys.readouterr().out.startswith("answering with the ")


def test_serve_execs_the_server_before_the_command_lines_libraries_load(tmp_path):
    """Issue 50: `python -m pipelines serve` used to import Haystack, torch and qdrant-client (about 3 s) only to
    exec the server, which with its `prepare` imports them again; the console script now execs it first."""
    import os
    import shlex
    import subprocess
    import sys

    probe = ("import json, os, sys\n"
             "def execve(path, argv, env):\n"
             "    print(json.dumps({'argv': argv, 'loaded': [m for m in ('haystack', 'torch', 'qdrant_client', "
             "'interfaces.cli') if m in sys.modules]}))\n"
             "    sys.exit(0)\n"
             "os.execve = execve\n"
             "from interfaces.launch import main\n"
             "main(sys.argv[1:])\n")
    env = {k: v for k, v in os.environ.items() if k not in ("API_PORT", "API_HOST")}

    def launched(*args: str, env_file: str = "") -> dict:
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True,
                             env=env | {"ENV_FILE": env_file}, timeout=120, check=True).stdout
        return json.loads(out.strip().splitlines()[-1])

    quick = launched("serve", "--port", "1498")
    assert quick["loaded"] == []
    assert quick["argv"][1:] == ["-m", "interfaces.server_app", "--host", "127.0.0.1", "--port", "1498",
                                 "--prepare-command", shlex.join([sys.executable, "-m", "pipelines", "prepare"])]
    full = launched("serve", "--no-prepare")  # says which stack it serves: the full command line
    assert "interfaces.cli" in full["loaded"] and "--prepare-command" not in full["argv"]
    (tmp_path / ".env").write_text("API_PORT=1497\n", encoding="utf-8")  # .env is read before the defaults
    assert launched("serve", env_file=str(tmp_path / ".env"))["argv"][6] == "1497"
