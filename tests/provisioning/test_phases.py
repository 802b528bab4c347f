"""`provisioning.phases.Phases`: the seconds of each set-up phase and the summary printed at the end. Its basic
order and the interrupted mark are in tests/provisioning/test_quick_start.py."""

from __future__ import annotations

import time

import pytest

from provisioning.phases import Phases


def test_nested_phases_carry_every_parents_name_and_finish_inner_first() -> None:
    phases = Phases()
    with phases.phase("setup"), phases.phase("models"), phases.phase("e5"):
        pass
    with phases.phase("index"):
        pass
    assert [label for label, _ in phases.rows] == ["setup / models / e5", "setup / models", "setup", "index"]


def test_an_error_marks_every_open_phase_and_the_next_phase_starts_afresh() -> None:
    phases = Phases()
    with pytest.raises(OSError, match="disk full"), phases.phase("train"), phases.phase("fine-tune"):
        raise OSError("disk full")
    with phases.phase("answer"):
        pass
    assert [label for label, _ in phases.rows] == ["train / fine-tune (interrupted)", "train (interrupted)", "answer"]


def test_a_phase_records_the_time_it_took() -> None:
    phases = Phases()
    with phases.phase("wait"):
        time.sleep(0.05)
    [(label, seconds)] = phases.rows
    assert label == "wait" and 0.04 <= seconds < 2


def test_the_summary_aligns_the_seconds_and_totals_the_top_level_phases_only() -> None:
    phases = Phases(rows=[("models / e5", 12.0), ("models", 20.04), ("index the default laws", 95.55)])
    assert phases.summary("demo phases") == [
        "demo phases:",
        "  models / e5                 12.0 s",
        "  models                      20.0 s",
        "  index the default laws      95.5 s",
        "  total                      115.6 s",
    ]
