import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_the_indexing_benchmark_runs_end_to_end_and_reports_where_the_time_went(tmp_path, e5_model):
    """It once failed after indexing (a store refactor left it timing `indexer.points.optimize`)."""
    out = tmp_path / "indexing.md"
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "DATA_DIR": str(tmp_path / "data"),
           "EMBEDDING_MODEL": str(e5_model), "HF_HUB_OFFLINE": "1", "ENV_FILE": ""}
    done = subprocess.run([sys.executable, "benchmarks/indexing.py", "--limit", "1", "--skip-bare", "--out", str(out)],
                          check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    report = out.read_text(encoding="utf-8")
    rows = {line.split(" | ")[0].lstrip("| "): line for line in report.splitlines() if line.startswith("| ")}
    articles = int(rows["articles"].split(" | ")[1].split()[0])
    assert articles > 0 and rows["documents in the store after the run"].split(" | ")[1].strip(" |") == str(articles)
    assert "optimise (HNSW build)" in rows and "embed" in report
