"""Runs a server module for `EmbeddedLLMServer` and ends it when the process that started it is gone.

A parent killed without running its exit handlers (SIGTERM to a benchmark or a notebook kernel, SIGKILL, an
out-of-memory kill) left the ~2 GB llama.cpp server running as an orphan that kept its port and its memory; a
thread of this wrapper checks once a second whether the parent is still there, and exits the server if not.

The llama.cpp server reads every one of its settings from the environment too (pydantic-settings: ``API_KEY``,
``PORT``, ``MODEL`` …, any case). Those variables belong to the process that started it (this project's own server
reads ``API_KEY``): the wrapper removes them, so the child runs with the arguments it was given and nothing else.

Usage (what `EmbeddedLLMServer.start` runs)::

    python -m llm_access.server_child <parent pid> llama_cpp.server --model ... --port ...
"""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time


def exit_with_parent(parent: int, interval: float = 1.0) -> None:
    """Exit this process once its parent ``parent`` has gone (it is then re-parented to another process)."""
    while os.getppid() == parent:
        time.sleep(interval)
    os._exit(0)


def without_server_settings(environ: dict[str, str], setting_names: set[str]) -> dict[str, str]:
    """``environ`` less the variables a pydantic-settings server would read as one of ``setting_names`` (case
    ignored, as pydantic-settings does)."""
    names = {name.lower() for name in setting_names}
    return {key: value for key, value in environ.items() if key.lower() not in names}


def isolate_llama_cpp_settings() -> None:
    """Remove from this process's environment every variable that llama.cpp's server would take as a setting."""
    from llama_cpp.server.settings import ConfigFileSettings, Settings

    names = set(Settings.model_fields) | set(ConfigFileSettings.model_fields) | {"config_file"}
    kept = without_server_settings(dict(os.environ), names)
    for key in set(os.environ) - set(kept):
        del os.environ[key]


def main() -> None:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit("usage: python -m llm_access.server_child <parent pid> <module> [arguments...]")
    parent, module = int(sys.argv[1]), sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    if module == "llama_cpp.server":
        isolate_llama_cpp_settings()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
