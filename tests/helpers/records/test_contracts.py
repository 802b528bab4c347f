"""`helpers.records.contracts`: the names several layers share (modes, retrieval paths, web sources)."""

import pytest
from haystack import Document

from helpers.records.contracts import (
    CHAT_MODES,
    PIPELINE_MODES,
    RETRIEVAL_PATHS,
    WEB_SOURCE,
    Mode,
    RetrievalPath,
    is_web,
)


def test_a_mode_is_parsed_from_its_name_or_from_itself() -> None:
    assert Mode.parse("agentic") is Mode.AGENTIC
    assert Mode.parse(Mode.RETRIEVE) is Mode.RETRIEVE
    assert Mode.parse("rag", PIPELINE_MODES) is Mode.RAG


@pytest.mark.parametrize("value", ["Agentic", " rag", "", None, 1, ["rag"]])
def test_anything_else_is_a_value_error_listing_every_mode(value: object) -> None:
    with pytest.raises(ValueError) as error:
        Mode.parse(value)
    assert str(error.value) == f"mode must be one of agentic, rag, agent, retrieve; got {value!r}"


def test_a_mode_outside_the_allowed_ones_lists_only_those() -> None:
    """The chat API takes no ``retrieve`` (a chat reply needs an answer); the pipelines take neither it nor agent."""
    with pytest.raises(ValueError, match=r"^mode must be one of agentic, rag, agent; got 'retrieve'$"):
        Mode.parse("retrieve", CHAT_MODES)
    with pytest.raises(ValueError, match=r"^mode must be one of agentic, rag; got 'agent'$"):
        Mode.parse("agent", PIPELINE_MODES)


def test_an_empty_allowed_list_means_every_mode() -> None:
    assert Mode.parse("retrieve", []) is Mode.RETRIEVE


def test_the_retrieval_paths_are_plain_component_names() -> None:
    assert RETRIEVAL_PATHS == tuple(path.value for path in RetrievalPath)
    assert all(type(path) is str for path in RETRIEVAL_PATHS)  # not enum members: they key pipeline data
    assert f"{RetrievalPath.BM25}.rankings" == "bm25.rankings"  # how the pipelines connect them


def test_only_a_web_search_result_is_web() -> None:
    assert is_web(Document(content="x", meta={"source": WEB_SOURCE}))
    assert not is_web(Document(content="x", meta={"source": "law:中华人民共和国民法典"}))
    assert not is_web(Document(content="x", meta={"source": "Web"}))
    assert not is_web(Document(content="x"))
