"""Reading a trained model's JSON file (``evaluator.json``, ``coverage.json``) with one-line errors that say how to
fix it.

Usage::

    data = read_trained_json("models/relevance-evaluator", "evaluator.json", "relevance evaluator", "set JUDGE=llm")
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RETRAIN = "retrain with `python -m pipelines train`"


def read_trained_json(folder: str | Path, filename: str, what: str, otherwise: str) -> dict[str, Any]:
    """``folder/filename`` as a dict; a `ValueError` when the folder holds none (naming ``what`` it is not and,
    besides training, ``otherwise``: how to do without it) or when it is unreadable."""
    path = Path(folder) / filename
    if not path.is_file():
        raise ValueError(f"{folder} is not a trained {what} (no {filename}); run `python -m pipelines train` or "
                         f"{otherwise}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is unreadable ({error.__class__.__name__}); {RETRAIN}") from error
    if isinstance(data, dict):
        return data
    raise ValueError(f"{path} is not a JSON object; {RETRAIN}")
