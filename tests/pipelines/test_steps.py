"""Live steps and cancellation at stage boundaries (`application.steps.run_with_steps`)."""

import pytest
from haystack import Pipeline, component

from application.steps import run_with_steps
from helpers.cancellation import Cancellation, RunCancelled


@component
class Stage:
    """Passes its text on and records that it ran; the first one can cancel the run (a client that leaves)."""

    def __init__(self, ran: list[str], cancel: Cancellation | None = None) -> None:
        self.ran, self.cancel = ran, cancel

    @component.output_types(text=str)
    def run(self, text: str) -> dict[str, str]:
        self.ran.append(text)
        if self.cancel is not None:
            self.cancel.cancel()
        return {"text": text + "!"}


def two_stages(ran: list[str], cancel: Cancellation | None) -> Pipeline:
    pipeline = Pipeline()
    pipeline.add_component("first", Stage(ran, cancel))
    pipeline.add_component("second", Stage(ran))
    pipeline.connect("first.text", "second.text")
    return pipeline


def test_a_cancelled_run_stops_at_the_next_stage_boundary():
    ran: list[str] = []
    cancel = Cancellation()
    with pytest.raises(RunCancelled):
        run_with_steps(two_stages(ran, cancel), {"first": {"text": "问"}}, cancel=cancel)
    assert ran == ["问"]  # the second stage never ran


def test_an_uncancelled_run_goes_to_its_end():
    ran: list[str] = []
    output = run_with_steps(two_stages(ran, None), {"first": {"text": "问"}}, cancel=Cancellation())
    assert ran == ["问", "问!"] and output["second"]["text"] == "问!!"
