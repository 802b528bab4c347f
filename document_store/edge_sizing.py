"""How the Edge store configures its shard and sizes its search: exact below `EXACT_BELOW` articles, an HNSW graph
above, and the graph's search beam width (``hnsw_ef``) by the number of articles, for recall ≥ 0.99 of the exact search.

Usage::

    from document_store.edge_sizing import search_ef
    search_ef(23_995)      # 512
    search_ef(1_000_000)   # 1024
"""

from __future__ import annotations

import json
from pathlib import Path

import qdrant_edge as edge
from haystack_integrations.document_stores.qdrant.converters import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME

HNSW_FULL_SCAN_KB = 10_000  # Qdrant's default: a filtered search over fewer vectors' kilobytes scans exactly
# From this many articles on, `optimize()` builds an HNSW graph; below, searches are exact (~2.5 ms; scale_edge.md)
EXACT_BELOW = 10_000
# The HNSW beam width of a search. On the statute corpus with the STARD questions (filtered to articles in force):
# recall of the exact search's top 10 / top 100 0.999 / 0.995 at 3.4 ms against 6.8 ms exact; at 256, 0.997 / 0.978
# (2.0 ms), which moved hybrid R@10 by 0.002 (the hybrid fuses each path's top 100).
# benchmarks/reports/retrieval_edge.md
HNSW_EF = 512
# Larger stores need a wider beam (benchmarks/reports/scale_edge.md, recall@10 against exact at hnsw_ef 512 / 1024):
# 300,000 articles 0.995 / 1.000 (3.5 / 6.3 ms), 1,000,000 0.975 / 0.990 (6.0 / 14.8 ms).
WIDER_EF_FROM = 300_000
WIDER_EF = 1024

# What a search reads (dense vectors, the graph, payloads, the id tracker) is mapped from disk and pre-warmed into the
# OS page cache when the shard opens (Edge's `Cached` placement; payloads default to `Cold`, read on first use). On
# 300,000 articles with the shard's files evicted from the page cache, the dense path's p50 / p95 went from 52 / 167
# to 29–32 / 37–48 ms (25 / 31 warm); on 1,000,000 from 126 / 275 to 50–110 / 70–235
# (benchmarks/reports/scale_edge.md, "Cold pages").
WARM = edge.Memory.Cached


def search_ef(points: int) -> int:
    """The ``hnsw_ef`` a search over a shard of ``points`` articles uses."""
    return WIDER_EF if points >= WIDER_EF_FROM else HNSW_EF


def shard_config(embedding_dim: int, hnsw_m: int, hnsw_ef_construct: int, exact_below: int) -> edge.EdgeConfig:
    """A shard's configuration: cosine dense vectors of ``embedding_dim``, BM25 sparse vectors with the IDF
    modifier, an HNSW graph (``hnsw_m`` = 0: none) built once a segment holds ``exact_below`` articles."""
    hnsw = edge.HnswIndexConfig(m=hnsw_m, ef_construct=hnsw_ef_construct, full_scan_threshold=HNSW_FULL_SCAN_KB,
                                memory=WARM)
    dense = edge.EdgeVectorParams(size=embedding_dim, distance=edge.Distance.Cosine, memory=WARM)
    sparse = edge.EdgeSparseVectorParams(modifier=edge.Modifier.Idf)
    # the engine keeps a segment whose vectors take fewer kilobytes than this without a graph (exact search)
    plain_kb = -(-exact_below * embedding_dim * 4 // 1024)
    return edge.EdgeConfig(vectors={DENSE_VECTORS_NAME: dense}, sparse_vectors={SPARSE_VECTORS_NAME: sparse},
                           hnsw_config=hnsw, optimizers=edge.EdgeOptimizersConfig(indexing_threshold=plain_kb),
                           payload_memory=WARM, id_tracker_memory=WARM)


def stored_dense_size(config_file: Path) -> int | None:
    """The dense size a shard's config file records (None where there is no file or it does not say)."""
    try:
        return int(json.loads(config_file.read_text())["vectors"][DENSE_VECTORS_NAME]["size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
