"""The notebooks run top to bottom (executed with nbclient against the scripted LLM server)."""

from pathlib import Path

import nbformat
from nbclient import NotebookClient

from harness.openai_server import ScriptedOpenAIServer

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def test_agentic_walkthrough_runs_and_shows_the_trace(tmp_path, monkeypatch, e5_model):
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EMBEDDING_MODEL", str(e5_model))
    for name in ("DEEPSEEK_API_KEY", "SERPAPI_API_KEY", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    with ScriptedOpenAIServer() as llm:
        llm.add_rule("你是中国法律检索专家", '{"variants": ["处理个人信息应当取得个人同意"], "keywords": ["同意"]}')
        llm.add_rule("法律检索质量评估员",
                     '{"reasoning": "直接相关", "relevance": 9, "completeness": 8, "accuracy": 9, "coverage": 8}')
        llm.add_rule("严谨的中国法律咨询助手", "需要。依据《中华人民共和国个人信息保护法》第十四条……")
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        notebook = nbformat.read(NOTEBOOKS / "agentic_walkthrough.ipynb", as_version=4)
        NotebookClient(notebook, timeout=600, kernel_name="python3",
                       resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    text = "\n".join(o.get("text", "") for c in notebook.cells if c.cell_type == "code" for o in c.get("outputs", []))
    assert "74 documents" in text
    assert "中华人民共和国个人信息保护法第十四条 verified" in text
    assert "round 1:" in text and "-> pass" in text
