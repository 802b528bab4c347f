"""Runs a server module for `EmbeddedLLMServer` and ends it when the process that started it is gone.

A parent killed without running its exit handlers (SIGTERM to a benchmark or a notebook kernel, SIGKILL, an
out-of-memory kill) left the ~2 GB llama.cpp server running as an orphan that kept its port and its memory; a
thread of this wrapper checks once a second whether the parent is still there, and exits the server if not.

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


def main() -> None:
    if len(sys.argv) < 3 or not sys.argv[1].isdigit():
        sys.exit("usage: python -m llm_access.server_child <parent pid> <module> [arguments...]")
    parent, module = int(sys.argv[1]), sys.argv[2]
    sys.argv = [module, *sys.argv[3:]]
    threading.Thread(target=exit_with_parent, args=(parent,), daemon=True, name="parent-watch").start()
    runpy.run_module(module, run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
