"""Settings read from environment variables, with the defaults documented in `.env.example`.

Usage::

    from config.settings import Settings
    settings = Settings.from_env()
    print(settings.qdrant_path)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_LAW = "中华人民共和国个人信息保护法"
# Where searches run: "mirror" = an in-process copy of the collection (fast on one machine), "qdrant" = the
# Qdrant store itself (server-side, nothing loaded into the process), "auto" = qdrant with QDRANT_URL, else mirror.
SEARCH_BACKENDS = ("auto", "mirror", "qdrant")


def _env(name: str, default: str) -> str:
    value = os.environ.get(name, "").strip()
    return value or default


def _env_number(name: str, default: float, parse: type[int | float], kind: str) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return parse(raw)
    except ValueError as error:
        raise ValueError(f"{name} must be {kind}, got {raw!r}") from error


def _env_int(name: str, default: int) -> int:
    return int(_env_number(name, default, int, "an integer"))


def _env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if not raw:
        return default
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, got {raw!r}")


def _env_float(name: str, default: float) -> float:
    return float(_env_number(name, default, float, "a number"))


def _env_positive(name: str, default: float) -> float:
    value = _env_float(name, default)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value:g}")
    return value


def _env_fraction(name: str, default: float) -> float:
    value = _env_float(name, default)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value:g}")
    return value


def _env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    value = _env(name, default).lower()
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")
    return value


def _env_probability(name: str) -> float | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    value = _env_float(name, 0.0)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (exclusive), got {raw!r}")
    return value


@dataclass(frozen=True)
class Settings:
    """Every knob of the project; see `.env.example` for the meaning of each variable."""

    data_dir: Path = Path("data")
    models_dir: Path = Path("models")
    qdrant_path: Path = Path("data/qdrant")
    qdrant_url: str = ""
    qdrant_timeout: int = 30
    qdrant_shards: int = 1
    qdrant_replicas: int = 1
    qdrant_hnsw_m: int = 16
    qdrant_hnsw_ef_construct: int = 100
    search_backend: str = "auto"
    collection: str = "statutes"
    default_laws: tuple[str, ...] = (DEFAULT_LAW,)
    embedding_model: str = "models/multilingual-e5-small"
    base_embedding_model: str = "models/multilingual-e5-small"
    adapted_embedding_model: str = "models/e5-small-statutes"
    embedding_backend: str = "onnx-int8"
    embedding_batch_size: int = 32
    embedding_dim: int = 384
    query_prefix: str = "query: "
    passage_prefix: str = "passage: "
    reranker: str = "none"
    reranker_model: str = "BAAI/bge-reranker-v2-m3"
    rerank_top_n: int = 10
    llm_gguf: str = "models/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    llm_base_url: str = ""
    llm_model: str = "local"
    llm_light_model: str = ""
    pass_score: int = 32
    max_rounds: int = 3
    judge_top_n: int = 5
    rewrite_first_round: bool = False
    question_weight: float = 2.0
    bm25_weight: float = 0.5
    bm25_k1: float = 1.2
    bm25_b: float = 0.75
    bm25_max_drift: float = 0.05
    judge: str = "auto"
    evaluator_model: str = "models/relevance-evaluator"
    evaluator_threshold: float | None = None
    trained_models: bool = True
    llm_timeout: float = 120.0
    llm_max_retries: int = 2
    llm_ctx: int = 4096
    llm_threads: int = 2
    llm_start_timeout: float = 180.0
    deepseek_model: str = "deepseek-chat"
    deepseek_base_url: str = "https://api.deepseek.com"

    @classmethod
    def from_env(cls) -> Settings:
        data_dir = Path(_env("DATA_DIR", "data"))
        models_dir = Path(_env("MODELS_DIR", "models"))
        trained_models = _env_bool("TRAINED_MODELS", True)
        base_model = str(models_dir / "multilingual-e5-small")
        adapted_model = _env("ADAPTED_EMBEDDING_MODEL", str(models_dir / "e5-small-statutes"))
        # the adapted embedder while `train` has installed it (and TRAINED_MODELS is on), else the base e5-small
        default_model = adapted_model if trained_models and Path(adapted_model).is_dir() else base_model
        laws = tuple(x.strip() for x in _env("DEFAULT_LAWS", DEFAULT_LAW).split(",") if x.strip())
        return cls(
            data_dir=data_dir,
            models_dir=models_dir,
            qdrant_path=Path(_env("QDRANT_PATH", str(data_dir / "qdrant"))),
            qdrant_url=_env("QDRANT_URL", ""),
            qdrant_timeout=_env_int("QDRANT_TIMEOUT", 30),
            qdrant_shards=_env_int("QDRANT_SHARDS", 1),
            qdrant_replicas=_env_int("QDRANT_REPLICAS", 1),
            qdrant_hnsw_m=_env_int("QDRANT_HNSW_M", 16),
            qdrant_hnsw_ef_construct=_env_int("QDRANT_HNSW_EF_CONSTRUCT", 100),
            search_backend=_env_choice("SEARCH_BACKEND", "auto", SEARCH_BACKENDS),
            collection=_env("QDRANT_COLLECTION", "statutes"),
            default_laws=laws,
            embedding_model=_env("EMBEDDING_MODEL", default_model),
            base_embedding_model=base_model,
            adapted_embedding_model=adapted_model,
            embedding_backend=_env("EMBEDDING_BACKEND", "onnx-int8"),
            embedding_batch_size=_env_int("EMBEDDING_BATCH_SIZE", 32),
            embedding_dim=_env_int("EMBEDDING_DIM", 384),
            query_prefix=_env("EMBEDDING_QUERY_PREFIX", "query: "),
            passage_prefix=_env("EMBEDDING_PASSAGE_PREFIX", "passage: "),
            reranker=_env("RERANKER", "none"),
            reranker_model=_env("RERANKER_MODEL", "BAAI/bge-reranker-v2-m3"),
            rerank_top_n=_env_int("RERANK_TOP_N", 10),
            llm_gguf=_env("LLM_GGUF", str(models_dir / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")),
            llm_base_url=_env("LLM_BASE_URL", ""),
            llm_model=_env("LLM_MODEL", "local"),
            llm_light_model=_env("LLM_LIGHT_MODEL", ""),
            pass_score=_env_int("PASS_SCORE", 32),
            max_rounds=_env_int("MAX_ROUNDS", 3),
            judge_top_n=_env_int("JUDGE_TOP_N", 5),
            rewrite_first_round=_env_bool("REWRITE_FIRST_ROUND", False),
            question_weight=_env_positive("QUESTION_WEIGHT", 2.0),
            bm25_weight=_env_positive("BM25_WEIGHT", 0.5),
            bm25_k1=_env_positive("BM25_K1", 1.2),
            bm25_b=_env_fraction("BM25_B", 0.75),
            bm25_max_drift=_env_positive("BM25_MAX_DRIFT", 0.05),
            judge=_env("JUDGE", "auto"),
            evaluator_model=_env("EVALUATOR_MODEL", str(models_dir / "relevance-evaluator")),
            evaluator_threshold=_env_probability("EVALUATOR_THRESHOLD"),
            trained_models=trained_models,
            llm_timeout=_env_float("LLM_TIMEOUT", 120.0),
            llm_max_retries=_env_int("LLM_MAX_RETRIES", 2),
            llm_ctx=_env_int("LLM_CTX", 4096),
            llm_threads=_env_int("LLM_THREADS", 2),
            llm_start_timeout=_env_float("LLM_START_TIMEOUT", 180.0),
            deepseek_model=_env("DEEPSEEK_MODEL", "deepseek-chat"),
            deepseek_base_url=_env("DEEPSEEK_BASE_URL", "https://api.deepseek.com"),
        )
