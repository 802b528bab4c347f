"""A serving process without torch: Haystack imports it whenever it is installed, about 180 MiB that the default
ONNX embedders never use.

Usage (before anything imports Haystack)::

    keep_torch_out(settings.embedding_backend, settings.reranker)
"""

from __future__ import annotations

import importlib.abc
import sys
from typing import Any


class TorchBlocker(importlib.abc.MetaPathFinder):
    """A finder, first on ``sys.meta_path``, that makes ``import torch`` (and its submodules) raise
    ``ModuleNotFoundError`` while torch stays absent from ``sys.modules``, so code that looks there (SciPy's array-API
    checks, imported by scikit-learn) sees no torch rather than a ``None`` entry it cannot read."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> None:
        if fullname == "torch" or fullname.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {fullname!r} (kept out of this server: keep_torch_out)",
                                      name=fullname)


def keep_torch_out(embedding_backend: str, reranker: str) -> bool:
    """Make ``import torch`` fail in this process when no served component needs it, and say whether it does.

    Haystack imports torch as soon as it is installed (``haystack.utils.device``), about 180 MiB of a serving
    process, although with ``EMBEDDING_BACKEND=onnx-int8`` the embedders run on ONNX Runtime alone. Only the torch
    backend and ``RERANKER=cross-encoder`` need it. Haystack's optional imports see torch as absent
    (`TorchBlocker`)."""
    if embedding_backend == "torch" or reranker == "cross-encoder" or "torch" in sys.modules:
        return False
    if not any(isinstance(finder, TorchBlocker) for finder in sys.meta_path):
        sys.meta_path.insert(0, TorchBlocker())
    return True
