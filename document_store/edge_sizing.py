"""How the Edge store sizes its search: exact below `EXACT_BELOW` articles, an HNSW graph above, and the graph's
search beam width (``hnsw_ef``) by the number of articles, for recall ≥ 0.99 of the exact search.

Usage::

    from document_store.edge_sizing import search_ef
    search_ef(23_995)      # 512
    search_ef(1_000_000)   # 1024
"""

from __future__ import annotations

import qdrant_edge as edge

HNSW_FULL_SCAN_KB = 10_000  # Qdrant's default: a filtered search over fewer vectors' kilobytes scans exactly
# From this many articles on, `optimize()` builds an HNSW graph; below, searches are exact (~2.5 ms; scale_edge.md)
EXACT_BELOW = 10_000
# The HNSW beam width of a search. On the statute corpus with the STARD questions (filtered to articles in force):
# recall of the exact search's top 10 / top 100 0.999 / 0.995 at 3.4 ms against 6.8 ms exact; at 256, 0.997 / 0.978
# (2.0 ms), which moved hybrid R@10 by 0.002 (the hybrid fuses each path's top 100). benchmarks/reports/retrieval_edge.md
HNSW_EF = 512
# Larger stores need a wider beam (benchmarks/reports/scale_edge.md, recall@10 against exact at hnsw_ef 512 / 1024):
# 300,000 articles 0.995 / 1.000 (3.5 / 6.3 ms), 1,000,000 0.975 / 0.990 (6.0 / 14.8 ms).
WIDER_EF_FROM = 300_000
WIDER_EF = 1024

# What a search reads (dense vectors, the graph, payloads, the id tracker) is mapped from disk and pre-warmed into the
# OS page cache when the shard opens (Edge's `Cached` placement; payloads default to `Cold`, read on first use). On
# 300,000 articles with the shard's files evicted from the page cache, the dense path's p50 / p95 went from 52 / 167
# to 29–32 / 37–48 ms (25 / 31 warm); on 1,000,000 from 126 / 275 to 50–110 / 70–235 (research/edge_cold_pages.py).
WARM = edge.Memory.Cached


def search_ef(points: int) -> int:
    """The ``hnsw_ef`` a search over a shard of ``points`` articles uses."""
    return WIDER_EF if points >= WIDER_EF_FROM else HNSW_EF
