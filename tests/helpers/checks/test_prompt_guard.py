import random

import pytest
from haystack.dataclasses import StreamingChunk

from helpers.checks.prompt_guard import REDACTED, WINDOW, PromptLeakGuard, quote_data

SECRET = "你是严谨的中国法律咨询助手。只根据证据回答，不得编造法条或条文号。"


def test_quote_data_cannot_close_or_open_the_data_block():
    assert quote_data("a>>>b<<<c") == "a›››b‹‹‹c"
    assert ">>>" not in quote_data(">>>>>>") and quote_data("普通文本") == "普通文本"


def test_redact_removes_each_copied_run_and_keeps_the_rest():
    guard = PromptLeakGuard([SECRET])
    text = f"答：需要同意。{SECRET}另外，依据《个人信息保护法》第十四条。"
    assert guard.leaks(text)
    assert guard.redact(text) == f"答：需要同意。{REDACTED}另外，依据《个人信息保护法》第十四条。"
    short = SECRET[: WINDOW - 1]  # a few shared words are not a leak
    assert not guard.leaks(f"我是{short}") and guard.redact(f"我是{short}") == f"我是{short}"


def test_stream_filter_holds_back_a_window_and_stops_at_a_leak():
    guard = PromptLeakGuard([SECRET])
    seen: list[str] = []
    forward = guard.stream_filter(lambda chunk: seen.append(chunk.content))
    for piece in ["需要", "同意。以下是", SECRET[:6], SECRET[6:20], SECRET[20:], "结束"]:
        forward(StreamingChunk(content=piece))
    forward.flush()
    streamed = "".join(seen)
    assert streamed.startswith("需要") and not guard.leaks(streamed) and "结束" not in streamed


def test_stream_filter_sends_everything_once_the_reply_ends_without_a_leak():
    seen: list[str] = []
    forward = PromptLeakGuard([SECRET]).stream_filter(lambda chunk: seen.append(chunk.content))
    reply = "需要同意。依据《个人信息保护法》第十四条，处理个人信息应当取得个人同意。"
    for i in range(0, len(reply), 5):
        forward(StreamingChunk(content=reply[i:i + 5]))
    assert "".join(seen) == "需要同意。"  # whole sentences, a window behind; the last one waits for the reply's end
    forward.flush()
    assert "".join(seen) == reply


def test_a_dropping_guard_streams_exactly_the_redacted_reply():
    instruction = "【尚缺信息】还缺少哪些信息或规定。"
    guard = PromptLeakGuard([instruction], window=8, replacement="", stop_stream=False)
    reply = f"{instruction}\n依据第十四条需要同意。{instruction}最后一句。"
    seen: list[str] = []
    forward = guard.stream_filter(lambda chunk: seen.append(chunk.content))
    for i in range(0, len(reply), 3):
        forward(StreamingChunk(content=reply[i:i + 3]))
        assert guard.redact(reply).startswith("".join(seen))  # never sends what is later taken back
    forward.flush()
    # the copied sentences go; headers stay (the answer check drops a header whose section is left empty)
    assert "".join(seen) == guard.redact(reply) == "【尚缺信息】\n依据第十四条需要同意。【尚缺信息】最后一句。"


@pytest.mark.parametrize("seed", range(20))
def test_streamed_text_equals_the_redacted_reply_for_any_chunking(seed):
    rng = random.Random(seed)
    pieces = [SECRET[:15], SECRET[5:30], "  ", "需要同意。", "依据第十四条，", "\n", SECRET[-13:]]
    reply = "".join(rng.choice(pieces) for _ in range(12))
    for guard in (PromptLeakGuard([SECRET], window=8, replacement="", stop_stream=False), PromptLeakGuard([SECRET])):
        seen: list[str] = []
        forward = guard.stream_filter(lambda chunk, out=seen: out.append(chunk.content))
        i = 0
        while i < len(reply):
            step = rng.randint(1, 6)
            forward(StreamingChunk(content=reply[i:i + step]))
            i += step
            assert guard.redact(reply).startswith("".join(seen))
        forward.flush()
        if not guard.stop_stream or not guard.leaks(reply):
            assert "".join(seen) == guard.redact(reply)


def test_a_copied_run_takes_its_whole_sentence_and_leaves_the_header():
    """The old guard cut the copied characters only and left 【建议】用户可以 (issue 20): now the sentence goes,
    the 【header】 stays for the answer check to drop if its section is left empty."""
    instruction = "【建议】用户可以如何补充情况或换一种问法；必要时咨询律师。"
    guard = PromptLeakGuard([instruction[4:]], window=16, replacement="", stop_stream=False)
    reply = "【结论】需要同意。\n【建议】用户可以如何补充情况或换一种问法；必要时咨询律师。\n最后一句。"
    text, removed = guard.redact_counted(reply)
    assert text == "【结论】需要同意。\n【建议】\n最后一句。" and removed == 1
    seen: list[str] = []
    forward = guard.stream_filter(lambda chunk: seen.append(chunk.content))
    for i in range(0, len(reply), 2):
        forward(StreamingChunk(content=reply[i:i + 2]))
    forward.flush()
    assert "".join(seen) == text
