"""What the Edge store does so that its first searches after opening are not cold: ask the kernel to read the
payload files once (`read_payloads`) and search the HNSW graph a few times (`warm_graph`). The store's
`preload()` (a pipeline's warm-up) runs both.

Usage::

    from document_store.edge_warmup import read_payloads, warm_graph
    read_payloads("data/edge/statutes")                      # bytes read (the OS now caches them)
    warm_graph(shard, "text-dense", 384, hnsw_ef=1024)       # ~1 s on 1,000,000 articles
"""

from __future__ import annotations

import math
import random
import time
from pathlib import Path

import qdrant_edge as edge
from haystack import logging

logger = logging.getLogger(__name__)


# The first searches over a graph after the shard opens, or after the search cache was filled, run cold: on
# 1,000,000 articles the first 50 engine searches took 20–100 ms each, later ones ~10 ms, with no page read from disk.
# `warm_graph` runs this many searches for random unit vectors (~1 s there); after it the first 100 questions' engine
# searches had p95 12.5 ms, after 20 searches 21.7 ms (benchmarks/reports/scale_edge.md).
GRAPH_WARM_SEARCHES = 50
GRAPH_WARM_SECONDS = 3.0  # at most: a shard not yet optimised searches exactly (~150 ms a search on 1,000,000)


def warm_graph(shard: edge.EdgeShard, vectors: str, dimension: int, hnsw_ef: int) -> None:
    """Search ``shard``'s graph of the dense ``vectors`` `GRAPH_WARM_SEARCHES` times with random unit vectors
    (for at most `GRAPH_WARM_SECONDS`)."""
    rng = random.Random(0)
    deadline = time.monotonic() + GRAPH_WARM_SECONDS
    for _ in range(GRAPH_WARM_SEARCHES):
        if time.monotonic() > deadline:
            return
        vector = [rng.gauss(0.0, 1.0) for _ in range(dimension)]
        norm = math.sqrt(sum(x * x for x in vector))
        shard.query(edge.QueryRequest(limit=10, query=edge.Query.Nearest([x / norm for x in vector], using=vectors),
                                      params=edge.SearchParams(hnsw_ef=hnsw_ef), with_payload=False,
                                      with_vector=False))


# A search reads its hits' payloads from disk where the OS has not cached them. Edge does not pre-warm them although
# the shard asks for `Cached` payloads: on 1,000,000 articles (677 MiB of payloads) the first 100 dense questions
# took ~9,500 page faults from disk (70 MiB of payload pages read ahead around each hit, 15 MiB of their tracker).
# Reading the files once beforehand took 0.5 s there and leaves them in the OS's page cache; the pages a search then
# maps count in the process's RSS (+380 MiB there, reclaimable). Dense p95 over those questions
# (benchmarks/reports/scale_edge.md; files in the page cache / evicted first): no warm-up 55 / 71 ms, the graph
# warmed 37 / 42, the payloads read 31 / 43, both 27 / 49 (the disk is noisy). Stores with more payload than this
# read only this much.
PAYLOAD_READ_LIMIT = 2 << 30
PAYLOAD_FILES = "segments/*/payload_storage/*"


def read_payloads(path: str | Path, limit: int = PAYLOAD_READ_LIMIT) -> int:
    """Read the payload files of the shard in ``path`` once (at most ``limit`` bytes), so that the OS caches them;
    returns the bytes read. Unreadable files are skipped."""
    buffer, total = memoryview(bytearray(8 << 20)), 0
    for file in sorted(Path(path).glob(PAYLOAD_FILES)):
        try:
            with open(file, "rb", buffering=0) as handle:
                while total < limit and (count := handle.readinto(buffer[:limit - total])):
                    total += count
        except OSError as error:
            logger.debug("cannot read {file} ahead: {error}", file=str(file), error=error)
        if total >= limit:
            break
    return total
