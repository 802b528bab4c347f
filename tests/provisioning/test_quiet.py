"""`provisioning.quiet`: set-up silences the libraries' notices that say nothing to its user, only while it builds,
and lets everything else through. A real build's silence is in tests/provisioning/test_onnx_export.py."""

from __future__ import annotations

import logging
import warnings

import pytest

from provisioning.quiet import quiet_libraries, quiet_onnxruntime

ADVICE = "Please consider to run pre-processing before quantization. Refer to example: https://..."


def test_onnxruntimes_quantisation_advice_is_dropped_only_inside(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    with quiet_onnxruntime():
        logging.getLogger().warning(ADVICE)  # onnxruntime logs it on the root logger
        logging.getLogger().warning("Quantization parameters for tensor x not specified")
    logging.getLogger().warning(ADVICE)
    assert [r.getMessage() for r in caplog.records] == ["Quantization parameters for tensor x not specified", ADVICE]


def test_the_filter_is_removed_when_the_block_raises() -> None:
    root = logging.getLogger()
    before = list(root.filters)
    with pytest.raises(RuntimeError), quiet_onnxruntime():
        assert len(root.filters) == len(before) + 1
        raise RuntimeError("export failed")
    assert root.filters == before


def test_the_libraries_notices_are_silenced_and_other_warnings_pass() -> None:
    import torch

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with quiet_libraries():
            warnings.warn("Converting a tensor to a Python boolean", torch.jit.TracerWarning, stacklevel=1)
            warnings.warn("Exporting aten::index operator of advanced indexing", UserWarning, stacklevel=1)
            warnings.warn("the tokenizer has no pad token", UserWarning, stacklevel=1)
        warnings.warn("Converting a tensor to a Python boolean", torch.jit.TracerWarning, stacklevel=1)
    assert [(w.category.__name__, str(w.message)) for w in caught] == [
        ("UserWarning", "the tokenizer has no pad token"),
        ("TracerWarning", "Converting a tensor to a Python boolean")]


@pytest.mark.parametrize("bars", [True, False])
def test_transformers_verbosity_and_progress_bars_are_put_back(bars: bool) -> None:
    from transformers.utils import logging as transformers_logging

    verbosity, enabled = transformers_logging.get_verbosity(), transformers_logging.is_progress_bar_enabled()
    try:
        transformers_logging.set_verbosity_info()
        (transformers_logging.enable_progress_bar if bars else transformers_logging.disable_progress_bar)()
        with pytest.raises(KeyboardInterrupt), quiet_libraries():
            assert transformers_logging.get_verbosity() == transformers_logging.ERROR
            assert not transformers_logging.is_progress_bar_enabled()
            raise KeyboardInterrupt
        assert transformers_logging.get_verbosity() == transformers_logging.INFO
        assert transformers_logging.is_progress_bar_enabled() is bars
    finally:
        transformers_logging.set_verbosity(verbosity)
        (transformers_logging.enable_progress_bar if enabled else transformers_logging.disable_progress_bar)()
