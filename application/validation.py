"""Input checks shared by the CLI and the API.

Usage::

    from application.validation import validate_query
    # stripped; ValueError when empty, not text or too long
    query = validate_query("  公司收集我的个人信息需要我同意吗 ")
"""

from helpers.checks.user_text import has_visible_character, lone_surrogate_at

SAMPLE_QUESTION = "公司收集我的个人信息需要我同意吗"
MAX_QUERY_CHARS = 2000


def validate_query(query: str) -> str:
    """Reject empty and oversized queries with a message that says the limit; a query that shows nothing (only
    spaces, NUL or zero-width characters) is empty, and one that is not text (a lone surrogate) is refused."""
    query = query.strip()
    if (at := lone_surrogate_at(query)) is not None:
        raise ValueError(f"the query is not valid Unicode text: a lone surrogate at character {at}")
    if not has_visible_character(query):
        raise ValueError("the query is empty; ask a question, e.g. " + SAMPLE_QUESTION)
    if len(query) > MAX_QUERY_CHARS:
        raise ValueError(f"the query has {len(query)} characters; the limit is {MAX_QUERY_CHARS}")
    return query
