"""Issue 47's cross-encoder sweep, made to run on the lent GPU machine (`research/gpu_kit.py` packs its input).

A cross-encoder over the kit's e5-small (``<s> query </s> passage </s>``, the first token's state through a linear
head) reranks each question's hybrid top ``depth``. Its score is the head's output plus a learned weight times the
hybrid prior −log(hybrid rank). The head starts at zero, so before any step the ranking is exactly today's hybrid
order, and training moves away from it only where the pairs say so (the issue's "a head whose first ranking equals
the hybrid order").

Training is listwise. Each gold article of a training question forms a group with ``negatives`` non-gold articles:
its neighbours (±3 in the same law, the misses issue 47 describes) first, then the hybrid pool's best non-gold ones.
The loss is the cross-entropy of the gold's place in its group, and ``questions`` groups make a step.

Each config is trained on four folds (`benchmarks.folds`, fixed in the kit) and scores the fifth. It is reported on
all, long (≥ 30 characters) and short questions against the hybrid order: R@10, MRR@10 and R@10 / R@depth (the share
of the pool's gold that reaches the top 10). A line of JSON per config and fold goes to ``OUT/sweep.jsonl`` as soon
as it is done, so a run cut short still returns what it finished. Device kind, seconds and steps are in each line.

Needs torch, transformers, safetensors and numpy only (the device image has them). On the device::

    python3 research/gpu_sweep.py --kit .gpukit --out $OUT                       # the default grid, fold 0
    python3 research/gpu_sweep.py --kit .gpukit --out $OUT --grid best --folds 0,1,2,3,4

Here, a smoke run on CPU (seconds): ``.venv/bin/python research/gpu_sweep.py --smoke``.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np
import torch
from safetensors.torch import load_file
from torch import nn
from transformers import BertConfig, BertModel

from benchmarks.metrics import mean_metrics, query_metrics

LONG = 30
GRIDS = {
    # layers kept, learning rate, negatives per gold, epochs, max tokens per pair
    "default": [{"layers": layers, "lr": lr, "negatives": negatives, "epochs": 3, "max_len": 256}
                for layers, lr, negatives in itertools.product((12, 4), (2e-5, 5e-5), (15, 31))],
    "best": [{"layers": 12, "lr": 2e-5, "negatives": 31, "epochs": 3, "max_len": 256}],
    "cpu": [{"layers": 4, "lr": 5e-5, "negatives": 15, "epochs": 1, "max_len": 192}],  # what 2 cores do in minutes
    "smoke": [{"layers": 1, "lr": 5e-5, "negatives": 3, "epochs": 1, "max_len": 64}],
}


class PairScorer(nn.Module):
    """The kit's BertModel (its first ``layers``), a zero-initialised head on the first token, and the hybrid
    prior's weight."""

    def __init__(self, kit: Path, layers: int) -> None:
        super().__init__()
        config = BertConfig.from_pretrained(str(kit))
        config.num_hidden_layers = layers
        self.bert = BertModel(config, add_pooling_layer=False)
        state = {k: v.float() for k, v in load_file(str(kit / "model.safetensors")).items()
                 if not k.startswith("encoder.layer.") or int(k.split(".")[2]) < layers}
        self.bert.load_state_dict(state)
        self.head = nn.Linear(config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)
        self.prior_weight = nn.Parameter(torch.tensor(1.0))

    def forward(self, ids: torch.Tensor, mask: torch.Tensor, prior: torch.Tensor) -> torch.Tensor:
        first = self.bert(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
        return self.head(first).squeeze(-1).float() + self.prior_weight * prior


class Batcher:
    """Pairs as padded id tensors: ``<s> question </s> article </s>``, cut to ``max_len``."""

    def __init__(self, data: dict, max_len: int, device: torch.device) -> None:
        self.articles, self.special, self.max_len, self.device = data["articles"], data["special"], max_len, device

    def __call__(self, query: list[int], keys: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        q = query[: self.max_len // 3]
        seqs = [[self.special["cls"], *q, self.special["sep"], *self.articles.get(k, [])[: self.max_len - len(q) - 3],
                 self.special["sep"]] for k in keys]
        width = max(map(len, seqs))
        ids = torch.full((len(seqs), width), self.special["pad"], dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, seq in enumerate(seqs):
            ids[row, :len(seq)], mask[row, :len(seq)] = torch.tensor(seq), 1
        return ids.to(self.device), mask.to(self.device)


def prior(question: dict, keys: list[str]) -> torch.Tensor:
    """−log of each article's hybrid rank (an article outside the pool ranks just below it)."""
    rank = {k: r for r, k in enumerate(question["pool"], start=1)}
    return torch.tensor([-math.log(rank.get(k, len(question["pool"]) + 1)) for k in keys])


def groups(question: dict, negatives: int, rng: random.Random) -> list[list[str]]:
    """Per gold article: [gold, its question's hard negatives…]: the gold's neighbours, then the pool's non-gold."""
    gold = set(question["gold"])
    hard = list(dict.fromkeys([*question["neighbours"], *(k for k in question["pool"][:30] if k not in gold)]))
    chosen = hard[:negatives] if len(hard) <= negatives else hard[: negatives // 2] + rng.sample(
        hard[negatives // 2:], negatives - negatives // 2)
    return [[g, *chosen] for g in question["gold"]]


def train_and_score(data: dict, kit: Path, config: dict, fold: int, device: torch.device, questions_per_step: int,
                    limit: int | None) -> dict:
    torch.manual_seed(0)
    rng = random.Random(0)
    train = [q for q in data["questions"] if q["fold"] != fold][:limit]
    test = [q for q in data["questions"] if q["fold"] == fold][: limit // 4 if limit else None]
    model = PairScorer(kit, config["layers"]).to(device)
    batch = Batcher(data, config["max_len"], device)
    steps = config["epochs"] * math.ceil(len(train) / questions_per_step)
    optimiser = torch.optim.AdamW(model.parameters(), lr=config["lr"], weight_decay=0.01)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimiser, lambda s: min((s + 1) / warmup, max(0.0, (steps - s)
                                                                                             / (steps - warmup + 1))))
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda")
    started, curve = time.perf_counter(), []
    target = torch.zeros(1, dtype=torch.long, device=device)  # the gold is first in its group
    progress_every = max(1, steps // 20)
    model.train()
    for epoch in range(config["epochs"]):
        order = rng.sample(train, len(train))
        for start in range(0, len(order), questions_per_step):
            step = [(q, g) for q in order[start:start + questions_per_step]
                    for g in groups(q, config["negatives"], rng)]
            loss = 0.0
            for question, group in step:  # one group's graph at a time: memory of one group, not of the step
                with autocast:
                    ids, mask = batch(question["ids"], group)
                    scores = model(ids, mask, prior(question, group).to(device))
                    group_loss = nn.functional.cross_entropy(scores[None], target) / len(step)
                group_loss.backward()
                loss += float(group_loss.detach())
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimiser.step()
            schedule.step()
            optimiser.zero_grad()
            done = epoch * math.ceil(len(train) / questions_per_step) + start // questions_per_step + 1
            if done % progress_every == 0:
                print(f"  step {done}/{steps}: loss {loss:.4f}, {time.perf_counter() - started:.0f} s", flush=True)
        scored = score(model, test, batch, device)  # after the last epoch: the result
        curve.append({"epoch": epoch + 1, "loss": round(loss, 4), **scored["all"]})
    seconds = time.perf_counter() - started
    return {**config, "fold": fold, "train_questions": len(train), "test_questions": len(test), "steps": steps,
            "train_seconds": round(seconds, 1), "prior_weight": float(model.prior_weight.detach()), "curve": curve,
            **scored}


@torch.no_grad()
def score(model: PairScorer, test: list[dict], batch: Batcher, device: torch.device) -> dict:
    """R@10, MRR@10 and R@10 / R@depth of the reranked pools and of the hybrid order, on all, long, short."""
    model.eval()
    rows = []
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=device.type == "cuda"):
        for question in test:
            pool = question["pool"]
            ids, mask = batch(question["ids"], pool)
            scores = model(ids, mask, prior(question, pool).to(device)).float().cpu().numpy()
            reranked = [pool[j] for j in np.argsort(-scores, kind="stable")]
            rows.append((len(question["query"]), query_metrics(reranked, question["gold"]),
                         query_metrics(pool, question["gold"])))
    model.train()
    out = {}
    for label, keep in (("all", lambda n: True), ("long", lambda n: n >= LONG), ("short", lambda n: n < LONG)):
        chosen = [r for r in rows if keep(r[0])]
        if not chosen:
            continue
        new, old = mean_metrics([r[1] for r in chosen]), mean_metrics([r[2] for r in chosen])
        out[label] = {"n": len(chosen), "R@10": round(new["R@10"], 4), "MRR@10": round(new["MRR@10"], 4),
                      "hybrid R@10": round(old["R@10"], 4), "hybrid MRR@10": round(old["MRR@10"], 4),
                      "R@10 / pool": round(new["R@10"] / old["R@100"], 4) if old["R@100"] else None}
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kit", default=".gpukit")
    parser.add_argument("--out", default="research/reports")
    parser.add_argument("--grid", choices=sorted(GRIDS), default="default")
    parser.add_argument("--folds", default="0")
    parser.add_argument("--questions-per-step", type=int, default=16)
    parser.add_argument("--budget-seconds", type=float, default=480.0,
                        help="start no new config after this many seconds (a device call lasts 10 min at most)")
    parser.add_argument("--smoke", action="store_true", help="a few questions, one tiny config, on CPU: the code runs")
    args = parser.parse_args()
    kit = Path(args.kit)
    with gzip.open(kit / "data.json.gz", "rt", encoding="utf-8") as handle:
        data = json.load(handle)
    device = torch.device("cuda" if torch.cuda.is_available() and not args.smoke else "cpu")
    configs, limit = (GRIDS["smoke"], 16) if args.smoke else (GRIDS[args.grid], None)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    kind = torch.cuda.get_device_name() if device.type == "cuda" else "cpu"
    with (out / "sweep.jsonl").open("a", encoding="utf-8") as log:
        for config, fold in itertools.product(configs, [int(f) for f in args.folds.split(",")]):
            if time.perf_counter() - started > args.budget_seconds:
                print(f"budget spent: {config} fold {fold} not run", flush=True)
                continue
            result = train_and_score(data, kit, config, fold, device, args.questions_per_step, limit)
            result["device"] = kind
            log.write(json.dumps(result, ensure_ascii=False) + "\n")
            log.flush()
            print(json.dumps({k: result[k] for k in ("layers", "lr", "negatives", "epochs", "fold", "train_seconds",
                                                     "all")}), flush=True)


if __name__ == "__main__":
    main()
