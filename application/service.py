"""The serving layer: knowledge bases (one Qdrant collection each), their query pipelines, and indexing —
loaded once per process and shared by every Hayhooks pipeline wrapper and request.

Usage::

    from application.service import get_service
    service = get_service()
    service.ask("公司收集我的个人信息需要我同意吗", mode="agentic", knowledge_base="statutes")
    service.index("my_kb", files=[("手册.md", b"# 手册\\n第一条 ...")])
    service.knowledge_bases()   # [{"name": "statutes", "documents": 74, "sources": 1}, ...]
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from haystack import logging

from application.agent_mode import KnowledgeAgent
from application.feedback import (
    ANSWERS_FILE,
    FEEDBACK_FILE,
    AnswerRegistry,
    FeedbackLog,
    parse_verdict,
    resolve_article,
)
from application.rag import AgenticRAG
from config.settings import Settings
from document_store.knowledge_bases import delete_knowledge_base, list_knowledge_bases
from document_store.qdrant_store import validate_collection_name
from document_store.source_manifest import COMPLETE, SourceManifest
from document_store.text_files import text_document, upload_name
from helpers.records.result import RAGResult
from pipelines.embedders import embedding_fingerprint
from pipelines.indexing import (
    Indexer,
    Source,
    build_indexing_pipeline,
    check_unique,
    law_sources,
)
from pipelines.knowledge_base_stats import knowledge_base_stats
from pipelines.knowledge_base_warnings import stale_weight_sources
from pipelines.stores import open_document_store, store_location

logger = logging.getLogger(__name__)


class UnknownKnowledgeBaseError(ValueError):
    """A request named a knowledge base that does not exist."""


class KnowledgeBaseBusyError(RuntimeError):
    """A knowledge base cannot be deleted while an index run writes to it."""


class RAGService:
    """Per-process registry of open knowledge bases, their pipelines and their agents; thread-safe.

    Lifetime: one per server process (`get_service`), shared by every Hayhooks wrapper; `close` ends it. Building a
    cold knowledge base (opening the store, building and warming up its pipelines) holds only that knowledge base's
    lock, so requests to other knowledge bases and index jobs go on meanwhile.
    """

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings.from_env()
        self._rags: dict[str, AgenticRAG] = {}
        self._agents: dict[str, KnowledgeAgent] = {}
        self._lock = threading.RLock()  # guards the dicts only, never held while building
        self._build_locks: dict[str, threading.Lock] = {}
        self._index_locks: dict[str, threading.Lock] = {}
        self.answers = AnswerRegistry(path=self.settings.data_dir / ANSWERS_FILE)
        self.feedback_log = FeedbackLog(self.settings.data_dir / FEEDBACK_FILE)

    def rag(self, name: str | None = None, create: bool = False) -> AgenticRAG:
        """The knowledge base's pipelines (built and warmed up on first use)."""
        name = validate_collection_name(name or self.settings.collection)
        with self._lock:
            if name in self._rags:
                return self._rags[name]
            build_lock = self._build_locks.setdefault(name, threading.Lock())
        with build_lock:  # one build per knowledge base; the others are not blocked
            with self._lock:
                if name in self._rags:
                    return self._rags[name]
            existing = list_knowledge_bases(store_location(self.settings))
            if not create and name not in existing:
                raise UnknownKnowledgeBaseError(f"unknown knowledge base {name!r}; existing: {', '.join(existing)}")
            rag = AgenticRAG(open_document_store(self.settings, name), self.settings)
            for warning in rag.warnings:  # every result from it carries them too
                logger.warning("Knowledge base {collection}: {warning}", collection=name, warning=warning)
            with self._lock:
                self._rags[name] = rag
            return rag

    def agent(self, name: str | None = None) -> KnowledgeAgent:
        """The knowledge base's agent (agent mode), bound to its current pipelines."""
        rag = self.rag(name)
        with self._lock:
            agent = self._agents.get(rag.name)
            if agent is None or agent.rag is not rag:
                agent = self._agents[rag.name] = KnowledgeAgent(rag)
            return agent

    def ask(self, query: str, mode: str = "agentic", knowledge_base: str | None = None, **kwargs: Any) -> RAGResult:
        return self.rag(knowledge_base).ask(query, mode=mode, **kwargs)

    def index(self, knowledge_base: str, laws: list[str] | None = None,
              files: list[tuple[str, bytes]] | None = None) -> list[dict[str, Any]]:
        """Create or extend a knowledge base from statute names and/or uploaded .txt/.md files."""
        return self.index_sources(knowledge_base, self.sources(laws, files))

    @staticmethod
    def sources(laws: list[str] | None = None, files: list[tuple[str, bytes]] | None = None) -> list[Source]:
        """The sources of an index request: laws by name, uploaded (name, bytes) files; bad input raises a
        one-line `ValueError` (`UnknownLawError`, `FileLoadError`)."""
        sources = law_sources(laws) if laws else []
        for filename, data in files or []:
            doc = text_document(data, upload_name(filename))
            sources.append(Source(doc.meta["source"], [doc]))
        if not sources:
            raise ValueError("nothing to index: give laws and/or files")
        check_unique(sources)
        return sources

    def checked_name(self, knowledge_base: str | None) -> str:
        """A knowledge base's name, validated; ``None`` is the configured one, an empty or blank name an error (it
        used to index into the default knowledge base silently)."""
        return validate_collection_name(self.settings.collection if knowledge_base is None else knowledge_base)

    def index_sources(self, knowledge_base: str, sources: list[Source],
                      on_progress: Callable[[int, int], None] | None = None) -> list[dict[str, Any]]:
        """Index ``sources`` into a knowledge base (created if new); ``on_progress(done, total)`` follows the
        articles written. One run at a time per knowledge base, and no delete while it runs."""
        with self._index_lock(self.rag(knowledge_base, create=True).name):
            rag = self.rag(knowledge_base, create=True)  # a delete that ran before this lock closed the one above
            pipeline = build_indexing_pipeline(rag.store, self.settings, bulk=False)  # shares the query encoder
            try:
                results = Indexer(rag.store, self.settings, pipeline).index(sources, progress=False,
                                                                            on_progress=on_progress)
            finally:  # finished or interrupted, the run changed what the results must warn of
                rag.refresh_warnings()
        rag.clear_cache()
        return [{"source": r.source, "action": r.action, "count": r.count} for r in results]

    def _index_lock(self, name: str) -> threading.Lock:
        """The lock an index run of knowledge base ``name`` holds (a delete must get it too)."""
        with self._lock:
            return self._index_locks.setdefault(name, threading.Lock())

    def knowledge_bases(self) -> list[dict[str, Any]]:
        out = []
        fingerprint = embedding_fingerprint(self.settings)
        for name in list_knowledge_bases(store_location(self.settings)):
            store = open_document_store(self.settings, name)  # the store only: no pipelines or models to list it
            manifest = SourceManifest(store)
            records = manifest.all()
            out.append({"name": name, "documents": store.count_documents(), "sources": len(records),
                        "stale_sources": sum(r.status == COMPLETE and r.embedding != fingerprint for r in records),
                        "stale_weight_sources": len(stale_weight_sources(manifest, self.settings)),
                        "incomplete_sources": sum(r.status != COMPLETE for r in records)})
        return out

    def remember(self, result: RAGResult, question: str) -> RAGResult:
        """Give ``result`` its ``answer_id`` and keep what feedback on it records (`AnswerRegistry`)."""
        self.answers.remember(result, question)
        return result

    def feedback(self, answer_id: str, verdict: Any = None, article: Any = None, source: str = "api") -> dict[str, Any]:
        """Record feedback on one of this server's answers: a verdict (up/down, 👍/👎), the right article (named as
        a citation, 劳动合同法第八十二条, resolved in that answer's knowledge base), or both; returns the record
        once it is on disk. An unknown answer is `UnknownAnswerError`, bad input a `ValueError`."""
        answered = self.answers.get(answer_id)
        verdict = parse_verdict(verdict)
        key = resolve_article(self.rag(answered.knowledge_base).store, article) if article else None
        return self.feedback_log.add(answered, verdict, key, source=source)

    def stats(self, name: str | None = None) -> dict[str, Any]:
        """What knowledge base ``name`` (default: the default one) holds (`knowledge_base_stats`: what `stats`
        prints)."""
        return knowledge_base_stats(self.rag(name).store, self.settings)

    def delete(self, name: str) -> None:
        """Delete a knowledge base: its documents, its manifest and (embedded) its folder. While an index run writes
        to it, `KnowledgeBaseBusyError` (the run would write into a store closed under it)."""
        name = validate_collection_name(name)
        rag = self.rag(name)
        lock = self._index_lock(name)
        if not lock.acquire(blocking=False):
            raise KnowledgeBaseBusyError(f"knowledge base {name!r} is being indexed; delete it once the index job "
                                         "has finished")
        try:
            with self._lock:
                rag.close()
                delete_knowledge_base(rag.store)
                del self._rags[name]
                self._agents.pop(name, None)
        finally:
            lock.release()

    def close(self) -> None:
        with self._lock:
            for rag in self._rags.values():
                rag.close()
            self._rags.clear()
            self._agents.clear()


# The process's service. Lifetime: created by the first wrapper's setup (Hayhooks loads each wrapper separately and
# they all share it), alive until the process ends.
_service: RAGService | None = None
_service_lock = threading.Lock()


def get_service() -> RAGService:
    """The process-wide service (Hayhooks loads each wrapper separately; they all share this)."""
    global _service
    with _service_lock:
        if _service is None:
            _service = RAGService()
        return _service
