"""JiebaBM25DocumentEncoder: attaches BM25 term statistics to documents as sparse vectors.

Each document gets ``sparse_embedding`` = {term id: term frequency} over its jieba tokens. Raw term
frequencies (not pre-weighted scores) are stored, so the BM25 weights (k1, b, average length, IDF) are
computed at query time from whatever the store holds: adding documents never leaves stale weights.

Usage::

    from haystack import Document
    from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder

    encoder = JiebaBM25DocumentEncoder()
    doc = encoder.run(documents=[Document(content="个人信息处理者应当取得个人同意")])["documents"][0]
    print(doc.sparse_embedding.indices, doc.sparse_embedding.values)
"""


from collections import Counter
from dataclasses import replace

from haystack import Document, component
from haystack.dataclasses import SparseEmbedding

from helpers.jieba_tokenizer import DEFAULT_CHAR_NGRAMS, JiebaTokenizer, term_id


def bm25_text(doc: Document, meta_fields: list[str]) -> str:
    """The text that BM25 sees: the chosen meta fields followed by the content."""
    parts = [str(doc.meta[name]) for name in meta_fields if doc.meta.get(name)]
    return "\n".join([*parts, doc.content or ""])


@component
class JiebaBM25DocumentEncoder:
    """Computes jieba term frequencies of each document and stores them as its sparse embedding.

    :param meta_fields_to_index: meta fields prepended to the content before tokenising (e.g. the law name,
        so that “民法典” in a query matches every article of the civil code).
    :param mode: jieba mode, ``search`` or ``accurate`` (must match the retriever's).
    :param user_dict: jieba user dictionary path; ``None`` = the bundled legal terms, ``""`` = none.
    :param stopwords: stopword list path; ``None`` = the bundled list, ``""`` = none.
    :param char_ngrams: character n-gram sizes indexed besides the words (default unigrams and bigrams;
        ``[]`` = words only; must match the retriever's).
    """

    def __init__(
        self,
        meta_fields_to_index: list[str] | None = None,
        mode: str = "search",
        user_dict: str | None = None,
        stopwords: str | None = None,
        char_ngrams: list[int] | None = None,
    ) -> None:
        self.meta_fields_to_index = meta_fields_to_index if meta_fields_to_index is not None else ["law", "chapter"]
        self.mode = mode
        self.user_dict = user_dict
        self.stopwords = stopwords
        self.char_ngrams = list(DEFAULT_CHAR_NGRAMS) if char_ngrams is None else list(char_ngrams)
        self._tokenizer = JiebaTokenizer(mode=mode, user_dict=user_dict, stopwords=stopwords,
                                         char_ngrams=self.char_ngrams)

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, list[Document]]:
        """Return copies of ``documents`` with ``sparse_embedding`` set (documents with no terms get none)."""
        output = []
        for doc in documents:
            counts = Counter(term_id(t) for t in self._tokenizer.tokenize(bm25_text(doc, self.meta_fields_to_index)))
            indices = sorted(counts)
            sparse = SparseEmbedding(indices=indices, values=[float(counts[i]) for i in indices]) if indices else None
            output.append(replace(doc, sparse_embedding=sparse))
        return {"documents": output}
