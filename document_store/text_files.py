"""Plain-text sources (.txt / .md) read into whole-text Documents for the `StatuteSplitter`.

Usage::

    from document_store.text_files import load_text_file
    doc = load_text_file("docs/公司规章.txt")   # Document(meta={"law": "公司规章", "source": "file:公司规章.txt"})
"""

from __future__ import annotations

from pathlib import Path

from haystack import Document

SUPPORTED_SUFFIXES = (".txt", ".md")
MAX_FILE_BYTES = 20 * 1024 * 1024
MAX_NAME_CHARS = 200


class FileLoadError(ValueError):
    """A file cannot be used as a source; the message says why in one line."""


def load_text_file(path: str | Path, *, source_name: str | None = None) -> Document:
    """Read a UTF-8 .txt/.md file; the title is the first Markdown heading or the file name.

    :param source_name: the name the source is known by (defaults to the file name); re-indexing a source
        with the same name replaces its previous articles.
    """
    path = Path(path)
    check_suffix(path.name)
    try:
        data = path.read_bytes()
    except FileNotFoundError as error:
        raise FileLoadError(f"{path}: file not found") from error
    except IsADirectoryError as error:
        raise FileLoadError(f"{path}: is a directory, not a file") from error
    except OSError as error:
        raise FileLoadError(f"{path}: cannot read ({error.strerror})") from error
    return text_document(data, source_name or path.name)


def upload_name(filename: str | None) -> str:
    """A client-supplied file name reduced to a plain base name: no folders (``../``), no control characters."""
    name = Path((filename or "").replace("\\", "/")).name
    name = "".join(ch for ch in name if ch.isprintable()).strip().lstrip(".")
    if len(name) > MAX_NAME_CHARS:  # cut the stem, keep the suffix that says what the file is
        suffix = Path(name).suffix if len(Path(name).suffix) <= 10 else ""
        name = name[: MAX_NAME_CHARS - len(suffix)] + suffix
    return name or "upload.txt"


# what a file really is when its first bytes say so, whatever its name claims
BINARY_SIGNATURES = {b"%PDF-": "a PDF", b"PK\x03\x04": "a ZIP or Office (.docx/.xlsx) file",
                     b"\xd0\xcf\x11\xe0": "an old Office (.doc/.xls) file", b"{\\rtf": "an RTF file",
                     b"\x89PNG": "a PNG image", b"\xff\xd8\xff": "a JPEG image", b"GIF8": "a GIF image",
                     b"\x1f\x8b": "a gzip archive", b"7z\xbc\xaf": "a 7z archive", b"Rar!": "a RAR archive"}


def check_suffix(name: str) -> None:
    """Refuse a file whose name is not .txt or .md (one-line `FileLoadError`)."""
    suffix = Path(name).suffix.lower()
    if suffix not in SUPPORTED_SUFFIXES:
        raise FileLoadError(f"{name}: unsupported file type {suffix or '(none)'}; use .txt or .md")


def text_document(data: bytes, name: str) -> Document:
    """Validate raw bytes of an uploaded or read file and wrap them as a Document: a .txt/.md name, and content
    that is UTF-8 text (not a PDF, an Office file, an image or an archive under another name)."""
    check_suffix(name)
    if len(data) > MAX_FILE_BYTES:
        raise FileLoadError(f"{name}: {len(data)} bytes is over the {MAX_FILE_BYTES} byte limit")
    if kind := next((kind for magic, kind in BINARY_SIGNATURES.items() if data.startswith(magic)), None):
        raise FileLoadError(f"{name}: the content is {kind}, not text; only UTF-8 text (.txt/.md) is supported")
    if b"\x00" in data:
        raise FileLoadError(f"{name}: looks like a binary file; only UTF-8 text (.txt/.md) is supported")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise FileLoadError(f"{name}: not valid UTF-8 (byte {error.start}); convert it to UTF-8 first") from error
    if not text.strip():
        raise FileLoadError(f"{name}: file is empty")
    title = Path(name).stem
    for line in text.splitlines():
        if line.startswith("# "):
            title = line[2:].strip() or title
            break
    return Document(content=text, meta={"law": title, "source": f"file:{name}", "filename": name})
