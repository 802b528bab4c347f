"""JiebaBM25DocumentEncoder: attaches each document's BM25 weights to it as a sparse vector.

Each document gets ``sparse_embedding`` = {term id: ``tf·(k1+1) / (tf + k1·(1 − b + b·dl/avgdl))``} over its
jieba tokens, the document side of Lucene's BM25 (as in Qdrant's own BM25 recipe). The store multiplies by
the IDF itself (a sparse vector with ``modifier=idf``), so a query is just its terms' counts and the same score
comes out of the embedded store and a Qdrant server. ``avgdl`` is the average length of
the collection the documents join (the `Indexer` computes it, keeps it in the source manifest and reweights when
it drifts); without it, the documents' own average is used.

Usage::

    from haystack import Document
    from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder

    encoder = JiebaBM25DocumentEncoder(k1=1.2, b=0.75)
    result = encoder.run(documents=[Document(content="个人信息处理者应当取得个人同意")])
    doc = result["documents"][0]
    print(doc.sparse_embedding.indices, doc.sparse_embedding.values, result["lengths"], result["avgdl"])
"""


import hashlib
from array import array
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from haystack import Document, component

from helpers.text_encoding.jieba_tokenizer import DEFAULT_CHAR_NGRAMS, JiebaTokenizer, term_id
from helpers.text_encoding.sparse_terms import bm25_vector


def bm25_text(doc: Document, meta_fields: list[str]) -> str:
    """The text that BM25 sees: the chosen meta fields followed by the content."""
    parts = [str(doc.meta[name]) for name in meta_fields if doc.meta.get(name)]
    return "\n".join([*parts, doc.content or ""])


@component
class JiebaBM25DocumentEncoder:
    """Computes the BM25 document weights of jieba terms and stores them as each document's sparse embedding.

    :param meta_fields_to_index: meta fields prepended to the content before tokenising (e.g. the law name,
        so that “民法典” in a query matches every article of the civil code).
    :param mode: jieba mode, ``search`` or ``accurate`` (must match the retriever's).
    :param user_dict: jieba user dictionary path; ``None`` = the bundled legal terms, ``""`` = none.
    :param stopwords: stopword list path; ``None`` = the bundled list, ``""`` = none.
    :param char_ngrams: character n-gram sizes indexed besides the words (default unigrams and bigrams;
        ``[]`` = words only; must match the retriever's).
    :param k1: term-frequency saturation (Lucene's default 1.2; higher = repeated terms count more).
    :param b: length normalisation in [0, 1] (0 = none, 1 = full).
    """

    def __init__(
        self,
        meta_fields_to_index: list[str] | None = None,
        mode: str = "search",
        user_dict: str | None = None,
        stopwords: str | None = None,
        char_ngrams: list[int] | None = None,
        k1: float = 1.2,
        b: float = 0.75,
    ) -> None:
        if k1 <= 0 or not 0 <= b <= 1:
            raise ValueError(f"need k1 > 0 and 0 <= b <= 1, got k1={k1}, b={b}")
        self.meta_fields_to_index = meta_fields_to_index if meta_fields_to_index is not None else ["law", "chapter"]
        self.mode = mode
        self.user_dict = user_dict
        self.stopwords = stopwords
        self.char_ngrams = list(DEFAULT_CHAR_NGRAMS) if char_ngrams is None else list(char_ngrams)
        self.k1 = k1
        self.b = b
        self._tokenizer = JiebaTokenizer(mode=mode, user_dict=user_dict, stopwords=stopwords,
                                         char_ngrams=self.char_ngrams)
        self._kept: dict[bytes, tuple[array, array]] | None = None
        self._keep_at_most = 0

    def term_counts(self, doc: Document) -> Counter[int]:
        """{term id: count} of the text BM25 sees for ``doc`` (inside `counting_once`, a text counted before is
        not tokenised again)."""
        text, kept = bm25_text(doc, self.meta_fields_to_index), self._kept
        if kept is None:
            return self._count(text)
        key = hashlib.blake2b(text.encode(), digest_size=16).digest()
        if (known := kept.pop(key, None)) is not None:
            return Counter(dict(zip(*known, strict=True)))
        counts = self._count(text)
        if len(kept) < self._keep_at_most:
            kept[key] = (array("i", counts.keys()), array("i", counts.values()))
        return counts

    @contextmanager
    def counting_once(self, keep_at_most: int = 100_000) -> Iterator[None]:
        """Within the block, the term counts of a text are kept (compactly, up to ``keep_at_most`` texts) until
        it is counted a second time: the `Indexer` counts every article once for the collection's average length,
        then runs the pipeline over the same articles, which need not be tokenised again."""
        self._kept, self._keep_at_most = {}, keep_at_most
        try:
            yield
        finally:
            self._kept, self._keep_at_most = None, 0

    def _count(self, text: str) -> Counter[int]:
        return Counter(term_id(t) for t in self._tokenizer.tokenize(text))

    @component.output_types(documents=list[Document], lengths=list[int], avgdl=float)
    def run(self, documents: list[Document], avgdl: float | None = None) -> dict:
        """Return copies of ``documents`` with ``sparse_embedding`` set (documents with no terms get none).

        :param avgdl: the average length, in terms, of the collection the documents are in (default: theirs).
        :returns: ``documents``, their ``lengths`` in terms (same order) and the ``avgdl`` the weights used.
        """
        counts = [self.term_counts(doc) for doc in documents]
        lengths = [sum(c.values()) for c in counts]
        if avgdl is None:
            avgdl = sum(lengths) / len(lengths) if lengths else 0.0
        output = [replace(doc, sparse_embedding=bm25_vector(c, avgdl or 1.0, self.k1, self.b))
                  for doc, c in zip(documents, counts, strict=True)]
        return {"documents": output, "lengths": lengths, "avgdl": avgdl}
