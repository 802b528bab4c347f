"""SerpAPIWebSearch: web search through SerpAPI (``serpapi`` 1.2.0 client) as a supplement to local retrieval.

It never raises for a failed search: the result always carries a ``status`` ("ok", "no_results",
"skipped_no_key", "error") and a short human-readable ``message`` for the trace and the answer. Without an
API key no request is sent at all. The API key never appears in a message, a log line or an exception
(the ``serpapi`` client puts it in the request URL, which its errors quote; they are scrubbed here).

``base_url`` (or the env var ``SERPAPI_BASE_URL``) points the client at another host, e.g. a self-hosted
proxy or a local test server; it applies to this component only (no global state is changed).

Usage::

    from components.websearch.serpapi_web_search import SerpAPIWebSearch
    search = SerpAPIWebSearch(top_k=5)                 # key from SERPAPI_API_KEY
    result = search.run(query="个人信息保护法 第十三条 同意")
    result["status"], result["message"]                # ("ok", "网页搜索找到 5 条结果")
    for doc in result["documents"]:
        print(doc.meta["position"], doc.meta["title"], doc.meta["url"])
"""

import logging as std_logging
import os
import re
from typing import Any

import requests
import serpapi
from haystack import Document, component, default_from_dict, default_to_dict, logging
from haystack.utils import Secret, deserialize_secrets_inplace

from helpers.records.contracts import WEB_SOURCE

logger = logging.getLogger(__name__)

MAX_TOP_K = 20
NO_RESULTS_ERRORS = ("hasn't returned any results", "has not returned any results", "no results")
_API_KEY_IN_URL = re.compile(r"(api_key=)[^&\s'\"]*")
DEFAULT_API_KEY = Secret.from_env_var("SERPAPI_API_KEY", strict=False)  # frozen, safe to share as a default


class _RedactAPIKey(std_logging.Filter):
    """Scrubs ``api_key=...`` from records of urllib3, which logs every request URL at DEBUG level."""

    def filter(self, record: std_logging.LogRecord) -> bool:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001  a malformed record is not ours to break
            return True
        if "api_key=" in text:
            record.msg, record.args = _API_KEY_IN_URL.sub(r"\1***", text), ()
        return True


def _install_url_redaction() -> None:
    """Adds the redaction filter to urllib3's request logger once (it only ever removes key values)."""
    url_logger = std_logging.getLogger("urllib3.connectionpool")
    if not any(isinstance(f, _RedactAPIKey) for f in url_logger.filters):
        url_logger.addFilter(_RedactAPIKey())


_install_url_redaction()


class _SerpAPIClient(serpapi.Client):
    """``serpapi.Client`` whose host is set per instance (the library reads ``self.BASE_DOMAIN``)."""

    def __init__(self, *, api_key: str, timeout: float, base_url: str | None = None) -> None:
        super().__init__(api_key=api_key, timeout=timeout)
        if base_url:
            self.BASE_DOMAIN = base_url.rstrip("/")


