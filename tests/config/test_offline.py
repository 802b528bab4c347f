"""Every entry point keeps Haystack's telemetry off and the models offline, whatever imports Haystack later
(issue 50: notebooks and ``python -m interfaces.server_app`` left telemetry on)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.offline import OFFLINE_DEFAULTS

ROOT = Path(__file__).resolve().parents[2]
NAMES = list(OFFLINE_DEFAULTS)
PROBE = ("import haystack.telemetry._telemetry as t, os, json; "
         f"print(json.dumps({{'telemetry': t.telemetry is not None, "
         f"'env': {{k: os.environ.get(k) for k in {NAMES!r}}}}}))")


def probe(setup: str, cwd: Path = ROOT) -> dict:
    """Run ``setup`` in a fresh interpreter without the offline variables, then ask Haystack about telemetry."""
    env = {k: v for k, v in os.environ.items() if k not in OFFLINE_DEFAULTS}
    env["PYTHONPATH"] = str(ROOT)
    out = subprocess.run([sys.executable, "-c", f"{setup}\n{PROBE}"], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def first_code_cell(notebook: str) -> str:
    cells = json.loads((ROOT / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    return "".join(next(c for c in cells if c["cell_type"] == "code")["source"])


@pytest.mark.parametrize("setup", ["import interfaces.cli", "import interfaces.server_app",
                                   "exec(FIRST_CELL)"], ids=["cli", "server_app", "walkthrough notebook"])
def test_entry_points_turn_telemetry_off_before_haystack_loads(setup):
    if setup == "exec(FIRST_CELL)":
        setup = f"FIRST_CELL = {first_code_cell('agentic_walkthrough.ipynb')!r}\n{setup}"
    seen = probe(setup, cwd=ROOT / "notebooks")
    assert seen["telemetry"] is False
    assert seen["env"] == OFFLINE_DEFAULTS


def test_without_the_defaults_haystack_would_send_telemetry():
    """The probe can fail: a bare Haystack import in the same clean environment turns telemetry on."""
    assert probe("pass")["telemetry"] is True


def test_a_variable_the_user_set_wins(monkeypatch):
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "true")
    from config.offline import apply_offline_defaults

    apply_offline_defaults()
    assert os.environ["TOKENIZERS_PARALLELISM"] == "true"
