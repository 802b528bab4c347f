"""`interfaces.torch_blocker`: a serving process that needs no torch cannot import it, and code that looks for it
in ``sys.modules`` finds nothing there. Whether torch is kept out is decided per process, so the imports are checked
in fresh interpreters."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from interfaces.torch_blocker import TorchBlocker, keep_torch_out

PROBE = """
import json, sys
from interfaces.torch_blocker import TorchBlocker, keep_torch_out
kept_out = [keep_torch_out(*pair) for pair in json.loads(sys.argv[1])]
try:
    import torch.nn
    error = None
except ModuleNotFoundError as caught:
    error = [caught.name, str(caught)]
print(json.dumps({"kept_out": kept_out, "error": error, "in_modules": "torch" in sys.modules,
                  "blockers": sum(isinstance(f, TorchBlocker) for f in sys.meta_path),
                  "first": isinstance(sys.meta_path[0], TorchBlocker)}))
"""


def probe(*pairs: tuple[str, str]) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(pairs)], capture_output=True, text=True,
                          timeout=60, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", ["torch", "torch.nn", "torch.nn.functional"])
def test_the_finder_refuses_torch_and_its_submodules(name: str) -> None:
    with pytest.raises(ModuleNotFoundError, match="kept out of this server: keep_torch_out") as raised:
        TorchBlocker().find_spec(name)
    assert raised.value.name == name


@pytest.mark.parametrize("name", ["torchvision", "torchaudio", "numpy", "haystack.utils.device", "mytorch"])
def test_the_finder_leaves_other_modules_to_the_next_finder(name: str) -> None:
    assert TorchBlocker().find_spec(name) is None


def test_with_the_onnx_embedders_torch_cannot_be_imported_and_is_not_in_sys_modules() -> None:
    """Twice called (the server calls it before the LLM's thread and again in the app): one blocker, first."""
    seen = probe(("onnx-int8", "none"), ("onnx-int8", "llm"))
    assert seen["kept_out"] == [True, True]
    assert seen["error"] == ["torch", "No module named 'torch' (kept out of this server: keep_torch_out)"]
    assert seen["in_modules"] is False
    assert seen["blockers"] == 1 and seen["first"] is True


def test_a_component_that_needs_torch_keeps_it() -> None:
    """The torch embedding backend, or the cross-encoder reranker."""
    seen = probe(("torch", "none"), ("onnx-int8", "cross-encoder"))
    assert seen["kept_out"] == [False, False] and seen["error"] is None and seen["in_modules"] is True
    assert seen["blockers"] == 0


def test_torch_already_imported_is_not_blocked_after_the_fact() -> None:
    """This process has torch loaded (the test suite imports it): blocking now would only break its users."""
    import torch  # noqa: F401

    before = list(sys.meta_path)
    assert keep_torch_out("onnx-int8", "none") is False
    assert sys.meta_path == before
