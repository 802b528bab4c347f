"""Hayhooks' log line of a request prints user text as written, markup characters included (issue 46, bug 5)."""

import io

import pytest
from hayhooks.server.logger import formatter
from loguru import logger

from interfaces.safe_logging import escaped_values

TRICKY = ["<script>alert(1)</script>", "</b><red>红色</red>", "a\\<b>", "\\\\<i>", "{q}", "普通的问题"]


@pytest.mark.parametrize("text", TRICKY)
def test_a_value_with_markup_prints_as_written(text):
    out = io.StringIO()

    def safe(record):
        record["extra"] = escaped_values(record["extra"])
        return formatter(record)

    sink = logger.add(out, format=safe, colorize=False, catch=False)  # a formatting error raises here
    try:
        params = {"query": text, "top_k": 3}
        logger.bind(params=params).opt(colors=True).info("Running pipeline '<bold>{}</bold>'", "agentic_rag")
    finally:
        logger.remove(sink)
    line = out.getvalue()
    assert "Running pipeline 'agentic_rag'" in line
    assert f"params={params!r}" in line
