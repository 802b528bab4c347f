"""Settings read from environment variables, with the defaults documented in `.env.example`.

Each setting is declared once: its field, its environment variable, its default and how the variable is read
(`setting`). A few defaults follow other settings (the store and model paths follow ``DATA_DIR`` and
``MODELS_DIR``); `Settings.from_env` fills those in when their variable is not set.

`Settings.from_env` first reads a ``.env`` file (`load_env_file`: ``ENV_FILE``, default the nearest ``.env`` from
the working directory up) into the environment, never over a variable that is already set, so a key written there
reaches every entry point (CLI, server, notebooks, ``make``) and the components that read their secret from the
environment (``DEEPSEEK_API_KEY``, ``SERPAPI_API_KEY``).

Usage::

    from config.settings import Settings
    settings = Settings.from_env()
    print(settings.qdrant_path)
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

DEFAULT_LAW = "中华人民共和国个人信息保护法"
BASE_EMBEDDER = "multilingual-e5-small"
ADAPTED_EMBEDDER = "e5-small-statutes"
LLM_FILE = "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
EVALUATOR = "relevance-evaluator"
COVERAGE = "coverage-model"
DATA_DIR, MODELS_DIR = Path("data"), Path("models")
ENV_FILE = ".env"


def load_env_file() -> Path | None:
    """Read the ``ENV_FILE`` into ``os.environ`` without overriding what is set; returns the file read, if any.

    A relative name (default ``.env``) is looked for in the working directory and then its parents; an empty
    ``ENV_FILE`` reads nothing (the tests use that to stay hermetic). A missing file is not an error: the
    environment alone configures the system, as before there was a file.
    """
    from dotenv import dotenv_values, find_dotenv

    name = os.environ.get("ENV_FILE", ENV_FILE).strip()
    if not name:
        return None
    path = Path(name) if Path(name).is_absolute() else Path(find_dotenv(name, usecwd=True) or name)
    if not path.is_file():
        return None
    for key, value in dotenv_values(path).items():
        if value is not None:
            os.environ.setdefault(key, value)
    return path

Parse = Callable[[str, str], Any]  # (variable name, its non-empty value) -> the setting


def _number(kind: type[int | float], label: str) -> Parse:
    def parse(name: str, raw: str) -> int | float:
        try:
            return kind(raw)
        except ValueError as error:
            raise ValueError(f"{name} must be {label}, got {raw!r}") from error
    return parse


_int, _float = _number(int, "an integer"), _number(float, "a number")


def _bool(name: str, raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"{name} must be true or false, got {raw!r}")


def _positive(name: str, raw: str) -> float:
    value = _float(name, raw)
    if value <= 0:
        raise ValueError(f"{name} must be > 0, got {value:g}")
    return value


def _non_negative(name: str, raw: str) -> int:
    value = _int(name, raw)
    if value < 0:
        raise ValueError(f"{name} must be >= 0, got {value}")
    return value


def _positive_int(name: str, raw: str) -> int:
    value = _int(name, raw)
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _fraction(name: str, raw: str) -> float:
    value = _float(name, raw)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be between 0 and 1, got {value:g}")
    return value


def _probability(name: str, raw: str) -> float:
    value = _float(name, raw)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be between 0 and 1 (exclusive), got {raw!r}")
    return value


def _names(name: str, raw: str) -> tuple[str, ...]:
    return tuple(x.strip() for x in raw.split(",") if x.strip())


_BY_TYPE: dict[str, Parse] = {"str": lambda _, raw: raw, "int": _int, "float": _float, "bool": _bool,
                              "Path": lambda _, raw: Path(raw)}


def setting(env: str, default: Any, parse: Parse | None = None, verbatim: bool = False, secret: bool = False) -> Any:
    """A field read from the environment variable ``env``; ``parse`` defaults to the field's type. A variable
    that is unset or blank keeps the default, and values are stripped, except ``verbatim`` ones (text whose
    spaces matter): those are taken as set, an empty value included. A ``secret`` is left out of the repr (logs)."""
    return field(default=default, repr=not secret, metadata={"env": env, "parse": parse, "verbatim": verbatim})


@dataclass(frozen=True)
class Settings:
    """Every knob of the project; see `.env.example` for the meaning of each variable."""

    data_dir: Path = setting("DATA_DIR", DATA_DIR)
    models_dir: Path = setting("MODELS_DIR", MODELS_DIR)
    qdrant_path: Path = setting("QDRANT_PATH", DATA_DIR / "qdrant")  # default: DATA_DIR/qdrant
    qdrant_url: str = setting("QDRANT_URL", "")
    qdrant_timeout: int = setting("QDRANT_TIMEOUT", 30)
    qdrant_shards: int = setting("QDRANT_SHARDS", 1)
    qdrant_replicas: int = setting("QDRANT_REPLICAS", 1)
    qdrant_hnsw_m: int = setting("QDRANT_HNSW_M", 16)
    qdrant_hnsw_ef_construct: int = setting("QDRANT_HNSW_EF_CONSTRUCT", 100)
    collection: str = setting("QDRANT_COLLECTION", "statutes")
    default_laws: tuple[str, ...] = setting("DEFAULT_LAWS", (DEFAULT_LAW,), _names)
    # default: the adapted embedder while `train` has installed it (and TRAINED_MODELS is on), else the base one
    embedding_model: str = setting("EMBEDDING_MODEL", f"models/{BASE_EMBEDDER}")
    base_embedding_model: str = f"models/{BASE_EMBEDDER}"  # MODELS_DIR/multilingual-e5-small
    adapted_embedding_model: str = setting("ADAPTED_EMBEDDING_MODEL", f"models/{ADAPTED_EMBEDDER}")
    embedding_backend: str = setting("EMBEDDING_BACKEND", "onnx-int8")
    # faster than 32 on CPU (helpers.text_encoding.onnx_encoder)
    embedding_batch_size: int = setting("EMBEDDING_BATCH_SIZE", 8)
    embedding_dim: int = setting("EMBEDDING_DIM", 384)
    query_prefix: str = setting("EMBEDDING_QUERY_PREFIX", "query: ", verbatim=True)
    passage_prefix: str = setting("EMBEDDING_PASSAGE_PREFIX", "passage: ", verbatim=True)
    reranker: str = setting("RERANKER", "auto")
    reranker_model: str = setting("RERANKER_MODEL", "BAAI/bge-reranker-v2-m3")
    rerank_top_n: int = setting("RERANK_TOP_N", 20)
    rerank_pool: int = setting("RERANK_POOL", 50, _non_negative)
    round_reranker: str = setting("ROUND_RERANKER", "none")
    round_rerank_depth: int = setting("ROUND_RERANK_DEPTH", 30, _non_negative)
    llm_gguf: str = setting("LLM_GGUF", f"models/{LLM_FILE}")
    llm_base_url: str = setting("LLM_BASE_URL", "")
    llm_model: str = setting("LLM_MODEL", "local")
    llm_light_model: str = setting("LLM_LIGHT_MODEL", "")
    pass_score: int = setting("PASS_SCORE", 32)
    max_rounds: int = setting("MAX_ROUNDS", 3)
    judge_top_n: int = setting("JUDGE_TOP_N", 5)
    evidence_top_n: int = setting("EVIDENCE_TOP_N", 5, _non_negative)
    evidence_top_n_unsure: int = setting("EVIDENCE_TOP_N_UNSURE", 8, _non_negative)
    rewrite_first_round: bool = setting("REWRITE_FIRST_ROUND", False)
    long_question_chars: int = setting("LONG_QUESTION_CHARS", 0, _non_negative)
    question_weight: float = setting("QUESTION_WEIGHT", 2.0, _positive)
    bm25_weight: float = setting("BM25_WEIGHT", 0.5, _positive)
    bm25_k1: float = setting("BM25_K1", 1.2, _positive)
    bm25_b: float = setting("BM25_B", 0.75, _fraction)
    bm25_max_drift: float = setting("BM25_MAX_DRIFT", 0.05, _positive)
    judge: str = setting("JUDGE", "auto")
    evaluator_model: str = setting("EVALUATOR_MODEL", f"models/{EVALUATOR}")
    evaluator_threshold: float | None = setting("EVALUATOR_THRESHOLD", None, _probability)
    coverage_check: bool = setting("COVERAGE_CHECK", True)
    coverage_model: str = setting("COVERAGE_MODEL", f"models/{COVERAGE}")
    out_of_corpus_questions: str = setting("OUT_OF_CORPUS_QUESTIONS", "")  # empty: the bundled STARD ones
    trained_models: bool = setting("TRAINED_MODELS", True)
    training_pairs: str = setting("TRAINING_PAIRS", "")  # empty: the bundled STARD train pairs
    training_laws: tuple[str, ...] = setting("TRAINING_LAWS", ("all",), _names)
    llm_timeout: float = setting("LLM_TIMEOUT", 120.0)
    llm_max_retries: int = setting("LLM_MAX_RETRIES", 2)
    llm_ctx: int = setting("LLM_CTX", 4096)
    llm_threads: int = setting("LLM_THREADS", 2)
    llm_start_timeout: float = setting("LLM_START_TIMEOUT", 180.0)
    deepseek_model: str = setting("DEEPSEEK_MODEL", "deepseek-chat")
    deepseek_base_url: str = setting("DEEPSEEK_BASE_URL", "https://api.deepseek.com")
    # the HTTP server (interfaces/server_app.py); the key is also what the CLI sends to a running server
    api_key: str = setting("API_KEY", "", secret=True)
    max_body_bytes: int = setting("MAX_BODY_BYTES", 20 * 1024 * 1024, _positive_int)
    cors_allow_origins: tuple[str, ...] = setting("CORS_ALLOW_ORIGINS", (), _names)
    api_host: str = setting("API_HOST", "127.0.0.1")
    api_port: int = setting("API_PORT", 1416, _positive_int)
    # the deployments without which the server does not run (interfaces.startup); empty = all of them
    required_deployments: tuple[str, ...] = setting("REQUIRED_DEPLOYMENTS", (), _names)
    llm_cooldown: float = setting("LLM_COOLDOWN", 30.0)
    model_cache_dir: Path = setting("MODEL_CACHE_DIR", Path.home() / ".cache" / "agentic-rag-models")

    @classmethod
    def value(cls, name: str) -> Any:
        """One plain setting (no derived default) from its environment variable: for code that needs one before
        the rest is checked, such as ``serve --port``'s default (a bad setting elsewhere is reported later)."""
        load_env_file()
        item = next(item for item in fields(cls) if item.name == name)
        return cls._read(item).get(name, item.default)

    @staticmethod
    def _read(item: Any) -> dict[str, Any]:
        """``{name: value}`` of one field as its environment variable sets it; ``{}`` when it is unset or blank."""
        if "env" not in item.metadata or (raw := os.environ.get(item.metadata["env"])) is None:
            return {}
        if item.metadata["verbatim"]:
            return {item.name: raw}
        if not raw.strip():
            return {}
        parse = item.metadata["parse"] or _BY_TYPE[str(item.type)]
        return {item.name: parse(item.metadata["env"], raw.strip())}

    @classmethod
    def from_env(cls) -> Settings:
        """Every setting from its environment variable (see `setting`), after `load_env_file`."""
        load_env_file()
        values: dict[str, Any] = {}
        for item in fields(cls):
            values.update(cls._read(item))
        data_dir = values.setdefault("data_dir", cls.data_dir)
        models_dir = values.setdefault("models_dir", cls.models_dir)
        values.setdefault("qdrant_path", data_dir / "qdrant")
        values.setdefault("llm_gguf", str(models_dir / LLM_FILE))
        values.setdefault("evaluator_model", str(models_dir / EVALUATOR))
        values.setdefault("coverage_model", str(models_dir / COVERAGE))
        values["base_embedding_model"] = str(models_dir / BASE_EMBEDDER)
        adapted = values.setdefault("adapted_embedding_model", str(models_dir / ADAPTED_EMBEDDER))
        trained = values.get("trained_models", cls.trained_models)
        values.setdefault("embedding_model", adapted if trained and Path(adapted).is_dir()
                          else values["base_embedding_model"])
        return cls(**values)
