"""WebEvidenceMerger: turns the web search's outputs into one `WebOutcome` for the evidence selector and the
finalizer (results, or why there are none).

Usage::

    merger = WebEvidenceMerger()
    web = merger.run(documents=web_docs, status="ok", message="")["web"]
"""

from typing import Any

from haystack import Document, component

from helpers.records.rounds import WebOutcome


@component
class WebEvidenceMerger:
    """The web search's documents, status and message as a `WebOutcome` (the selector puts them after local)."""

    @component.output_types(web=WebOutcome)
    def run(self, documents: list[Document], status: str, message: str = "") -> dict[str, Any]:
        return {"web": WebOutcome(documents=list(documents), status=status, message=message)}
