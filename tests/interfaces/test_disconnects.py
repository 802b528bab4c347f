"""Issue 63, item 2: while the server drains (SIGTERM), new requests get 503 with the reason and the requests in
flight are cancelled; a cancelled run is one log line and a 503, not a 500 with a traceback."""

from __future__ import annotations

import threading
import time

from fastapi import FastAPI
from fastapi.testclient import TestClient

from helpers.records.cancellation import current_cancellation
from interfaces.disconnects import SHUTTING_DOWN, DisconnectMiddleware, InFlight


def app_with(in_flight: InFlight, started: threading.Event) -> FastAPI:
    app = FastAPI()

    @app.get("/slow")
    def slow() -> dict[str, str]:
        cancel = current_cancellation()  # the request's, in its worker thread
        assert cancel is not None
        started.set()
        for _ in range(100):
            cancel.check()  # as a pipeline does at each stage
            time.sleep(0.05)
        return {"answer": "done"}

    app.add_middleware(DisconnectMiddleware, in_flight=in_flight)
    return app


def test_draining_cancels_the_requests_in_flight_and_refuses_new_ones():
    in_flight, started = InFlight(), threading.Event()
    client = TestClient(app_with(in_flight, started))
    answers = {}
    asking = threading.Thread(target=lambda: answers.setdefault("slow", client.get("/slow")))
    asking.start()
    assert started.wait(10)
    assert in_flight.drain() == 1
    asking.join(10)
    assert answers["slow"].status_code == 503 and SHUTTING_DOWN in answers["slow"].json()["detail"]
    assert in_flight.wait_idle(1)
    refused = client.get("/slow")
    assert refused.status_code == 503 and refused.headers["retry-after"] == "10"
    assert refused.json()["detail"].startswith(SHUTTING_DOWN)
