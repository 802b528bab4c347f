"""The store errors' family: each is a `StoreError` and a Haystack `DocumentStoreError` (what callers of any store
catch), and the two kinds are told apart. Where each is raised: test_edge_store.py, test_qdrant_store.py."""

from __future__ import annotations

import pytest
from haystack.document_stores.errors import DocumentStoreError

from document_store.errors import StoreConfigError, StoreError, StoreLockedError


@pytest.mark.parametrize("kind", [StoreError, StoreLockedError, StoreConfigError])
def test_each_is_caught_as_a_store_error_and_a_document_store_error(kind: type[StoreError]) -> None:
    for caught in (StoreError, DocumentStoreError):
        with pytest.raises(caught, match="^the knowledge base at data/kb is in use$"):
            raise kind("the knowledge base at data/kb is in use")


def test_a_locked_store_is_not_a_configuration_error_nor_the_reverse() -> None:
    """The command line and the API tell the user different things for each: neither may catch the other."""
    assert not issubclass(StoreLockedError, StoreConfigError)
    assert not issubclass(StoreConfigError, StoreLockedError)
