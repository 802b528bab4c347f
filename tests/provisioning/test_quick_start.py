"""Issue 29: the quick evaluator's corpus, the set-up phases, and a training run killed mid-phase."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from components.evaluators.relevance_evaluator import CALIBRATION_FILE
from helpers.statutes.labels import key_law
from provisioning.evaluator_training import roc_auc
from provisioning.phases import Phases
from provisioning.quick_start import quick_laws
from provisioning.training_pairs import Pair
from tests.support.training import PIPL, pairs_file, pipl_pairs

REPO = Path(__file__).resolve().parents[2]


def pair(*gold: str) -> Pair:
    return Pair("问题", gold)


def test_key_law_splits_the_article_number_off():
    assert key_law("中华人民共和国民法典第五百条") == "中华人民共和国民法典"
    assert key_law("中华人民共和国刑法第一百三十三条之一") == "中华人民共和国刑法"
    assert key_law("员工手册") == "员工手册"


def test_quick_laws_takes_the_most_cited_laws_until_the_share_is_covered():
    pairs = [pair("甲法第一条")] * 6 + [pair("乙法第二条")] * 3 + [pair("丙法第三条")]
    sizes = {"甲法": 10, "乙法": 10, "丙法": 10}
    assert quick_laws(pairs, sizes, share=0.95, budget=100) == ["甲法", "乙法", "丙法"]
    assert quick_laws(pairs, sizes, share=0.9, budget=100) == ["甲法", "乙法"]  # 9 of 10: enough
    assert quick_laws(pairs, sizes, share=0.6, budget=100) == ["甲法"]  # 6 of 10 covered: stop


def test_quick_laws_keeps_to_the_article_budget_and_skips_unknown_and_mixed():
    pairs = ([pair("甲法第一条")] * 6 + [pair("大法第二条")] * 3 + [pair("乙法第一条")] * 2 +
             [pair("甲法第一条", "乙法第一条")] * 5 + [pair("无此法第一条")] * 9)
    sizes = {"甲法": 10, "大法": 1000, "乙法": 10}
    # 大法 would pass the budget; a question citing two laws counts for neither; an unknown law is skipped
    assert quick_laws(pairs, sizes, share=1.0, budget=100) == ["甲法"]
    with pytest.raises(ValueError, match="no training question"):
        quick_laws([pair("无此法第一条")], sizes)


def test_the_first_law_is_taken_even_over_budget():
    assert quick_laws([pair("大法第二条")], {"大法": 1000}, budget=100) == ["大法"]


def test_phases_are_listed_in_order_with_a_total_and_an_interrupted_one_is_marked():
    phases = Phases()
    with phases.phase("outer"), phases.phase("inner"):
        pass
    with pytest.raises(KeyboardInterrupt), phases.phase("broken"):
        raise KeyboardInterrupt
    labels = [label for label, _ in phases.rows]
    assert labels == ["outer / inner", "outer", "broken (interrupted)"]
    lines = phases.summary()
    assert lines[0] == "setup phases:" and lines[-1].split()[0] == "total" and len(lines) == 5
    assert Phases().summary() == []


def test_roc_auc():
    assert roc_auc([0.9, 0.8, 0.1], [1, 1, 0]) == 1.0
    assert roc_auc([0.1, 0.9], [1, 0]) == 0.0
    assert roc_auc([0.5, 0.5], [1, 0]) == 0.5


def _train_env(tmp_path: Path, e5_model: Path) -> dict[str, str]:
    return {**os.environ, "TRAINING_PAIRS": str(pairs_file(tmp_path, pipl_pairs())), "TRAINING_LAWS": PIPL,
            "MODEL_CACHE_DIR": str(tmp_path / "cache"), "DATA_DIR": str(tmp_path / "data"),
            "EMBEDDING_MODEL": str(e5_model), "EVALUATOR_MODEL": str(tmp_path / "models" / "relevance-evaluator"),
            "ADAPTED_EMBEDDING_MODEL": str(tmp_path / "models" / "e5-small-statutes")}


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # it ended meanwhile
        return b""


def _spawned_children(pid: int) -> list[int]:
    """The process's spawned workers (Linux /proc), waiting up to 60 s for one to appear."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = [int(c) for task in Path(f"/proc/{pid}/task").iterdir()
                 for c in (task / "children").read_text().split() if b"spawn_main" in _cmdline(int(c))]
        if found:
            return found
        time.sleep(0.05)
    return []


def test_training_killed_mid_phase_leaves_nothing_half_built_and_the_next_run_finishes(tmp_path, e5_model):
    """SIGKILL while the evaluator is being built (its staging folder exists: the corpus is being indexed or the
    candidates retrieved): no cache entry, no installed link, and the same command then completes."""
    env = _train_env(tmp_path, e5_model)
    command = [sys.executable, "-m", "pipelines", "train", "--quiet"]
    cache = tmp_path / "cache"
    process = subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and process.poll() is None:
        if cache.is_dir() and any(".tmp-" in p.name for p in cache.iterdir()):
            break
        time.sleep(0.02)
    assert process.poll() is None, f"training ended before it could be interrupted: {process.stderr.read()}"
    children = _spawned_children(process.pid)
    assert children, "the training step did not run in a process of its own"
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(Path(f"/proc/{pid}").exists() for pid in children):
        time.sleep(0.1)
    assert not [pid for pid in children if Path(f"/proc/{pid}").exists()]  # its training step died with it
    assert [p.name for p in cache.iterdir() if ".tmp-" not in p.name] == []  # nothing renamed into the cache
    assert not (tmp_path / "models" / "relevance-evaluator").exists()  # nothing installed
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    link = tmp_path / "models" / "relevance-evaluator"
    trained = json.loads((link / CALIBRATION_FILE).read_text(encoding="utf-8"))
    assert trained["questions"] == 60 and trained["scope"] == "full"
    assert [p for p in cache.iterdir() if ".tmp-" in p.name] == []  # the killed run's staging folder is gone


def test_a_step_in_a_child_process_returns_its_result_and_raises_its_error():
    """Issue 29: training steps run in processes of their own (memory); what they return or raise comes back."""
    from provisioning.isolated import in_child

    assert in_child(os.getpid) != os.getpid()
    assert in_child(json.loads, '{"a": [1, 2]}') == {"a": [1, 2]}
    with pytest.raises(json.JSONDecodeError):
        in_child(json.loads, "{broken")


def test_a_child_step_ends_without_the_final_collection():
    """The set-up waits for each child step's exit, which spent about 2 s in the interpreter's final garbage
    collection over torch and the model; the child's initializer freezes the objects at exit instead."""
    import subprocess
    import sys

    probe = ("import atexit, gc, os\n"
             "atexit.register(lambda: print('frozen at the end:', gc.get_freeze_count() > 0))\n"
             "from provisioning.isolated import _die_with_parent\n"
             "_die_with_parent(os.getppid())\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "frozen at the end: True"
