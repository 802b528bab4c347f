"""The CLI's way to a running `serve`: deployment calls over HTTP, their errors as one-line `ServerRequestError`s.

Used when the embedded knowledge base is owned by this project's server (`interfaces.server_record`): ``ask``,
``search``, ``stats`` and ``feedback`` send their request there instead of failing with "in use", and ``index``
submits an index job (`request` with a multipart form) and follows it.

Usage::

    client = ServerClient("http://127.0.0.1:1416", api_key=Settings.from_env().api_key or None)
    result = client.run("agentic_rag", {"query": "公司收集我的个人信息需要我同意吗", "mode": "rag"})
"""

from __future__ import annotations

import time
from typing import Any

import httpx

STARTING_WAIT_S = 300.0  # how long a command waits for a server that is still loading its deployments
ANSWER_TIMEOUT_S = 900.0  # an agentic answer on the embedded LLM takes minutes on 2 cores


class ServerRequestError(ValueError):
    """The server refused or failed the request; the message is its one-line reason."""


class ServerClient:
    """Calls ``POST /{deployment}/run`` (and ``POST /feedback``) on the server at ``url`` (with ``Authorization:
    Bearer`` when ``api_key``)."""

    def __init__(self, url: str, api_key: str | None = None, timeout: float = ANSWER_TIMEOUT_S,
                 starting_wait: float = STARTING_WAIT_S) -> None:
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        self.url, self.timeout, self.starting_wait = url.rstrip("/"), timeout, starting_wait
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}

    def run(self, deployment: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The deployment's result (Hayhooks' ``{"result": ...}``)."""
        return self.post(f"/{deployment}/run", payload)["result"]

    def post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        """``POST path`` with a JSON body: the JSON answer."""
        return self.request("POST", path, json=payload)

    def request(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """``method path`` (``kwargs`` as httpx takes them: ``json``, ``data``, ``files``): the JSON answer; waits
        while the server is still starting (503 with ``Retry-After``)."""
        deadline = time.monotonic() + self.starting_wait
        while True:
            try:
                response = httpx.request(method, f"{self.url}{path}", headers=self.headers,
                                         timeout=httpx.Timeout(self.timeout, connect=5.0), **kwargs)
            except httpx.HTTPError as error:
                raise ServerRequestError(f"the server at {self.url} did not answer: {error}") from error
            if response.status_code == 503 and "Retry-After" in response.headers and time.monotonic() < deadline:
                time.sleep(min(2.0, float(response.headers.get("Retry-After") or 1)))
                continue
            if response.is_success:
                return response.json()
            raise ServerRequestError(f"the server at {self.url} answered {response.status_code}: {detail(response)}")


def detail(response: httpx.Response) -> str:
    """The error's ``detail`` (FastAPI's shape; a list of field errors as their messages), else the body's start."""
    try:
        found = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:300]
    if isinstance(found, list):
        return "; ".join(str(item.get("msg", item)) if isinstance(item, dict) else str(item) for item in found)
    return str(found)
