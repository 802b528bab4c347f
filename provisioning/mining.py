"""Hard negatives for the embedder's fine-tuning, mined without a dense index of the corpus.

A question's candidates are its top ``pool`` articles by BM25 over the whole corpus (the jieba terms and weights
indexing writes, the IDF the store applies: `helpers.text_encoding.sparse_terms.BM25Matrix`), ranked a second time
by the base embedder, which runs on those candidates only; the two rankings are fused as retrieval fuses its paths
(`RRFJoiner`, equal weights) and the best-ranked non-gold article of the fused top ``depth`` is the hard negative
(`provisioning.embedder_training.training_rows`). So set-up encodes the corpus once, with the adapted embedder:
the base model sees the union of the pools (a few thousand articles for STARD train), not the 23,490 articles
that the former recipe indexed with it only to mine (`benchmarks/reports/setup.md` compares the two, out of fold).

Usage::

    articles = corpus_articles(law_sources(["all"]))
    candidates = mine_candidates(pairs, articles, settings)   # per question: fused candidates, best first
    rows = training_rows(pairs, candidates, {d.meta["key"]: d for d in articles}, "query: ", "passage: ")
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from haystack import Document
from tqdm import tqdm

from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder
from components.joiners.rrf_joiner import RRFJoiner
from components.preprocessors.statute_splitter import StatuteSplitter
from config.settings import Settings
from helpers.records.contracts import RetrievalPath
from helpers.records.ranking import Ranking
from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer
from helpers.text_encoding.sparse_terms import BM25Matrix
from pipelines.embedders import document_embedder, text_embedder
from provisioning.training_pairs import Pair

if TYPE_CHECKING:
    from pipelines.indexing import Source

MINING_POOL = 30  # BM25 candidates per question that the base embedder ranks again
MINING_DEPTH = 10  # fused candidates a hard negative is taken from
EMBED_CHUNK = 256  # articles per embedder call (a progress step)


def corpus_articles(sources: Sequence[Source]) -> list[Document]:
    """The articles indexing would write for ``sources`` (split as the indexing pipeline splits them)."""
    splitter = StatuteSplitter()
    return [doc for source in sources for doc in splitter.run(documents=source.documents)["documents"]]


def bm25_pools(queries: list[str], articles: list[Document], settings: Settings, pool: int,
               progress: bool = False) -> list[list[int]]:
    """Each query's top ``pool`` article indexes by BM25 over ``articles`` (best first; articles without a match
    are left out)."""
    weighted = JiebaBM25DocumentEncoder(k1=settings.bm25_k1, b=settings.bm25_b).run(documents=articles)["documents"]
    matrix = BM25Matrix([doc.sparse_embedding for doc in weighted])
    tokenizer = JiebaTokenizer()  # the BM25 retriever's defaults, as the encoder's
    pools = []
    for query in tqdm(queries, desc="BM25 candidates", disable=not progress):
        scores = matrix.scores(tokenizer.tokenize(query))
        hits = np.flatnonzero(scores > 0)
        if hits.size > pool:
            hits = hits[np.argpartition(-scores[hits], pool)[:pool]]
        pools.append([int(i) for i in hits[np.argsort(-scores[hits], kind="stable")]])
    return pools


def mine_candidates(pairs: list[Pair], articles: list[Document], settings: Settings, pool: int = MINING_POOL,
                    depth: int = MINING_DEPTH, progress: bool = False) -> list[list[Document]]:
    """Per question, its fused top ``depth`` candidates: BM25's top ``pool`` and the same articles ranked by
    ``settings``' embedder (the base model), fused by RRF."""
    if pool < 1 or depth < 1:
        raise ValueError(f"pool and depth must be >= 1, got pool={pool}, depth={depth}")
    queries = [pair.query for pair in pairs]
    pools = bm25_pools(queries, articles, settings, pool, progress)
    unique = sorted({i for ranked in pools for i in ranked})
    embedder = document_embedder(settings)
    embedder.warm_up()
    vectors: dict[int, np.ndarray] = {}
    with tqdm(total=len(unique), desc="embedding candidates", unit="article", disable=not progress) as bar:
        for start in range(0, len(unique), EMBED_CHUNK):
            chunk = unique[start:start + EMBED_CHUNK]
            embedded = embedder.run(documents=[articles[i] for i in chunk])["documents"]
            vectors.update((i, np.asarray(doc.embedding, dtype=np.float32)) for i, doc in zip(chunk, embedded,
                                                                                              strict=True))
            bar.update(len(chunk))
    questions = text_embedder(settings)
    questions.warm_up()
    joiner = RRFJoiner(top_k=depth)
    mined = []
    for query, ranked in tqdm(list(zip(queries, pools, strict=True)), desc="mining hard negatives",
                              disable=not progress):
        if not ranked:
            mined.append([])
            continue
        embedding = np.asarray(questions.run(text=query)["embedding"], dtype=np.float32)
        similarity = np.stack([vectors[i] for i in ranked]) @ embedding  # both normalised: cosine
        by_dense = [ranked[j] for j in np.argsort(-similarity, kind="stable")]
        rankings = [Ranking(RetrievalPath.BM25.value, query, [articles[i] for i in ranked]),
                    Ranking(RetrievalPath.DENSE.value, query, [articles[i] for i in by_dense])]
        mined.append(joiner.run(rankings=[rankings])["documents"])
    return mined
