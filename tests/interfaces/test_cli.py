from pathlib import Path

import pytest

from application.validation import MAX_QUERY_CHARS
from harness.llm_script import ANSWERER, JUDGE, REWRITER, judge
from harness.openai_server import ScriptedOpenAIServer
from interfaces.cli import CliExtension, build_parser, installed_extensions, main
from tests.support.training import PIPL, pairs_file, pipl_pairs


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_unknown_law_suggests_close_names(settings, capsys):
    code, _, err = run_cli(capsys, "index", "--laws", "个人信息保护")
    assert code == 2
    assert err.startswith("error: Unknown law '个人信息保护'")
    assert "中华人民共和国个人信息保护法" in err
    assert err.count("\n") == 1


@pytest.mark.parametrize(
    ("name", "data", "message"),
    [("gbk.txt", "第一条 内容".encode("gbk"), "not valid UTF-8"),
     ("bin.txt", b"\x00\x01\x02", "binary"),
     ("empty.md", b"  \n", "empty"),
     ("doc.pdf", b"%PDF", "unsupported file type")],
)
def test_bad_files_get_a_one_line_error(settings, capsys, tmp_path, name, data, message):
    (tmp_path / name).write_bytes(data)
    code, _, err = run_cli(capsys, "index", "--files", str(tmp_path / name))
    assert code == 2
    assert message in err and err.count("\n") == 1


def test_missing_file(settings, capsys, tmp_path):
    code, _, err = run_cli(capsys, "index", "--files", str(tmp_path / "nope.txt"))
    assert code == 2 and "file not found" in err


@pytest.mark.parametrize("query", ["", "   \n"])
def test_empty_query(settings, capsys, query):
    code, _, err = run_cli(capsys, "search", query)
    assert code == 2 and "query is empty" in err


def test_huge_query_states_the_limit(settings, capsys):
    code, _, err = run_cli(capsys, "search", "法" * (MAX_QUERY_CHARS + 1))
    assert code == 2 and f"limit is {MAX_QUERY_CHARS}" in err


def test_search_on_empty_store_says_to_index(settings, capsys):
    code, _, err = run_cli(capsys, "search", "个人信息")
    assert code == 2 and "python -m pipelines index" in err


def test_index_search_stats_round_trip(settings, capsys, tmp_path):
    path = tmp_path / "手册.md"
    path.write_text("# 手册\n第一条 员工请假需提前申请。\n第二条 加班应当支付加班费。\n", encoding="utf-8")
    code, out, _ = run_cli(capsys, "index", "--files", str(path), "--quiet")
    assert code == 0 and "added" in out and "2 documents" in out
    code, out, _ = run_cli(capsys, "search", "加班费怎么算", "--mode", "hybrid", "--top-k", "2")
    assert code == 0
    assert out.splitlines()[1].endswith("手册第二条")
    code, out, _ = run_cli(capsys, "stats")
    assert code == 0 and "2 documents, 1 sources" in out and "complete" in out
    assert "BM25: k1=1.2, b=0.75, average article length" in out and "searches run on: edge" in out
    # issue 29: which models the knowledge base was built with and which judge answers from it
    assert "models: every source embedded with multilingual-e5-small" in out and "judge: the LLM rubric" in out


@pytest.mark.parametrize("command", ["search", "ask"])
def test_a_malformed_as_of_is_a_one_line_error(settings, capsys, command):
    code, _, err = run_cli(capsys, command, "个人信息", "--as-of", "2020/1/1")
    assert code == 2 and "as_of must be a date written YYYY-MM-DD" in err and err.count("\n") == 1


def test_laws_lists_the_book_in_force_and_the_older_versions(settings, capsys):
    code, out, _ = run_cli(capsys, "laws")
    assert code == 0
    assert "   505  中华人民共和国刑法  (in force as amended since" in out
    assert "and 25 older or repealed versions" in out and "中华人民共和国商标法 2019-04-23 (历史版本)" in out


def test_a_store_indexed_before_versions_is_named_until_the_next_index(settings, capsys):
    from dataclasses import replace

    from document_store.source_manifest import SourceManifest
    from pipelines.stores import open_document_store

    assert run_cli(capsys, "index", "--laws", "刑法修正案（十二）", "--quiet")[0] == 0
    store = open_document_store(settings)
    manifest = SourceManifest(store)
    record, = manifest.all()
    manifest._put(replace(record, meta_hash=""))  # as a store indexed before statute versions records it
    store.close()
    code, _, err = run_cli(capsys, "search", "国有公司董事")
    assert code == 0 and "1 law source(s) were indexed before articles carried their versions" in err
    code, out, _ = run_cli(capsys, "index", "--laws", "刑法修正案（十二）", "--quiet")
    assert code == 0 and "relabelled" in out
    assert "indexed before" not in run_cli(capsys, "search", "国有公司董事")[2]


