"""The part the scripted test servers share: a threaded HTTP server on 127.0.0.1, on a free port, in a daemon thread.

A subclass implements ``_handler()`` (the request-handler class, usually a closure over the server object) and
calls ``super().__init__()``. Usage::

    class EchoServer(LocalHTTPServer):
        def _handler(self) -> type[BaseHTTPRequestHandler]:
            ...

    with EchoServer() as server:
        urllib.request.urlopen(server.origin + "/")
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class LocalHTTPServer:
    """Starts serving on ``__enter__`` and shuts down on ``__exit__``; ``origin`` is ``http://127.0.0.1:<port>``."""

    def __init__(self) -> None:
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        raise NotImplementedError

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
