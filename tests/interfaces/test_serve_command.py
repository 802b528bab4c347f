"""`interfaces.serve_command`: the server's command line, environment and exec. What `serve` execs through the CLI
and the console script is in tests/interfaces/test_cli_serve_stack.py."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

import pytest

from interfaces.serve_command import ROOT, add_serve_arguments, exec_server, prepare_command, serve_command


class Exec(Exception):
    """What the stand-in for ``os.execve`` raises: this process would have become the server here."""


def parser() -> argparse.ArgumentParser:
    made = argparse.ArgumentParser()
    add_serve_arguments(made)
    return made


def test_host_and_port_default_to_api_host_and_api_port(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("API_HOST", raising=False)
    monkeypatch.delenv("API_PORT", raising=False)
    assert vars(parser().parse_args([])) == {"host": "127.0.0.1", "port": 1416}
    monkeypatch.setenv("API_HOST", "0.0.0.0")
    monkeypatch.setenv("API_PORT", "8080")
    assert vars(parser().parse_args([])) == {"host": "0.0.0.0", "port": 8080}
    assert vars(parser().parse_args(["--host", "::1", "--port", "9000"])) == {"host": "::1", "port": 9000}


def test_a_port_that_is_no_number_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        parser().parse_args(["--port", "http"])
    assert raised.value.code == 2 and "--port: invalid int value: 'http'" in capsys.readouterr().err


def test_the_server_command_runs_the_server_module_with_this_interpreter() -> None:
    command, _ = serve_command("0.0.0.0", 8000)
    assert command == [sys.executable, "-m", "interfaces.server_app", "--host", "0.0.0.0", "--port", "8000"]


def test_the_prepare_command_is_passed_as_one_argument_that_splits_back() -> None:
    prepare = [*prepare_command(), "--note", "a b 'c'"]
    command, _ = serve_command("127.0.0.1", 1416, prepare)
    assert command[-2] == "--prepare-command" and shlex.split(command[-1]) == prepare
    assert prepare_command() == [sys.executable, "-m", "pipelines", "prepare"]


def test_the_project_comes_first_on_the_servers_pythonpath(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/opt/extra")
    monkeypatch.setenv("SOME_SETTING", "kept")
    _, env = serve_command("127.0.0.1", 1416)
    assert env["PYTHONPATH"] == f"{ROOT}{os.pathsep}/opt/extra" and env["SOME_SETTING"] == "kept"
    monkeypatch.delenv("PYTHONPATH")
    assert serve_command("127.0.0.1", 1416)[1]["PYTHONPATH"] == str(ROOT)
    assert (ROOT / "interfaces" / "server_app.py").is_file()


def test_exec_server_says_where_it_serves_and_becomes_the_server_from_the_project_folder(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    calls: list[tuple[str, list[str], dict[str, str], Path]] = []

    def execve(path: str, argv: list[str], env: dict[str, str]) -> None:
        calls.append((path, argv, env, Path.cwd()))
        raise Exec

    monkeypatch.setattr(os, "execve", execve)
    monkeypatch.chdir(tmp_path)  # restored afterwards
    with pytest.raises(Exec):
        exec_server("127.0.0.1", 1499)
    path, argv, env, cwd = calls[0]
    assert (path, argv) == (sys.executable, serve_command("127.0.0.1", 1499)[0]) and cwd == ROOT
    assert env["PYTHONPATH"].split(os.pathsep)[0] == str(ROOT)
    said = capsys.readouterr().out
    assert said.startswith("serving on http://127.0.0.1:1499  (web UI: /ui/, OpenAI-compatible: "
                           "/v1/chat/completions, model agentic_rag)")
    assert "Preparing" not in said
    with pytest.raises(Exec):
        exec_server("127.0.0.1", 1499, prepare_command())
    assert "; /status says 'Preparing' until what a first answer needs is built" in capsys.readouterr().out
    assert "--prepare-command" in calls[1][1]
