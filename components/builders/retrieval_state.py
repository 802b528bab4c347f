"""RetrievalState: wraps one retrieval's documents in a `LoopState` (plain RAG mode: no judge, no loop).

Usage::

    state = RetrievalState().run(query="…", documents=docs)["state"]
"""

from typing import Any

from haystack import Document, component

from helpers.loop_state import LoopState, document_summary


@component
class RetrievalState:
    """The state the answer stage expects, from a single retrieval of the original query."""

    @component.output_types(state=LoopState)
    def run(self, query: str, documents: list[Document]) -> dict[str, Any]:
        state = LoopState(query=query, best_documents=list(documents), tried_queries=[query], decision="rag",
                          route={"mode": "rag", "retrieved": [document_summary(d) for d in documents]})
        return {"state": state}
