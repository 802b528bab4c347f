"""`llm_access.server_child`, run as `EmbeddedLLMServer` runs it (``python -m llm_access.server_child <pid> <module>
...``) with a small module of the test's own in place of llama.cpp's server. Its exit when its parent is killed is
in serving/test_shutdown.py; the case-blind filter of variables in test_embedded_server.py."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run_child(*arguments: str, pythonpath: Path | None = None, env: dict[str, str] | None = None,
              code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "llm_access.server_child", *arguments]
    paths = [str(REPO)] + ([str(pythonpath)] if pythonpath else [])
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=60, check=False,
                          env={**os.environ, **(env or {}), "PYTHONPATH": os.pathsep.join(paths)})


@pytest.mark.parametrize("arguments", [(), (str(os.getpid()),), ("me", "http.server")])
def test_without_a_parent_pid_and_a_module_it_prints_its_usage(arguments: tuple[str, ...]) -> None:
    result = run_child(*arguments)
    assert result.returncode == 1
    assert result.stderr.strip() == "usage: python -m llm_access.server_child <parent pid> <module> [arguments...]"


def test_the_module_runs_as_main_with_the_arguments_after_it(tmp_path: Path) -> None:
    (tmp_path / "stand_in_server.py").write_text(
        "import json, sys\nif __name__ == '__main__':\n    print(json.dumps(sys.argv))\n    sys.exit(4)\n",
        encoding="utf-8")
    result = run_child(str(os.getpid()), "stand_in_server", "--port", "0", "--model", "m.gguf", pythonpath=tmp_path)
    assert result.returncode == 4, result.stderr  # the server's own exit code
    argv = json.loads(result.stdout)
    assert argv[0].endswith("stand_in_server.py") and argv[1:] == ["--port", "0", "--model", "m.gguf"]


def test_another_module_keeps_the_whole_environment(tmp_path: Path) -> None:
    """Only llama.cpp's server has its settings removed: the wrapper is not a general environment filter."""
    (tmp_path / "show_env.py").write_text("import os\nprint(os.environ.get('API_KEY'), os.environ.get('PORT'))\n",
                                          encoding="utf-8")
    result = run_child(str(os.getpid()), "show_env", pythonpath=tmp_path, env={"API_KEY": "k", "PORT": "1"})
    assert result.stdout.split() == ["k", "1"], result.stderr


def test_every_setting_of_llama_cpps_server_leaves_the_environment_and_nothing_else() -> None:
    """pydantic-settings reads any of its fields from the environment, in any case (``API_KEY`` was read as the
    server's own key: issue 46)."""
    code = ("import json, os\nfrom llm_access.server_child import isolate_llama_cpp_settings\n"
            "isolate_llama_cpp_settings()\nprint(json.dumps(sorted(os.environ)))")
    settings = {"API_KEY": "k", "port": "1", "Model": "x.gguf", "N_CTX": "9", "HOST": "0.0.0.0", "MODELS": "[]",
                "CONFIG_FILE": "c.json", "interrupt_requests": "true"}
    kept = {"DATA_DIR": "/d", "LLM_MODEL": "local", "APIKEY": "k", "PORTS": "1"}
    remaining = set(json.loads(run_child(code=code, env={**settings, **kept}).stdout))
    assert not remaining & set(settings)
    assert set(kept) <= remaining and "PATH" in remaining