def test_stats_of_an_interrupted_source_says_interrupted_not_another_embedder(settings, capsys, tmp_path):
    """Issue 46, item 4: `stats` called an interrupted source (no embedder recorded yet) "embedded with another
    embedder"; it is reported as interrupted, with the command that finishes it, and only so."""
    from document_store.source_manifest import SourceManifest
    from pipelines.stores import open_document_store

    path = tmp_path / "手册.md"
    path.write_text("# 手册\n第一条 员工请假需提前申请。\n", encoding="utf-8")
    assert run_cli(capsys, "index", "--files", str(path), "--quiet")[0] == 0
    store = open_document_store(settings)
    manifest = SourceManifest(store)
    record, = manifest.all()
    manifest.mark_indexing({record.source: record.content_hash})  # as a run killed while writing it leaves it
    store.close()
    code, out, err = run_cli(capsys, "stats")
    assert code == 0 and f"indexing       0  {record.source}" in out
    assert f"warning: 1 source(s) were interrupted during indexing ({record.source})" in err
    assert "another embedder" not in out + err and "another embedding model" not in out + err


def test_search_as_of_a_day_without_a_version_of_the_named_law_says_so(settings, capsys):
    """Issue 46, item 4: `search "商标法第十条" --as-of 2020-01-01` on a store holding only the 商标法 in force (from
    2027-01-01) silently listed other laws' articles; it now says which versions are held and how to add the
    others, and says nothing once they are indexed."""
    assert run_cli(capsys, "index", "--laws", "商标法", "--quiet")[0] == 0
    code, _, err = run_cli(capsys, "search", "商标法第十条", "--as-of", "2020-01-01")
    assert code == 0
    assert ("warning: 知识库中没有《中华人民共和国商标法》在 2020-01-01 有效的版本"
            "（现有版本自 2027-01-01 起施行）") in err
    assert "`python -m pipelines index --laws 商标法 --versions --collection statutes`" in err
    assert "知识库中没有" not in run_cli(capsys, "search", "商标法第十条")[2]
    assert run_cli(capsys, "index", "--laws", "商标法", "--versions", "--quiet")[0] == 0
    assert "知识库中没有" not in run_cli(capsys, "search", "商标法第十条", "--as-of", "2020-01-01")[2]


def test_top_k_out_of_range(settings, capsys):
    code, _, err = run_cli(capsys, "search", "个人信息", "--top-k", "0")
    assert code == 2 and "--top-k" in err


QUERY = "公司收集我的个人信息需要我同意吗"


@pytest.mark.parametrize(
    ("text", "message"),
    [("components: [\n  - oops", "not a loadable pipeline"),
     ("components:\n  x:\n    type: no.such.Component\n    init_parameters: {}\nconnections: []\n",
      "not a loadable pipeline"),
     ("components: {}\nconnections: []\n", "not a query pipeline")],
)
def test_malformed_or_unknown_yaml_pipeline_is_a_one_line_error(settings, capsys, tmp_path, text, message):
    (tmp_path / "p.yaml").write_text(text, encoding="utf-8")
    code, _, err = run_cli(capsys, "ask", QUERY, "--pipeline", str(tmp_path / "p.yaml"))
    assert code == 2 and message in err and err.count("\n") == 1


def test_yaml_pipeline_is_never_loaded_unsafely(settings, capsys, tmp_path):
    marker = tmp_path / "pwned"
    (tmp_path / "evil.yaml").write_text(f'components: !!python/object/apply:os.system ["touch {marker}"]\n',
                                        encoding="utf-8")
    code, _, err = run_cli(capsys, "ask", QUERY, "--pipeline", str(tmp_path / "evil.yaml"))
    assert code == 2 and "not a loadable pipeline" in err and not marker.exists()
    code, _, err = run_cli(capsys, "ask", QUERY, "--pipeline", str(tmp_path / "missing.yaml"))
    assert code == 2 and "cannot read" in err
    code, _, err = run_cli(capsys, "ask", QUERY, "--pipeline", "yaml_pipelines/indexing.yaml")
    assert code == 2 and "not a query pipeline" in err


