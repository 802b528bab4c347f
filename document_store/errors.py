"""The errors of the knowledge-base stores, embedded (Qdrant Edge) or on a server: one place, each a Haystack
`DocumentStoreError`, each message one line that says what to do.

Usage::

    from document_store.errors import StoreError, StoreLockedError
    try:
        store.count_documents()
    except StoreLockedError as error:  # a StoreError, a DocumentStoreError
        print(f"error: {error}")
"""

from haystack.document_stores.errors import DocumentStoreError


class StoreError(DocumentStoreError):
    """A knowledge base cannot be used; the message is one line that says why and what to do."""


class StoreLockedError(StoreError):
    """Another process (or another store object) holds the embedded store open."""


class StoreConfigError(StoreError):
    """The store cannot be used as configured (server unreachable, API key refused, collection made for other
    vectors)."""
