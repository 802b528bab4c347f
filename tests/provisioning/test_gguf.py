"""`provisioning.gguf`: the GGUF assembled from its slices, in the kernel or through a buffer."""

import errno
import os
from pathlib import Path

import pytest

from provisioning import gguf
from provisioning.gguf import assemble_gguf


@pytest.fixture
def slices(tmp_path: Path) -> tuple[list[Path], bytes]:
    """Three slices of a small GGUF-looking file (the first starts with the magic), and their concatenation."""
    contents = [b"GGUF" + os.urandom(70_000), os.urandom(1), os.urandom(123_457)]
    paths = []
    for number, content in enumerate(contents, start=1):
        path = tmp_path / f"part{number}"
        path.write_bytes(content)
        paths.append(path)
    return paths, b"".join(contents)


def test_the_slices_are_concatenated_in_order(slices, tmp_path):
    parts, whole = slices
    target = assemble_gguf(tmp_path / "models" / "m.gguf", parts=parts, expected_size=len(whole))
    assert target.read_bytes() == whole
    assert not target.with_name("m.gguf.partial").exists()


def test_where_the_kernel_copy_stops_the_buffered_copy_goes_on_from_there(slices, tmp_path, monkeypatch):
    """A file system that cannot copy between these files (EXDEV) part-way through one slice."""
    parts, whole = slices
    kernel_copy = os.copy_file_range
    calls = []

    def stops_after_one_call(src: int, dst: int, count: int) -> int:
        calls.append(count)
        if len(calls) > 1:
            raise OSError(errno.EXDEV, "Invalid cross-device link")
        return kernel_copy(src, dst, min(count, 1000))

    monkeypatch.setattr(gguf.os, "copy_file_range", stops_after_one_call)
    target = assemble_gguf(tmp_path / "m.gguf", parts=parts, expected_size=len(whole))
    assert target.read_bytes() == whole
    assert len(calls) > 1  # the kernel copy did stop mid-slice


def test_a_wrong_size_is_refused_and_nothing_is_left(slices, tmp_path):
    parts, whole = slices
    with pytest.raises(RuntimeError, match="invalid"):
        assemble_gguf(tmp_path / "m.gguf", parts=parts, expected_size=len(whole) + 1)
    assert list(tmp_path.glob("m.gguf*")) == []


def test_an_assembled_file_is_kept_as_it_is(slices, tmp_path):
    parts, whole = slices
    target = assemble_gguf(tmp_path / "m.gguf", parts=parts, expected_size=len(whole))
    before = target.stat().st_mtime_ns
    assert assemble_gguf(target, parts=[], expected_size=len(whole)) == target
    assert target.stat().st_mtime_ns == before