def test_demo_answers_first_with_the_quick_evaluator_then_installs_the_full_one(settings, capsys, monkeypatch,
                                                                               tmp_path):
    """Issue 29: `make run` answers before the full training, judged by the quick evaluator (trained here on the
    个人信息保护法 pairs), says what the answer used, then trains and installs the full evaluator; a second run
    uses the full one at once and trains nothing."""
    from config.settings import Settings
    from pipelines.judges import evaluator_scope

    monkeypatch.setenv("TRAINING_PAIRS", str(pairs_file(tmp_path, pipl_pairs())))
    monkeypatch.setenv("TRAINING_LAWS", PIPL)
    monkeypatch.setenv("MODEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("EVALUATOR_MODEL", str(tmp_path / "models" / "relevance-evaluator"))
    monkeypatch.setenv("ADAPTED_EMBEDDING_MODEL", str(tmp_path / "models" / "e5-small-statutes"))
    monkeypatch.setenv("JUDGE", "auto")
    with ScriptedOpenAIServer() as llm:
        llm.add_rule(REWRITER, '{"variants": ["处理个人信息应当取得个人同意"], "keywords": ["同意"]}')
        llm.add_rule(JUDGE, judge(9))
        llm.add_rule(ANSWERER, "需要。依据《中华人民共和国个人信息保护法》第十四条，处理个人信息应当取得同意。")
        monkeypatch.setenv("LLM_BASE_URL", llm.base_url)
        code, out, err = run_cli(capsys, "demo")
        assert code == 0, err
        assert "added" in out and "74" in out and QUERY in out
        assert "第十四条" in out and f"{PIPL}第十四条" in out  # the answer and its citation list
        assert "evaluator P=" in out  # the trained evaluator judged, not the LLM rubric
        used = out.index("This answer used")
        assert "quick relevance evaluator" in out[used:].splitlines()[0]
        assert used < out.index("trained models ready (trained)")  # the full stack comes after the answer
        assert evaluator_scope(Settings.from_env()) == "full"
        summary = out[out.index("setup phases:"):]
        assert all(phase in summary for phase in ("quick evaluator", "answer", "trained models", "total"))
        code, again, err = run_cli(capsys, "demo")
    assert code == 0, err
    assert "full relevance evaluator" in again and "quick evaluator" not in again
    assert "trained models ready (cached)" in again


@pytest.mark.parametrize(("name", "value", "message"), [("REWRITE_FIRST_ROUND", "maybe", "must be true or false"),
                                                        ("MAX_ROUNDS", "three", "must be an integer"),
                                                        ("QUESTION_WEIGHT", "0", "must be > 0"),
                                                        ("LONG_QUESTION_CHARS", "-1", "must be >= 0")])
def test_a_bad_setting_is_a_one_line_error(settings, capsys, monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    code, _, err = run_cli(capsys, "search", "个人信息")
    assert code == 2 and name in err and message in err and "Traceback" not in err


def test_a_first_run_prints_no_library_noise(settings, tmp_path):
    """Issue 19: one line per step; no jieba start-up lines, no library warnings."""
    import os
    import subprocess
    import sys

    path = tmp_path / "手册.md"
    path.write_text("# 员工手册\n第一条 加班应当支付加班费。\n", encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "pipelines", "index", "--files", str(path), "--quiet"],
                          capture_output=True, text=True, timeout=300, check=False, env={**os.environ},
                          cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert "Building prefix dict" not in done.stdout and "Warning" not in done.stdout


def test_the_product_cli_without_extensions_has_no_tooling_commands(capsys):
    with pytest.raises(SystemExit) as raised:
        build_parser(extensions=()).parse_args(["setup"])
    assert raised.value.code == 2 and "invalid choice: 'setup'" in capsys.readouterr().err
    assert build_parser(extensions=()).parse_args(["serve"]).command == "serve"


def test_the_installed_tooling_adds_setup_train_demo_and_serves_after_preparing():
    from provisioning.commands import TOOLING, cmd_prepare_and_serve

    assert TOOLING in installed_extensions()  # pyproject.toml's agentic_rag.cli entry point
    parser = build_parser()
    assert parser.parse_args(["train", "--with-feedback"]).with_feedback is True
    assert parser.parse_args(["setup", "--no-train"]).no_train is True
    assert parser.parse_args(["demo"]).query
    assert TOOLING.commands["serve"] is cmd_prepare_and_serve


def test_an_extension_command_runs_and_its_errors_are_one_line(settings, capsys):
    seen = []

    def add_parsers(sub):
        sub.add_parser("hello").add_argument("name")

    def hello(args, given):
        seen.append((args.name, given.collection))
        if args.name == "bad":
            raise ValueError("no such name")

    extension = CliExtension(add_parsers=add_parsers, commands={"hello": hello})
    assert main(["hello", "世界"], extensions=[extension]) == 0
    assert seen == [("世界", settings.collection)]
    assert main(["hello", "bad"], extensions=[extension]) == 2
    assert capsys.readouterr().err == "error: no such name\n"
