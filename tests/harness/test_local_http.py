"""LocalHTTPServer, the base of the scripted test servers: a subclass's handler served on a free loopback port from
``__enter__``, requests answered concurrently, the port closed on ``__exit__``."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler

import httpx
import pytest

from harness.local_http import LocalHTTPServer


class EchoServer(LocalHTTPServer):
    """Answers ``GET <path>`` with the path, after ``delay`` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        self.delay = delay
        super().__init__()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                time.sleep(outer.delay)
                body = self.path.encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        return Handler


def test_the_handler_is_served_on_a_loopback_port_until_exit() -> None:
    with EchoServer() as server, EchoServer() as other:
        assert server.origin.startswith("http://127.0.0.1:") and server.origin != other.origin
        assert httpx.get(f"{server.origin}/路径?q=1").text == "/%E8%B7%AF%E5%BE%84?q=1"
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.origin}/", timeout=2)


def test_requests_are_answered_concurrently() -> None:
    with EchoServer(delay=0.6) as server:
        answers: list[str] = []
        threads = [threading.Thread(target=lambda i=i: answers.append(httpx.get(f"{server.origin}/{i}").text))
                   for i in range(4)]
        started = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    assert sorted(answers) == ["/0", "/1", "/2", "/3"]
    assert elapsed < 1.8, elapsed  # four 0.6 s requests one after another would take 2.4 s


def test_the_base_class_alone_has_no_handler() -> None:
    with pytest.raises(NotImplementedError):
        LocalHTTPServer()
