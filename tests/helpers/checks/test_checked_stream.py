"""`helpers.checks.checked_stream.CheckedStream`: the streaming callback that forwards the checked answer as it
streams (the equality of streamed and whole checked text is in test_answer_check.py)."""

from haystack import Document
from haystack.dataclasses import StreamingChunk

from helpers.checks.answer_check import NO_BASIS, AnswerChecker
from helpers.checks.checked_stream import CheckedStream

EVIDENCE = [Document(content="劳动合同期限一年以上不满三年的，试用期不得超过二个月。",
                     meta={"key": "中华人民共和国劳动合同法第十九条", "law": "中华人民共和国劳动合同法",
                           "article_no": "第十九条"})]


def stream() -> tuple[CheckedStream, list[StreamingChunk]]:
    seen: list[StreamingChunk] = []
    return CheckedStream(AnswerChecker(EVIDENCE, "试用期多久"), seen.append), seen


def test_a_sentence_is_forwarded_once_complete_with_the_last_chunks_metadata() -> None:
    checked, seen = stream()
    checked(StreamingChunk(content="【建议】试用期", meta={"n": 1}, index=0))
    assert seen == []  # the sentence is not complete yet
    checked(StreamingChunk(content="不超过二个月。还", meta={"n": 2}, index=0))
    assert [(chunk.content, chunk.meta, chunk.index) for chunk in seen] == [
        ("【建议】试用期不超过二个月。", {"n": 2}, 0)]  # one chunk, with the metadata of the one that completed it


def test_flush_sends_the_rest_and_a_flagged_number_is_flagged_in_the_stream() -> None:
    checked, seen = stream()
    checked(StreamingChunk(content="【建议】试用期最长八个月"))
    checked.flush()
    streamed = "".join(chunk.content for chunk in seen)
    assert streamed == f"【建议】试用期最长八个月{NO_BASIS}"
    assert checked.checker.result.numbers_flagged == ["八个月"]


def test_chunks_without_text_are_not_fed_or_forwarded() -> None:
    """The role-only first chunk and the final one (finish reason, usage) of an OpenAI stream have no content:
    nothing is forwarded for them, and what is forwarded keeps the metadata of the chunk that had the text."""
    checked, seen = stream()
    checked(StreamingChunk(content="", meta={"role": "assistant"}))
    checked.flush()
    assert seen == []  # nothing streamed: nothing to flush
    checked, seen = stream()
    checked(StreamingChunk(content="【建议】协商。", meta={"n": 1}))
    checked(StreamingChunk(content="", finish_reason="stop", meta={"usage": {}}))
    checked.flush()
    assert [(chunk.content, chunk.meta, chunk.finish_reason) for chunk in seen] == [("【建议】协商。", {"n": 1}, None)]


def test_flush_after_a_cut_off_reply_leaves_out_the_unfinished_sentence() -> None:
    checked, seen = stream()
    checked(StreamingChunk(content="【建议】书面约定。此外还应"))
    checked.flush(cut_off=True)
    assert "".join(chunk.content for chunk in seen) == "【建议】书面约定。"
    assert checked.checker.result.cut_off == "此外还应"
