"""`helpers.records.trained_files.read_trained_json`: a trained model's JSON, or a one-line error that says how to
fix it."""

from pathlib import Path

import pytest

from helpers.records.trained_files import read_trained_json


def read(folder: Path) -> dict:
    return read_trained_json(folder, "evaluator.json", "relevance evaluator", "set JUDGE=llm")


def test_a_json_object_is_returned_as_it_was_written(tmp_path: Path) -> None:
    (tmp_path / "evaluator.json").write_text('{"weights": [0.5, -1], "scope": "全部法律"}', encoding="utf-8")
    assert read(tmp_path) == {"weights": [0.5, -1], "scope": "全部法律"}
    assert read_trained_json(str(tmp_path), "evaluator.json", "x", "y") == read(tmp_path)  # a str folder too


@pytest.mark.parametrize("make", ["nothing", "missing folder", "a folder of that name"])
def test_a_folder_without_the_file_says_what_it_is_not_and_both_ways_out(tmp_path: Path, make: str) -> None:
    folder = tmp_path / "model"
    if make != "missing folder":
        folder.mkdir()
    if make == "a folder of that name":
        (folder / "evaluator.json").mkdir()
    with pytest.raises(ValueError) as error:
        read(folder)
    assert str(error.value) == (f"{folder} is not a trained relevance evaluator (no evaluator.json); run "
                                "`python -m pipelines train` or set JUDGE=llm")


@pytest.mark.parametrize(("content", "error"), [
    (b'{"weights": [0.5,', "JSONDecodeError"),
    (b"", "JSONDecodeError"),
    (b'{"scope": "\xe5\x85"}', "UnicodeDecodeError"),  # cut inside a UTF-8 character
])
def test_an_unreadable_file_names_itself_its_error_and_retraining(tmp_path: Path, content: bytes, error: str) -> None:
    (tmp_path / "evaluator.json").write_bytes(content)
    with pytest.raises(ValueError) as raised:
        read(tmp_path)
    assert str(raised.value) == (f"{tmp_path / 'evaluator.json'} is unreadable ({error}); "
                                 "retrain with `python -m pipelines train`")
    assert raised.value.__cause__ is not None and type(raised.value.__cause__).__name__ == error


@pytest.mark.parametrize("content", ["[1, 2]", '"weights"', "null", "3"])
def test_json_that_is_not_an_object_is_refused(tmp_path: Path, content: str) -> None:
    (tmp_path / "evaluator.json").write_text(content, encoding="utf-8")
    with pytest.raises(ValueError, match=r"evaluator\.json is not a JSON object; retrain with `python -m pipelines "):
        read(tmp_path)
