"""Hayhooks' log line of a request prints user text as written, markup characters included (issue 46, bug 5), and
a logged exception prints its traceback (issue 63: a 500's log held one line)."""

import io
from collections.abc import Iterator

import pytest
from loguru import logger

from interfaces.safe_logging import safe_format

TRICKY = ["<script>alert(1)</script>", "</b><red>红色</red>", "a\\<b>", "\\\\<i>", "{q}", "普通的问题"]


@pytest.fixture
def out() -> Iterator[io.StringIO]:
    out = io.StringIO()
    sink = logger.add(out, format=safe_format, colorize=False, catch=False, diagnose=False)  # a formatting error raises
    yield out
    logger.remove(sink)


@pytest.mark.parametrize("text", TRICKY)
def test_a_value_with_markup_prints_as_written(out, text):
    params = {"query": text, "top_k": 3}
    logger.bind(params=params).opt(colors=True).info("Running pipeline '<bold>{}</bold>'", "agentic_rag")
    line = out.getvalue()
    assert "Running pipeline 'agentic_rag'" in line
    assert f"params={params!r}" in line


def test_a_logged_exception_prints_its_traceback(out):
    def failing_stage() -> None:
        raise RecursionError("maximum recursion depth exceeded")

    try:
        failing_stage()
    except RecursionError:
        logger.bind(request_id="ab12cd34").exception("pipeline failed in component {}", "bm25")
    text = out.getvalue()
    assert "pipeline failed in component bm25" in text and "ab12cd34" in text
    assert "Traceback (most recent call last)" in text and "failing_stage" in text
    assert "RecursionError: maximum recursion depth exceeded" in text


def test_uvicorn_colour_codes_stay_out_of_the_log(out):
    logger.info("Uvicorn running on \x1b[1mhttp://127.0.0.1:8000\x1b[0m (Press CTRL+C to quit)")  # its color_message
    assert out.getvalue().rstrip("\n").endswith("Uvicorn running on http://127.0.0.1:8000 (Press CTRL+C to quit)")
    assert "\x1b" not in out.getvalue()


def test_two_sinks_with_this_format_each_print_the_value_as_written(out):
    """The record is shared by the sinks: the first one's escaping must not be escaped again by the second (a log
    file beside stderr, or a server app built twice in one process)."""
    second = io.StringIO()
    sink = logger.add(second, format=safe_format, colorize=False, catch=False, diagnose=False)
    try:
        params = {"query": "<script>alert(1)</script>"}
        logger.bind(params=params).info("Running pipeline")
    finally:
        logger.remove(sink)
    assert f"params={params!r}" in out.getvalue() and f"params={params!r}" in second.getvalue()
