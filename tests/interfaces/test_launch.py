"""The console script (`interfaces.launch`): how a command's process ends."""

import subprocess
import sys

PROBE = """
import atexit, gc, sys
atexit.register(lambda: print("at the end, frozen:", gc.get_freeze_count() > 0, flush=True))
from interfaces.launch import main
code = main(sys.argv[1:])
atexit.register(lambda: print("the command's own handler, frozen:", gc.get_freeze_count() > 0, flush=True))
sys.exit(code)
"""


def test_a_command_exits_without_the_final_collection_after_its_own_exit_handlers():
    """The interpreter's final garbage collection walked every object for about a second after `prepare` had done
    its work, and the server waits for prepare's exit before it loads its deployments: the objects are frozen
    (no collection walks them) by the last exit handler, after those the command registered (the LLM's stop)."""
    done = subprocess.run([sys.executable, "-c", PROBE, "laws"], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "中华人民共和国个人信息保护法" in done.stdout  # the command ran
    assert lines[-2:] == ["the command's own handler, frozen: False", "at the end, frozen: True"]


def test_output_cut_short_by_a_closed_pipe_ends_the_command_quietly():
    """``python -m pipelines laws | head -1`` printed a BrokenPipeError traceback."""
    command = subprocess.Popen([sys.executable, "-m", "pipelines", "laws"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
    assert command.stdout is not None and command.stderr is not None
    command.stdout.close()  # what `head` does once it has its lines; here before the command's first line
    stderr = command.stderr.read().decode()
    assert command.wait(timeout=120) == 141, stderr  # 128 + SIGPIPE, as a shell reports a command cut short
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr
