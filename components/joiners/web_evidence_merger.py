"""WebEvidenceMerger: attaches the web-search outcome (results, or why there are none) to the loop state.

Usage::

    merger = WebEvidenceMerger()
    state = merger.run(state=state, documents=web_docs, status="ok", message="")["state"]
"""

from dataclasses import replace
from typing import Any

from haystack import Document, component

from helpers.loop_state import LoopState, document_summary


@component
class WebEvidenceMerger:
    """Puts web results beside the local evidence (local stays first) and records the search in the trace."""

    @component.output_types(state=LoopState)
    def run(self, state: LoopState, documents: list[Document], status: str, message: str = "") -> dict[str, Any]:
        web = {"status": status, "message": message, "results": [document_summary(d) for d in documents]}
        return {"state": replace(state, web_documents=list(documents), web=web)}
