"""uvicorn with a drain on SIGTERM: requests in flight are cancelled and answered 503, then the server stops.

uvicorn's own SIGTERM stops listening and waits for the requests in flight (``timeout_graceful_shutdown``), but a
request in flight was an answer being generated on 2 cores: the client got a plain ``Internal Server Error`` after
5 s and the process and its llama.cpp child ran on for 6.5 minutes. Here the first SIGTERM (or Ctrl-C) drains:
new requests get 503 with the reason, the requests in flight are cancelled (`interfaces.disconnects.InFlight`;
their LLM calls stop, `llm_access.call_policy.StoppableCall`) and answer 503 or end their stream with the reason,
and the embedded LLM server is stopped; uvicorn then shuts down as usual. A second signal stops at once.

Usage::

    server = DrainingServer(uvicorn.Config(app, ...), app.state.in_flight)
    server.run()
"""

from __future__ import annotations

import threading
from types import FrameType

import uvicorn
from haystack import logging

from interfaces.disconnects import SHUTTING_DOWN, InFlight
from llm_access.embedded_server import stop_shared_server

logger = logging.getLogger(__name__)

DRAIN_SECONDS = 6.0  # how long the cancelled requests get to answer before uvicorn's own shutdown (5 s more)


class DrainingServer(uvicorn.Server):
    """`uvicorn.Server` whose first exit signal drains ``in_flight`` before the usual shutdown."""

    def __init__(self, config: uvicorn.Config, in_flight: InFlight) -> None:
        super().__init__(config)
        self.in_flight = in_flight
        self._draining = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._draining:  # a second signal: no more waiting
            super().handle_exit(sig, frame)
            return
        self._draining = True  # the signal handler returns at once; the drain runs beside the event loop
        threading.Thread(target=self._drain, args=(sig, frame), daemon=True, name="drain").start()

    def _drain(self, sig: int, frame: FrameType | None) -> None:
        cancelled = self.in_flight.drain(SHUTTING_DOWN)
        logger.info("Stopping: {count} request(s) in flight cancelled; new requests get 503", count=cancelled)
        # a generation in flight would hold a graceful stop; a server still starting holds its lock: not waited for
        threading.Thread(target=stop_shared_server, kwargs={"timeout": 1}, daemon=True, name="llm-stop").start()
        if not self.in_flight.wait_idle(DRAIN_SECONDS):
            logger.warning("Stopping: requests still in flight after {seconds} s", seconds=DRAIN_SECONDS)
        super().handle_exit(sig, frame)
