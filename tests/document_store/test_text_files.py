"""Plain-text sources: a .txt/.md file or uploaded bytes as one whole-text Document (title, source, file name), the
one-line `FileLoadError` for each way a file is refused, and the reduction of a client's file name. Random bytes
and names are fuzzed in tests/fuzz/test_splitter_fuzz.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from document_store.text_files import (
    MAX_FILE_BYTES,
    MAX_NAME_CHARS,
    FileLoadError,
    check_suffix,
    load_text_file,
    text_document,
    upload_name,
)

RULES = "第一条 员工请假需提前三天申请。\n第二条 病假需提供证明。\n"


def test_a_file_is_read_whole_and_named_by_its_first_heading(tmp_path: Path) -> None:
    path = tmp_path / "规章.md"
    path.write_text(f"前言\n## 小节\n#没有空格\n# 员工手册 \n# 第二个标题\n{RULES}", encoding="utf-8")
    doc = load_text_file(path)
    assert doc.content == path.read_text(encoding="utf-8")
    assert doc.meta == {"law": "员工手册", "source": "file:规章.md", "filename": "规章.md"}


def test_without_a_heading_the_title_is_the_file_name_without_its_suffix(tmp_path: Path) -> None:
    path = tmp_path / "公司规章.v2.TXT"
    path.write_bytes(("\ufeff# \n" + RULES).encode("utf-8"))  # a BOM, and an empty heading
    doc = load_text_file(str(path))
    assert doc.content == "# \n" + RULES  # the BOM is not text
    assert doc.meta["law"] == "公司规章.v2"


def test_a_source_name_replaces_the_file_name(tmp_path: Path) -> None:
    path = tmp_path / "tmp123.txt"
    path.write_text(RULES, encoding="utf-8")
    doc = load_text_file(path, source_name="员工手册.md")
    assert doc.meta == {"law": "员工手册", "source": "file:员工手册.md", "filename": "员工手册.md"}


def test_a_missing_file_or_a_folder_is_a_one_line_error(tmp_path: Path) -> None:
    with pytest.raises(FileLoadError, match=r"不存在\.md: file not found$"):
        load_text_file(tmp_path / "不存在.md")
    (tmp_path / "目录.md").mkdir()
    with pytest.raises(FileLoadError, match=r"目录\.md: is a directory, not a file$"):
        load_text_file(tmp_path / "目录.md")


def test_the_suffix_is_checked_before_the_file_is_read(tmp_path: Path) -> None:
    with pytest.raises(FileLoadError, match=r"^合同\.pdf: unsupported file type \.pdf; use \.txt or \.md$"):
        load_text_file(tmp_path / "合同.pdf")  # not there either: the type is what is wrong
    with pytest.raises(FileLoadError, match=r"^README: unsupported file type \(none\); use \.txt or \.md$"):
        check_suffix("README")
    check_suffix("笔记.Md")  # any case


@pytest.mark.parametrize(("data", "reason"), [
    (b"%PDF-1.7\n...", "the content is a PDF, not text"),
    (b"PK\x03\x04docx", "the content is a ZIP or Office (.docx/.xlsx) file, not text"),
    (b"\x89PNG\r\n", "the content is a PNG image, not text"),
    ("第一条\x00".encode(), "looks like a binary file"),
    ("第一条 员工请假".encode("gbk"), "not valid UTF-8 (byte 0); convert it to UTF-8 first"),
    ("第一条".encode() + b"\xff", "not valid UTF-8 (byte 9)"),
    (b"", "file is empty"),
    (" \n\t\u3000\n".encode(), "file is empty"),
    (b"\xef\xbb\xbf", "file is empty"),
])
def test_content_that_is_not_text_is_refused_saying_what_it_is(data: bytes, reason: str) -> None:
    with pytest.raises(FileLoadError) as refused:
        text_document(data, "手册.txt")
    assert str(refused.value).startswith(f"手册.txt: {reason}")
    assert "\n" not in str(refused.value)


def test_the_size_limit_is_inclusive() -> None:
    assert text_document(b"a" * MAX_FILE_BYTES, "big.txt").content == "a" * MAX_FILE_BYTES
    with pytest.raises(FileLoadError, match=rf"^big\.txt: {MAX_FILE_BYTES + 1} bytes is over the {MAX_FILE_BYTES} "):
        text_document(b"a" * (MAX_FILE_BYTES + 1), "big.txt")


def test_an_uploaded_name_is_checked_too() -> None:
    with pytest.raises(FileLoadError, match="unsupported file type .docx"):
        text_document(RULES.encode(), "规章.docx")


@pytest.mark.parametrize(("given", "kept"), [
    ("../../etc/员工手册.md", "员工手册.md"),
    ("C:\\Users\\张三\\规章.txt", "规章.txt"),
    (".env.md", "env.md"),  # no hidden file
    ("  名 字.md  ", "名 字.md"),
    ("a\x00b\x1b\u202e.md", "ab.md"),  # control and direction characters dropped
    ("x.md/", "x.md"),
    (None, "upload.txt"), ("", "upload.txt"), ("...", "upload.txt"), ("../", "upload.txt"), ("\x07", "upload.txt"),
])
def test_an_upload_name_is_reduced_to_a_plain_base_name(given: str | None, kept: str) -> None:
    assert upload_name(given) == kept


def test_a_long_upload_name_is_cut() -> None:
    assert upload_name("条" * (MAX_NAME_CHARS + 50)) == "条" * MAX_NAME_CHARS


def test_a_long_upload_name_keeps_its_suffix() -> None:
    name = upload_name("员工手册" * 60 + ".md")
    assert len(name) <= MAX_NAME_CHARS and name.endswith(".md")
    assert text_document(RULES.encode(), name).content == RULES
