"""What every test of the real server shares: its environment (temporary data, the test embedding model, the
scripted LLM server, no SerpAPI key, no retries)."""

from pathlib import Path


def server_env(data: Path, e5_model: Path, llm_base_url: str, **extra: str | None) -> dict[str, str | None]:
    return {"DATA_DIR": str(data), "EMBEDDING_MODEL": str(e5_model), "LLM_BASE_URL": llm_base_url,
            "HF_HUB_OFFLINE": "1", "LLM_MAX_RETRIES": "0", "SERPAPI_API_KEY": None, "API_KEY": None,
            "DEEPSEEK_API_KEY": None, **extra}
