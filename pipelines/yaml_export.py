"""The pipelines as YAML (``yaml_pipelines/``), generated from the builder functions with default settings, and
`load_query_pipeline` for running a (possibly edited) query pipeline file with clear errors.

Loading needs the project's modules allowed::

    from haystack import Pipeline
    pipeline = Pipeline.loads(Path("yaml_pipelines/agentic.yaml").read_text(), allowed_modules=ALLOWED_MODULES)

or ``ALLOWLIST_ENV`` (``HAYSTACK_DESERIALIZATION_ALLOWLIST``) in the environment (Hayhooks).
Regenerate with ``python -m pipelines export-yaml``.
"""

from __future__ import annotations

from pathlib import Path

from haystack import Pipeline
from haystack.core.errors import DeserializationError, PipelineError

from config.settings import Settings
from pipelines.agentic import build_agentic_pipeline, build_rag_pipeline
from pipelines.indexing import build_indexing_pipeline
from pipelines.stores import open_document_store

YAML_DIR = Path(__file__).resolve().parent.parent / "yaml_pipelines"
# what a YAML pipeline of this project names: its components, the loop's state type and the Qdrant integration
ALLOWED_MODULES = ["components", "document_store", "helpers", "pipelines", "haystack_integrations"]
ALLOWLIST_ENV = {"HAYSTACK_DESERIALIZATION_ALLOWLIST": ",".join(ALLOWED_MODULES)}  # the same, for Hayhooks


def yaml_texts(settings: Settings | None = None) -> dict[str, str]:
    """File name → YAML of each pipeline, built against a store object that is not opened. They are exported with
    the offline defaults after setup, the adapted embedder, the trained evaluator as judge (``JUDGE=evaluator``) and
    no reranker (what ``RERANKER=auto`` is with the embedded LLM), whether or not this machine has trained them yet
    or has an API key, so the files do not depend on the machine."""
    settings = settings or Settings(judge="evaluator", reranker="none",
                                    embedding_model=Settings().adapted_embedding_model)
    store = open_document_store(settings, connect=False)
    return {
        "indexing.yaml": build_indexing_pipeline(store, settings).dumps(),
        "agentic.yaml": build_agentic_pipeline(store, settings, require_models=False).dumps(),
        "rag.yaml": build_rag_pipeline(store, settings).dumps(),
    }


def export_yaml(directory: Path = YAML_DIR) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in yaml_texts().items():
        (directory / name).write_text(text, encoding="utf-8")
        written.append(directory / name)
    return written


class PipelineFileError(ValueError):
    """A pipeline YAML that cannot be read, parsed (YAML is parsed safely: no Python tags) or used."""


def load_query_pipeline(path: Path) -> tuple[Pipeline, str]:
    """Load a query pipeline YAML; returns it warmed up with its mode ("agentic" or "rag")."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise PipelineFileError(f"{path}: cannot read the pipeline file ({error.__class__.__name__})") from error
    try:
        pipeline = Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)
    except (DeserializationError, PipelineError, ValueError, TypeError, KeyError) as error:
        reason = (str(error).strip().splitlines() or [error.__class__.__name__])[0][:200]
        raise PipelineFileError(f"{path}: not a loadable pipeline: {reason}") from error
    components = set(pipeline.graph.nodes)
    mode = "agentic" if {"router", "rewriter", "judge"} <= components else "rag" if "selector" in components else ""
    if not mode or "finalizer" not in components:
        raise PipelineFileError(f"{path}: not a query pipeline (expected the components of "
                                f"yaml_pipelines/agentic.yaml or rag.yaml, got {sorted(components)})")
    pipeline.warm_up()
    return pipeline, mode
