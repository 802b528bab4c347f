"""Fuzz tests of the article splitter (`StatuteSplitter`) and of the upload reader (`text_document`).

What is fuzzed:

* random text mixing Chinese characters, 第…条 / 第…章 / 第…节 headings with Chinese and Arabic numerals, 之一
  suffixes, whitespace, newlines, punctuation and arbitrary unicode: the splitter never raises, every output document
  has non-empty content and the metadata the indexer and the API rely on, keys and ids are unique within a text,
  no text is invented, nothing is lost in paragraph mode and, in article mode, every plain line after the first
  article heading ends up in a document (only the text before the first article, chapter/section heading lines and
  the 第X条 markers may be dropped);
* generated statutes with a known structure (model-based): the articles, their chapters, sections and exact bodies
  are what the model says, including cross-references at line start and heading-like lines that are not headings;
* random bytes as an uploaded file: `text_document` returns a Document or raises `FileLoadError`, nothing else, and
  what it returns goes through the splitter.

Bound: 200 + 150 + 200 examples (plus a few explicit ones, two of them 100k characters), derandomized (the same
inputs on every run): about 5 s on two busy cores.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from haystack import Document
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from components.preprocessors.statute_splitter import ARTICLE_RE, CHAPTER_RE, SECTION_RE, StatuteSplitter, document_id
from document_store.text_files import BINARY_SIGNATURES, SUPPORTED_SUFFIXES, FileLoadError, text_document
from helpers.statutes.numerals import CN_NUMERAL_CHARS, cn_to_int, int_to_cn

FUZZ = settings(deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
META_KEYS = {"law", "chapter", "section", "article_no", "key", "source", "status"}
PARAGRAPH_NO = re.compile(r"第[1-9][0-9]*段")
ARTICLE_NO = re.compile(rf"第[{CN_NUMERAL_CHARS}0-9]+条(之[{CN_NUMERAL_CHARS}]+)?")

# --- random text --------------------------------------------------------------------------------------------------

CJK = st.characters(min_codepoint=0x4E00, max_codepoint=0x9FFF)
NUMERAL = st.one_of(st.integers(1, 99_999).map(int_to_cn), st.integers(0, 10**6).map(str),
                    st.text(alphabet=CN_NUMERAL_CHARS + "0123456789", min_size=1, max_size=6))
INDENT = st.sampled_from(["", " ", "  ", "\t", "\u3000", "\u3000\u3000"])
TITLE_GAP = st.sampled_from([" ", "  ", "\u3000", "\t"])
SEPARATOR = st.sampled_from(["", " ", "\u3000", "：", ":", "、", ".", "．", "  ", " ：", "\t"])
NEWLINE = st.sampled_from(["\n", "\n\n", "\r\n", "\n \n", "\u2028", "\x0c", "\x85"])
PUNCTUATION = st.sampled_from(list("，。；：、！？（）《》“”,.;:!?()#-—…") + ["之一", "之二", "之十"])


@st.composite
def headings(draw: st.DrawFn) -> str:
    kind = draw(st.sampled_from(["条", "条", "条", "章", "编章", "分章", "节"]))
    suffix = draw(st.sampled_from(["", "", "之一", "之二", "之十", "之"])) if kind == "条" else ""
    line_start = draw(st.sampled_from(["\n", "\n", "\n", ""]))  # a heading only counts at the start of a line
    return f"{line_start}{draw(INDENT)}第{draw(NUMERAL)}{kind}{suffix}{draw(SEPARATOR)}"


FRAGMENT = st.one_of(
    headings(),
    headings(),
    st.text(alphabet=CJK, min_size=1, max_size=12),
    NEWLINE,
    INDENT,
    PUNCTUATION,
    NUMERAL,
    st.sampled_from(["第", "条", "章", "节", "编", "分", "之", "# ", "规定"]),
    st.text(max_size=8),  # any unicode (no surrogates), control characters included
)
RANDOM_TEXT = st.lists(FRAGMENT, max_size=80).map("".join)


def nonspace(text: str) -> str:
    return "".join(ch for ch in text if not ch.isspace())


def is_subsequence(needle: str, haystack: str) -> bool:
    remaining = iter(haystack)
    return all(ch in remaining for ch in needle)


def article_number(line: str) -> tuple[int, int] | None:
    """The number of an article heading line as the splitter reads it (None when the line is not one; a number that
    is not a numeral, such as 1十, cannot make a heading)."""
    match = ARTICLE_RE.match(line)
    if match is None:
        return None
    try:
        return cn_to_int(match.group(2)), cn_to_int(match.group(3)) if match.group(3) else 0
    except ValueError:
        return None


def split(text: str, meta: dict, max_paragraph_chars: int = 600) -> list[Document]:
    splitter = StatuteSplitter(max_paragraph_chars=max_paragraph_chars)
    return splitter.run(documents=[Document(content=text, meta=meta)])["documents"]


def check_common(docs: list[Document], text: str, meta: dict) -> None:
    """Properties every output of one input text has, whatever the mode."""
    for doc in docs:
        assert doc.content and doc.content.strip(), doc
        assert doc.content == doc.content.strip()
        assert META_KEYS <= doc.meta.keys(), doc.meta
        assert isinstance(doc.meta["law"], str) and doc.meta["law"]
        assert doc.meta["key"] == f"{doc.meta['law']}{doc.meta['article_no']}"
        assert doc.meta["source"] == (meta.get("source") or f"law:{doc.meta['law']}")
        assert doc.meta["status"] == "现行有效"
        assert doc.id == document_id(doc.meta["source"], doc.meta["key"])
    assert len({d.meta["key"] for d in docs}) == len(docs), [d.meta["key"] for d in docs]
    assert len({d.id for d in docs}) == len(docs)
    if meta.get("law"):
        assert all(d.meta["law"] == meta["law"] for d in docs)
    # nothing is invented: the output text, in order, is drawn from the input text
    assert is_subsequence(nonspace("".join(d.content for d in docs)), nonspace(text))


@settings(FUZZ, max_examples=200)
@given(text=st.builds(str.__add__,
                     st.sampled_from(["", "", "示例法\n第一条 ", "第1条：", "序言\n\n第一章 总则\n第一条"]),
                     RANDOM_TEXT),
       law=st.sampled_from(["示例法", "", None]), cap=st.integers(50, 700))
@example(text="第1十条 内容。", law="示例法", cap=600)  # Arabic and Chinese digits in one article number
@example(text="第" + "1" * 5000 + "条 内容。", law="示例法", cap=600)  # over Python's int() digit limit
@example(text="第一条 " + "很长的条文。" * 20_000, law="示例法", cap=600)  # 120k characters, one article
@example(text="长" * 100_000, law=None, cap=50)  # 100k characters without a sentence end: cut at the cap
def test_random_text_never_breaks_the_splitter(text: str, law: str | None, cap: int) -> None:
    meta = {"source": "file:fuzz.txt", **({"law": law} if law is not None else {})}
    docs = split(text, meta, cap)  # must not raise, whatever the text
    check_common(docs, text, meta)
    lines = [line.rstrip() for line in text.splitlines()]
    numbers = [article_number(line) for line in lines]
    first = next((i for i, n in enumerate(numbers) if n is not None and n > (0, 0)), None)
    if first is None:  # no article heading: paragraphs, every character kept, each chunk within the cap
        assert [d.meta["article_no"] for d in docs] == [f"第{i}段" for i in range(1, len(docs) + 1)]
        assert nonspace("".join(d.content for d in docs)) == nonspace(text)
        assert all(len(d.content) <= cap for d in docs)
        assert all(d.meta["chapter"] is None and d.meta["section"] is None for d in docs)
        return
    assert all(ARTICLE_NO.fullmatch(d.meta["article_no"]) for d in docs), [d.meta["article_no"] for d in docs]
    contents = "\n\x00".join(d.content for d in docs)
    for line, number in zip(lines[first + 1:], numbers[first + 1:], strict=True):
        plain = number is None and not CHAPTER_RE.match(line) and not SECTION_RE.match(line)
        if plain and line.strip():
            assert line.strip() in contents, f"line {line!r} was lost"


# --- generated statutes with a known structure -----------------------------------------------------------------------

SAFE_FIRST = CJK.filter(lambda ch: ch not in "第之" + CN_NUMERAL_CHARS)
LINE_CHARS = st.characters(exclude_categories=("Cc", "Cs", "Zl", "Zp"))  # no line breaks of any kind
SAFE_LINE = st.builds(lambda first, rest: first + rest, SAFE_FIRST, st.text(alphabet=LINE_CHARS, max_size=30))
TITLE = st.builds(lambda first, rest: first + rest, SAFE_FIRST,
                  st.text(alphabet=st.sampled_from("总则分与的规定 个人信息保护"), max_size=10)).map(str.strip)


@dataclass
class Expected:
    article_no: str
    chapter: str | None
    section: str | None
    body: list[str]


def numeral(draw: st.DrawFn, value: int) -> str:
    return draw(st.sampled_from([int_to_cn(value), str(value)]))


@st.composite
def statutes(draw: st.DrawFn) -> tuple[str, list[Expected]]:
    lines: list[str] = draw(st.lists(SAFE_LINE, max_size=3))  # preamble: dropped
    expected: list[Expected] = []
    chapter = section = None
    chapter_no = section_no = 0
    number = (0, 0)
    for _ in range(draw(st.integers(1, 8))):
        if draw(st.integers(0, 3)) == 0:
            chapter_no += 1
            title = draw(st.one_of(st.just(""), TITLE))
            head = f"第{numeral(draw, chapter_no)}{draw(st.sampled_from(['章', '分章', '编章']))}"
            lines.append(f"{draw(INDENT)}{head}{draw(TITLE_GAP)}{title}")
            chapter, section = f"{head} {title}".strip(), None
        if draw(st.integers(0, 3)) == 0:
            section_no += 1
            title = draw(TITLE)
            head = f"第{numeral(draw, section_no)}节"
            lines.append(f"{draw(INDENT)}{head} {title}")
            section = f"{head} {title}".strip()
        step = draw(st.sampled_from(["next", "next", "zhi", "jump"]))
        if step == "zhi":
            number = (number[0] if number[0] else 1, number[1] + 1)
        else:
            number = (number[0] + (1 if step == "next" else draw(st.integers(2, 500))), 0)
        article_no = f"第{numeral(draw, number[0])}条" + (f"之{int_to_cn(number[1])}" if number[1] else "")
        first = draw(SAFE_LINE)
        lines.append(f"{draw(INDENT)}{article_no}{draw(SEPARATOR)}{first}")
        body = [first]
        for _ in range(draw(st.integers(0, 4))):
            kind = draw(st.sampled_from(["text", "blank", "reference", "chapter_like", "long_chapter"]))
            if kind == "text":
                line = draw(SAFE_LINE)
            elif kind == "blank":
                line = draw(INDENT)
            elif kind == "reference":  # 第X条 at line start with a number that does not go up: not a new article
                line = f"第{numeral(draw, draw(st.integers(1, number[0])))}条{draw(SAFE_LINE)}"
            elif kind == "chapter_like":  # no space after 章: not a heading
                line = f"第{numeral(draw, draw(st.integers(1, 30)))}章{draw(SAFE_LINE)}"
            else:  # over 40 characters: not a heading
                line = f"第{numeral(draw, chapter_no + 1)}章 {'很长的标题' * 9}"
            lines.append(line)
            body.append(line)
        expected.append(Expected(article_no, chapter, section, body))
    newline = draw(st.sampled_from(["\n", "\r\n"]))
    return newline.join(lines) + draw(st.sampled_from(["", "\n"])), expected


@settings(FUZZ, max_examples=150)
@given(statute=statutes())
def test_generated_statutes_split_exactly_as_modelled(statute: tuple[str, list[Expected]]) -> None:
    text, expected = statute
    meta = {"law": "模型法", "source": "file:模型法.txt"}
    docs = split(text, meta)
    check_common(docs, text, meta)
    assert [d.meta["article_no"] for d in docs] == [e.article_no for e in expected]
    assert [d.meta["chapter"] for d in docs] == [e.chapter for e in expected]
    assert [d.meta["section"] for d in docs] == [e.section for e in expected]
    for doc, model in zip(docs, expected, strict=True):
        assert doc.content == "\n".join(line.rstrip() for line in model.body).strip()


# --- uploaded bytes ---------------------------------------------------------------------------------------------------

FILENAME = st.one_of(st.sampled_from(["手册.md", "a.txt", "upload.txt", ".txt", "", "dir/x.md", "无后缀"]),
                     st.text(max_size=20))
UPLOAD = st.one_of(
    st.binary(max_size=300),
    RANDOM_TEXT.map(str.encode),
    st.builds(lambda head, body: (head + body).encode(), st.sampled_from(["", "\ufeff", "# 标题\n", "#\n", "# \n"]),
              RANDOM_TEXT),
    st.sampled_from([b"", b"\xef\xbb\xbf", b"   \n\t", b"\x00", b"ok\x00", b"\xff\xfe\x00a",
                     "第一条 甲".encode("gbk")]),
)


@settings(FUZZ, max_examples=200)
@given(data=UPLOAD, name=FILENAME)
def test_uploaded_bytes_become_a_document_or_a_file_load_error(data: bytes, name: str) -> None:
    try:
        doc = text_document(data, name)
    except FileLoadError as error:
        assert str(error).startswith(f"{name}: ")  # names the file; the reason is one line
        assert str(error)[len(name) + 2:] and "\n" not in str(error)[len(name):]
        assert (Path(name).suffix.lower() not in SUPPORTED_SUFFIXES or data.startswith(tuple(BINARY_SIGNATURES))
                or b"\x00" in data or not data.decode("utf-8-sig", errors="replace").strip() or _not_utf8(data))
        return
    assert Path(name).suffix.lower() in SUPPORTED_SUFFIXES and not data.startswith(tuple(BINARY_SIGNATURES))
    assert b"\x00" not in data
    assert doc.content == data.decode("utf-8-sig") and doc.content.strip()
    assert doc.meta["source"] == f"file:{name}" and doc.meta["filename"] == name
    assert isinstance(doc.meta["law"], str)
    docs = StatuteSplitter().run(documents=[doc])["documents"]  # an accepted upload must also split
    check_common(docs, doc.content, doc.meta)


def _not_utf8(data: bytes) -> bool:
    try:
        data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return True
    return False
