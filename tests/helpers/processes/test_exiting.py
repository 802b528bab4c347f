"""`helpers.processes.exiting.skip_final_collection_at_exit`, in a real short-lived Python process."""

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=30,
                          check=False)


def test_objects_are_frozen_at_exit_after_the_handlers_registered_later() -> None:
    """Exit handlers run in reverse order: one registered later (an embedded LLM's stop) runs first, with nothing
    frozen yet; one registered earlier runs after the freeze, which has moved every object out of the collector's
    reach."""
    code = """
import atexit, gc
from helpers.processes.exiting import skip_final_collection_at_exit
atexit.register(lambda: print("earlier handler sees frozen:", gc.get_freeze_count() > 0, flush=True))
skip_final_collection_at_exit()
atexit.register(lambda: print("later handler sees frozen:", gc.get_freeze_count() > 0, flush=True))
kept = [[i] for i in range(1000)]
print("before exit frozen:", gc.get_freeze_count(), flush=True)
"""
    result = run(code)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["before exit frozen: 0", "later handler sees frozen: False",
                                          "earlier handler sees frozen: True"]


def test_a_process_that_never_asks_is_not_frozen() -> None:
    code = """
import atexit, gc
import helpers.processes.exiting
atexit.register(lambda: print(gc.get_freeze_count(), flush=True))
"""
    result = run(code)
    assert result.returncode == 0 and result.stdout.strip() == "0", result.stderr  # importing it changes nothing
