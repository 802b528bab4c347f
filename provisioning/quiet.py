"""Quiet model building: setup shows its own progress, not the libraries' notices.

Usage::

    with quiet_libraries():
        build_onnx_int8(folder)
"""

from __future__ import annotations

import logging as logging_std
import warnings
from collections.abc import Iterator
from contextlib import contextmanager


class _DropQuantizationAdvice(logging_std.Filter):
    """onnxruntime logs, on the root logger, advice for static quantisation of vision models ("consider to run
    pre-processing before quantization"); this export is dynamic and checked by cosine, so the advice is noise."""

    def filter(self, record: logging_std.LogRecord) -> bool:
        return "pre-processing before quantization" not in record.getMessage()


@contextmanager
def quiet_onnxruntime() -> Iterator[None]:
    """Drop onnxruntime's quantisation advice (`_DropQuantizationAdvice`); imports nothing, so a child process that
    only quantises stays free of torch and transformers."""
    advice, root = _DropQuantizationAdvice(), logging_std.getLogger()
    root.addFilter(advice)
    try:
        yield
    finally:
        root.removeFilter(advice)


@contextmanager
def quiet_libraries() -> Iterator[None]:
    """Silence library output that says nothing to a user of setup: the TorchScript tracer's warnings (the traced
    graph is checked against torch by `onnx_export.verify_onnx_folder`), the ONNX exporter's advanced-indexing note,
    onnxruntime's quantisation advice, transformers' notices and weight-loading bars. Setup prints one line or one
    progress bar per step."""
    import torch
    from transformers.utils import logging as transformers_logging

    bars, verbosity = transformers_logging.is_progress_bar_enabled(), transformers_logging.get_verbosity()
    with warnings.catch_warnings(), quiet_onnxruntime():
        warnings.simplefilter("ignore", torch.jit.TracerWarning)
        warnings.filterwarnings("ignore", message="Exporting aten::index operator", category=UserWarning)
        transformers_logging.disable_progress_bar()
        transformers_logging.set_verbosity_error()
        try:
            yield
        finally:
            transformers_logging.set_verbosity(verbosity)
            if bars:
                transformers_logging.enable_progress_bar()
