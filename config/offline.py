"""The process defaults that keep the product offline and quiet, in one place for every entry point.

They must be set before Hugging Face or Haystack is imported: Haystack decides at import whether to send telemetry,
so an entry point (the CLI, the server, a notebook's first cell) calls `apply_offline_defaults` before importing
anything that imports Haystack. A variable the user has set wins.

Usage::

    from config.offline import apply_offline_defaults
    apply_offline_defaults()
"""

from __future__ import annotations

import os

OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",  # models load from local folders only
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",  # no fork warnings from the tokenizers' thread pool
    "HAYSTACK_TELEMETRY_ENABLED": "False",  # no network here; never phone home
}


def apply_offline_defaults() -> None:
    """Set each of `OFFLINE_DEFAULTS` that the environment does not set already."""
    for name, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(name, value)
