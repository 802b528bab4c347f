"""Fixtures of the knowledge-base tests here (test_knowledge_base_stats.py, test_knowledge_base_warnings.py): each
file gives its own module-scoped ``settings``."""

from collections.abc import Iterator

import pytest

from document_store.knowledge_base_store import KnowledgeBaseStore
from document_store.source_manifest import SourceManifest
from pipelines.stores import open_document_store


@pytest.fixture(scope="module")
def kb_store(settings) -> Iterator[KnowledgeBaseStore]:
    store = open_document_store(settings)
    yield store
    store.close()


@pytest.fixture
def manifest(kb_store: KnowledgeBaseStore) -> Iterator[SourceManifest]:
    """The store's source manifest, emptied after each test."""
    manifest = SourceManifest(kb_store)
    yield manifest
    for record in manifest.all():
        manifest.remove(record.source)
