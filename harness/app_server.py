"""What every test of the real server shares: a data folder with laws indexed, and the server's environment
(temporary data, the test embedding model, the scripted LLM server, no keys, no retries)."""

from pathlib import Path

from config.settings import Settings
from pipelines.indexing import Indexer, law_sources
from pipelines.stores import open_document_store


def index_laws(data: Path, e5_model: Path, laws: list[str]) -> None:
    """Index ``laws`` into the default knowledge base under ``data`` (closed again: the server opens it)."""
    settings = Settings(qdrant_path=data / "qdrant", embedding_model=str(e5_model))
    store = open_document_store(settings)
    Indexer(store, settings).index(law_sources(laws), progress=False)
    store.close()


def server_env(data: Path, e5_model: Path, llm_base_url: str | None, **extra: str | None) -> dict[str, str | None]:
    return {"DATA_DIR": str(data), "EMBEDDING_MODEL": str(e5_model), "LLM_BASE_URL": llm_base_url,
            "HF_HUB_OFFLINE": "1", "LLM_MAX_RETRIES": "0", "SERPAPI_API_KEY": None, "API_KEY": None,
            "DEEPSEEK_API_KEY": None, "QDRANT_URL": None, "QDRANT_API_KEY": None, **extra}
