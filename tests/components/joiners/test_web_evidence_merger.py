"""WebEvidenceMerger: the web search's three outputs as one `WebOutcome` (the selector's use of it is in
tests/helpers/records/test_rounds.py and test_evidence_selector.py)."""

from haystack import Document, Pipeline

from components.joiners.web_evidence_merger import WebEvidenceMerger
from helpers.records.rounds import WebOutcome

PAGE = Document(content="收集个人信息一般需要取得同意。", meta={"url": "https://example.cn/pipl", "source": "web"})


def test_the_results_status_and_message_travel_together_and_the_message_defaults_to_empty() -> None:
    web = WebEvidenceMerger().run(documents=[PAGE], status="ok")["web"]
    assert web == WebOutcome(documents=[PAGE], status="ok", message="")
    assert web.summary() == {"status": "ok", "message": "",
                             "results": [{"key": "https://example.cn/pipl", "score": None, "paths": []}]}


def test_the_outcome_keeps_its_own_list_of_results() -> None:
    """The web search's list may be reused after the merge; the outcome the selector reads must not change with it."""
    found = [PAGE]
    web = WebEvidenceMerger().run(documents=found, status="ok")["web"]
    found.append(Document(content="另一条结果"))
    assert web.documents == [PAGE]


def test_in_a_pipeline_it_emits_one_web_socket() -> None:
    pipeline = Pipeline()
    pipeline.add_component("merger", WebEvidenceMerger())
    out = pipeline.run({"merger": {"documents": [], "status": "unavailable", "message": "未配置 SERPAPI_API_KEY"}})
    assert out == {"merger": {"web": WebOutcome(documents=[], status="unavailable", message="未配置 SERPAPI_API_KEY")}}
