"""`helpers.text_encoding.jieba_tokenizer`: the terms BM25 indexes and searches (the marked character n-grams and
their help where words differ are in components/retrievers/test_retrieval_paths.py)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.text_encoding.jieba_tokenizer import DEFAULT_STOPWORDS, JiebaTokenizer, char_ngrams, term_id

REPO = Path(__file__).resolve().parents[3]
ARTICLE = "个人信息处理者应当取得个人同意"


def words(**options) -> JiebaTokenizer:
    return JiebaTokenizer(char_ngrams=(), **options)


def test_search_mode_adds_the_sub_words_of_a_long_word() -> None:
    accurate, search = words(mode="accurate").tokenize(ARTICLE), words().tokenize(ARTICLE)
    assert accurate == ["个人信息处理者", "应当", "取得", "个人", "同意"]
    assert {"个人", "信息", "处理"} <= set(search) and "个人信息处理者" in search  # a lay question's words match too


def test_the_legal_dictionary_keeps_a_term_whole() -> None:
    assert words(mode="accurate").tokenize("精神损害赔偿") == ["精神损害赔偿"]
    assert words(mode="accurate", user_dict="").tokenize("精神损害赔偿") != ["精神损害赔偿"]  # jieba alone splits it


def test_a_user_dictionary_of_ones_own_is_loaded(tmp_path: Path) -> None:
    terms = tmp_path / "terms.txt"
    terms.write_text("居住权登记 20000 n\n", encoding="utf-8")
    assert "居住权登记" not in words(mode="accurate").tokenize("申请居住权登记")
    assert "居住权登记" in words(mode="accurate", user_dict=str(terms)).tokenize("申请居住权登记")


def test_stopwords_drop_words_but_not_their_character_ngrams() -> None:
    """A question made of stopwords still has n-grams to match on (stopwords apply to jieba's words only)."""
    assert words().tokenize("我们可以怎么办") == []
    assert "怎么办" in words(stopwords="").tokenize("我们可以怎么办")
    assert "#怎么" in JiebaTokenizer().tokenize("我们可以怎么办")


def test_a_stopword_list_of_ones_own_replaces_the_default(tmp_path: Path) -> None:
    stopwords = tmp_path / "stop.txt"
    stopwords.write_text("\n  应当  \n\n取得\n", encoding="utf-8")  # blank lines and spaces around are ignored
    tokenizer = words(mode="accurate", stopwords=str(stopwords))
    assert tokenizer.stopwords == {"应当", "取得"}
    assert tokenizer.tokenize(ARTICLE) == ["个人信息处理者", "个人", "同意"]
    assert "的" in DEFAULT_STOPWORDS.read_text(encoding="utf-8").split() and "的" in words(
        stopwords=str(stopwords)).tokenize("我的")


def test_text_without_word_characters_has_no_terms() -> None:
    for text in ("", "，。！？ \n\t", "《》（）——"):
        assert JiebaTokenizer().tokenize(text) == []


def test_terms_are_lower_cased_and_ngrams_never_span_punctuation() -> None:
    assert words().tokenize("GDPR与PIPL") == ["gdpr", "pipl"]  # 与 is a stopword
    assert "#r与" in JiebaTokenizer().tokenize("GDPR与PIPL")  # a run of letters and characters is one run
    assert char_ngrams("Ab，c d", (1, 2)) == ["#a", "#b", "#ab", "#c", "#d"]
    assert char_ngrams("同意", (3,)) == []  # a run shorter than n gives none of that size


def test_underscores_are_punctuation_not_terms() -> None:
    assert words(stopwords="").tokenize("于____年__月缴纳") == ["于", "年", "月", "缴纳"]


@pytest.mark.parametrize(("options", "message"), [
    ({"mode": "fast"}, "mode must be one of ('search', 'accurate'), got 'fast'"),
    ({"char_ngrams": (1, 0)}, "char_ngrams must be positive integers, got [1, 0]"),
    ({"char_ngrams": [2.5]}, "char_ngrams must be positive integers, got [2.5]"),
])
def test_bad_options_are_clear_errors(options: dict, message: str) -> None:
    with pytest.raises(ValueError) as error:
        JiebaTokenizer(**options)
    assert str(error.value) == message


def test_term_ids_are_31_bit_and_the_same_in_every_process() -> None:
    """The index is written by one process and searched by another: the id must not depend on Python's hash seed."""
    terms = ["同意", "#同", "个人信息", "a1"]
    ids = [term_id(t) for t in terms]
    assert all(0 <= i < 2**31 for i in ids) and len(set(ids)) == len(ids)
    code = f"from helpers.text_encoding.jieba_tokenizer import term_id; print([term_id(t) for t in {terms!r}])"
    other = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": "12345"}, timeout=60)
    assert other.stdout.strip() == str(ids)