def _is_timeout(error: BaseException) -> bool:
    """True when ``error`` or anything it was raised from is a requests timeout.

    serpapi 1.2.0 checks ``ConnectionError`` before ``Timeout``, so a connect timeout (a subclass of both)
    surfaces as ``serpapi.HTTPConnectionError``; the original is only reachable through ``__context__``.
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        if isinstance(current, requests.exceptions.Timeout):
            return True
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return False


@component
class SerpAPIWebSearch:
    """Searches the web with SerpAPI and returns one Document per organic result, in ranking order.

    Each Document has ``content`` = the snippet (the title when there is none) and ``meta`` = ``url``, ``title``,
    ``snippet``, ``position``, ``source`` ("web") and ``key`` (``"web:<url>"``).

    :param api_key: SerpAPI key; by default from the env var ``SERPAPI_API_KEY`` (missing = search skipped).
    :param top_k: results to return (1..20), sent to SerpAPI as ``num``.
    :param timeout: HTTP timeout in seconds (> 0).
    :param engine: SerpAPI engine.
    :param hl: interface language sent to the engine.
    :param gl: country sent to the engine.
    :param location: optional SerpAPI ``location`` (e.g. "Beijing, China").
    :param base_url: SerpAPI host, e.g. ``"https://serpapi.com"`` or a proxy; ``None`` = env var
        ``SERPAPI_BASE_URL`` if set, else the real SerpAPI host. ``/search`` is appended by the client.
    :param allowed_domains: optional domains to restrict the search to (adds ``site:`` terms to the query).
    """

    def __init__(
        self,
        api_key: Secret = DEFAULT_API_KEY,
        top_k: int = 5,
        timeout: float = 10.0,
        engine: str = "google",
        hl: str = "zh-cn",
        gl: str = "cn",
        location: str | None = None,
        base_url: str | None = None,
        allowed_domains: list[str] | None = None,
    ) -> None:
        if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
            raise ValueError(f"top_k must be an integer between 1 and {MAX_TOP_K}, got {top_k!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not timeout > 0:
            raise ValueError(f"timeout must be a number of seconds > 0, got {timeout!r}")
        if not isinstance(api_key, Secret):
            raise TypeError("api_key must be a haystack Secret, e.g. Secret.from_env_var('SERPAPI_API_KEY')")
        if not engine:
            raise ValueError("engine must not be empty")
        self.api_key, self.top_k, self.timeout = api_key, top_k, timeout
        self.engine, self.hl, self.gl, self.location, self.base_url = engine, hl, gl, location, base_url
        self.allowed_domains = list(allowed_domains) if allowed_domains else None

    def to_dict(self) -> dict[str, Any]:
        return default_to_dict(
            self,
            api_key=self.api_key.to_dict(),
            top_k=self.top_k,
            timeout=self.timeout,
            engine=self.engine,
            hl=self.hl,
            gl=self.gl,
            location=self.location,
            base_url=self.base_url,
            allowed_domains=self.allowed_domains,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "SerpAPIWebSearch":
        data = {**data, "init_parameters": dict(data.get("init_parameters", {}))}  # leave the caller's dict alone
        deserialize_secrets_inplace(data["init_parameters"], keys=["api_key"])
        return default_from_dict(cls, data)

    def _resolved_base_url(self) -> str:
        return self.base_url or os.environ.get("SERPAPI_BASE_URL") or serpapi.Client.BASE_DOMAIN

    def _params(self, query: str, top_k: int) -> dict[str, Any]:
        q = query.strip()
        if self.allowed_domains:
            q = f"{q} ({' OR '.join(f'site:{domain}' for domain in self.allowed_domains)})"
        params: dict[str, Any] = {"engine": self.engine, "q": q, "num": top_k, "hl": self.hl, "gl": self.gl}
        if self.location:
            params["location"] = self.location
        return params

    @staticmethod
    def _scrub(text: str, api_key: str) -> str:
        """Removes the API key from ``text`` (verbatim and as an ``api_key=`` URL parameter)."""
        if api_key:
            text = text.replace(api_key, "***")
        return _API_KEY_IN_URL.sub(r"\1***", text)

    def _result(self, status: str, message: str, documents: list[Document] | None = None) -> dict[str, Any]:
        return {"documents": documents or [], "status": status, "message": message}

    def _error(self, message: str, api_key: str) -> dict[str, Any]:
        message = self._scrub(message, api_key)
        logger.warning("SerpAPI web search failed: {reason}", reason=message)
        return self._result("error", message)

    def _describe_http_error(self, error: serpapi.HTTPError) -> str:
        status = getattr(error, "status_code", -1)
        detail = error.error if isinstance(getattr(error, "error", None), str) else ""
        if status in (401, 403):
            reason = "SerpAPI 密钥无效或无权限 (invalid API key)"
        elif status == 429:
            reason = "SerpAPI 请求过多或额度已用完 (rate limit / quota)"
        else:
            reason = f"HTTP {status}"
            if not detail and error.response is not None:
                detail = error.response.reason or ""
        if status in (401, 403, 429):
            reason = f"{reason}，HTTP {status}"
        return f"网页搜索失败：{reason}" + (f"：{detail}" if detail else "")

    def _documents(self, results: list[Any], top_k: int) -> list[Document]:
        ranked = []
        for index, item in enumerate(results):
            if not isinstance(item, dict) or not item.get("link"):
                continue
            position = item.get("position")
            ranked.append((position if isinstance(position, int) else index + 1, index, item))
        ranked.sort(key=lambda entry: (entry[0], entry[1]))
        documents = []
        for position, _, item in ranked:
            url, title, snippet = str(item["link"]), str(item.get("title") or ""), str(item.get("snippet") or "")
            content = snippet or title
            if not content:
                continue
            meta = {"url": url, "title": title, "snippet": snippet, "position": position,
                    "source": WEB_SOURCE, "key": f"web:{url}"}
            documents.append(Document(content=content, meta=meta))
            if len(documents) >= top_k:
                break
        return documents

    @component.output_types(documents=list[Document], status=str, message=str)
    def run(self, query: str, top_k: int | None = None) -> dict[str, Any]:
        """Search the web for ``query``.

        :param query: the search query (must not be empty).
        :param top_k: overrides the init ``top_k`` for this call (clamped to 1..20).
        :returns: ``documents`` (in ranking order), ``status`` ("ok" | "no_results" | "skipped_no_key" | "error")
            and a short ``message`` explaining the status.
        :raises ValueError: when ``query`` is empty or whitespace only.
        """
        if not query or not query.strip():
            raise ValueError("query must not be empty")
        top_k = self.top_k if top_k is None else max(1, min(MAX_TOP_K, int(top_k)))

        try:
            api_key = (self.api_key.resolve_value() or "").strip()
        except ValueError as error:  # a strict env-var secret whose variable is unset
            logger.info("SerpAPI key could not be resolved: {error}", error=type(error).__name__)
            api_key = ""
        if not api_key:
            message = "未配置 SERPAPI_API_KEY，已跳过网页搜索 (no SerpAPI key, web search skipped)"
            logger.info(message)
            return self._result("skipped_no_key", message)

        client = _SerpAPIClient(api_key=api_key, timeout=self.timeout, base_url=self._resolved_base_url())
        try:
            response = client.search(self._params(query, top_k))
        except serpapi.TimeoutError:
            return self._error(f"网页搜索超时（{self.timeout:g} s）", api_key)
        except serpapi.HTTPConnectionError as error:
            if _is_timeout(error):
                return self._error(f"网页搜索超时（{self.timeout:g} s）", api_key)
            return self._error(f"网页搜索失败：无法连接 SerpAPI（{client.BASE_DOMAIN}）", api_key)
        except serpapi.HTTPError as error:
            return self._error(self._describe_http_error(error), api_key)
        except Exception as error:  # noqa: BLE001  anything else (requests, decoding): the search fails, the pipeline goes on
            if _is_timeout(error):
                return self._error(f"网页搜索超时（{self.timeout:g} s）", api_key)
            return self._error(f"网页搜索失败：{type(error).__name__}: {error}", api_key)
        finally:
            client.session.close()

        # serpapi returns the raw text (not an exception) when the body is not a JSON object.
        data = response.data if isinstance(response, serpapi.SerpResults) else None
        if not isinstance(data, dict):
            return self._error("网页搜索失败：SerpAPI 返回的不是 JSON 对象 (invalid JSON response)", api_key)

        results = data.get("organic_results")
        error_text = data.get("error")
        if not results and isinstance(error_text, str) and error_text:
            if any(marker in error_text.lower() for marker in NO_RESULTS_ERRORS):
                return self._result("no_results", "网页搜索没有找到结果 (no web results)")
            return self._error(f"网页搜索失败：{error_text}", api_key)
        if results is not None and not isinstance(results, list):
            return self._error("网页搜索失败：organic_results 格式不正确 (unexpected response shape)", api_key)

        documents = self._documents(results or [], top_k)
        if not documents:
            return self._result("no_results", "网页搜索没有找到结果 (no web results)")
        return self._result("ok", f"网页搜索找到 {len(documents)} 条结果", documents)
