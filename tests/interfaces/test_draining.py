"""`interfaces.draining.DrainingServer`: the first exit signal drains the requests in flight before uvicorn's own
shutdown; a second one stops at once. What a drained request answers is in tests/interfaces/test_disconnects.py, the
real server's SIGTERM in tests/serving/test_shutdown.py and test_cancellation.py."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable

import pytest
import uvicorn
from fastapi import FastAPI

from helpers.records.cancellation import Cancellation
from interfaces import draining
from interfaces.disconnects import SHUTTING_DOWN, InFlight
from interfaces.draining import DrainingServer


def server() -> tuple[DrainingServer, InFlight]:
    in_flight = InFlight()
    return DrainingServer(uvicorn.Config(FastAPI()), in_flight), in_flight


def wait_for(condition: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def test_with_nothing_in_flight_the_server_stops_at_once() -> None:
    drained, in_flight = server()
    drained.handle_exit(signal.SIGTERM, None)
    assert in_flight.stopping == SHUTTING_DOWN  # new requests are refused from now on
    assert wait_for(lambda: drained.should_exit, 2.0)


def test_a_request_in_flight_is_cancelled_and_waited_for_before_the_server_stops() -> None:
    drained, in_flight = server()
    request = Cancellation()
    in_flight.add(request)
    drained.handle_exit(signal.SIGTERM, None)  # returns at once: the drain runs beside the event loop
    assert wait_for(lambda: request.cancelled)
    assert request.reason == SHUTTING_DOWN
    time.sleep(0.3)
    assert drained.should_exit is False  # its answer (a 503) is still being sent
    in_flight.remove(request)
    assert wait_for(lambda: drained.should_exit, 2.0)


def test_a_second_signal_stops_without_waiting() -> None:
    drained, in_flight = server()
    in_flight.add(Cancellation())  # never ends
    drained.handle_exit(signal.SIGTERM, None)
    assert drained.should_exit is False
    drained.handle_exit(signal.SIGINT, None)
    assert drained.should_exit is True


def test_a_request_that_does_not_end_holds_the_stop_only_for_the_drain_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(draining, "DRAIN_SECONDS", 0.3)
    drained, in_flight = server()
    in_flight.add(Cancellation())
    started = time.monotonic()
    drained.handle_exit(signal.SIGTERM, None)
    assert wait_for(lambda: drained.should_exit, 5.0)
    assert 0.25 <= time.monotonic() - started < 3.0  # DRAIN_SECONDS, then uvicorn's own shutdown
