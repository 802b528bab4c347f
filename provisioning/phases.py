"""Set-up phases and their seconds: what ran, how long, and what was skipped as already done.

`python -m pipelines setup` and `demo` print one line per phase at the end, so a slow first run says where its time
went (the Makefile prints its own phases: packages, the llama.cpp build).

Usage::

    phases = Phases()
    with phases.phase("index the corpus"):
        ...
    print("\\n".join(phases.summary()))
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field


@dataclass
class Phases:
    """An ordered record of (phase, seconds); nested phases are recorded with their parent's name as a prefix."""

    rows: list[tuple[str, float]] = field(default_factory=list)
    _open: list[str] = field(default_factory=list)

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the block as ``name``; it is recorded even when the block raises (marked ``interrupted``)."""
        label = " / ".join([*self._open, name])
        self._open.append(name)
        started = time.perf_counter()
        finished = False
        try:
            yield
            finished = True
        finally:
            self._open.pop()
            self.rows.append((label if finished else f"{label} (interrupted)", time.perf_counter() - started))

    def summary(self, title: str = "setup phases") -> list[str]:
        """One line per phase, in the order they finished, then the total of the top-level phases."""
        if not self.rows:
            return []
        total = sum(seconds for label, seconds in self.rows if " / " not in label)
        width = max(len(label) for label, _ in self.rows)
        lines = [f"{title}:"] + [f"  {label:<{width}}  {seconds:8.1f} s" for label, seconds in self.rows]
        return [*lines, f"  {'total':<{width}}  {total:8.1f} s"]
