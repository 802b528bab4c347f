from haystack import Document

from components.embedders.bm25_document_encoder import JiebaBM25DocumentEncoder

DOCS = [Document(content="处理个人信息应当取得个人同意。", meta={"law": "个人信息保护法"}),
        Document(content="机动车应当按规定停放。", meta={"law": "道路交通安全法"}),
        Document(content="个人有权撤回其同意。")]


def counting(encoder: JiebaBM25DocumentEncoder) -> list[str]:
    calls: list[str] = []
    tokenize = encoder._tokenizer.tokenize
    encoder._tokenizer.tokenize = lambda text: calls.append(text) or tokenize(text)
    return calls


def test_counting_once_reuses_counts_and_changes_no_weight():
    expected = JiebaBM25DocumentEncoder().run(documents=DOCS, avgdl=12.0)
    encoder = JiebaBM25DocumentEncoder()
    calls = counting(encoder)
    with encoder.counting_once():
        lengths = [sum(encoder.term_counts(doc).values()) for doc in DOCS]  # the indexer's pre-pass
        result = encoder.run(documents=DOCS, avgdl=12.0)
    assert len(calls) == len(DOCS)  # the run reused the pre-pass's counts
    assert lengths == result["lengths"] == expected["lengths"]
    assert [d.sparse_embedding for d in result["documents"]] == [d.sparse_embedding for d in expected["documents"]]
    encoder.run(documents=DOCS)  # outside the block nothing is kept
    assert len(calls) == 2 * len(DOCS)


def test_counting_once_keeps_at_most_what_it_is_allowed():
    encoder = JiebaBM25DocumentEncoder()
    calls = counting(encoder)
    with encoder.counting_once(keep_at_most=1):
        for doc in DOCS:
            encoder.term_counts(doc)
        assert len(encoder._kept) == 1
        encoder.run(documents=DOCS)
    assert len(calls) == len(DOCS) + len(DOCS) - 1
    assert encoder._kept is None
