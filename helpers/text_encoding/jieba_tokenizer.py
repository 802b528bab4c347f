"""Jieba tokenisation shared by BM25 indexing and BM25 retrieval, so both sides cut text the same way.

Usage::

    from helpers.text_encoding.jieba_tokenizer import JiebaTokenizer
    tokenizer = JiebaTokenizer(mode="search")
    tokenizer.tokenize("个人信息处理者应当取得个人同意")  # ['个人', '信息', '个人信息', ..., '#个', '#个人', ...]

Besides jieba's words, the tokenizer emits the character unigrams and bigrams of the text (marked ``#``, so
they never collide with a one-character word). Lay questions are cut differently from statute text (“砸伤”
vs “致人损害”, unknown words split into single characters); the n-grams still match where the words do not.
On STARD train they lifted BM25 from R@10 0.536 / MRR@10 0.446 (words only) to 0.569 / 0.474
(benchmarks/reports/retrieval.md).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from functools import lru_cache
from pathlib import Path

import jieba

DATA_DIR = Path(__file__).parent / "data"
DEFAULT_USER_DICT = DATA_DIR / "legal_terms.txt"
DEFAULT_STOPWORDS = DATA_DIR / "stopwords.txt"
MODES = ("search", "accurate")
DEFAULT_CHAR_NGRAMS = (1, 2)
NGRAM_MARK = "#"
_TOKEN_RE = re.compile(r"[^\W_]", re.UNICODE)  # a word character other than "_" (a form's blank ____)
_SEPARATOR_RE = re.compile(r"[\W_]+", re.UNICODE)


@lru_cache(maxsize=1 << 18)
def term_id(term: str) -> int:
    """A stable 31-bit id for a term (the sparse-vector index stored in Qdrant); cached, as indexing hashes
    the same few hundred thousand terms millions of times."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big") & 0x7FFFFFFF


def char_ngrams(text: str, sizes: tuple[int, ...]) -> list[str]:
    """Character n-grams of each run of word characters (punctuation and spaces break runs), lower-cased."""
    grams = []
    for run in _SEPARATOR_RE.split(text.lower()):
        for n in sizes:
            grams.extend(NGRAM_MARK + run[i:i + n] for i in range(len(run) - n + 1))
    return grams


def _read_lines(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


class JiebaTokenizer:
    """Jieba word segmentation with a legal user dictionary and optional stopwords.

    :param mode: ``search`` (``cut_for_search``: words plus their sub-words, better recall) or ``accurate``.
    :param user_dict: path of a jieba user dictionary (one term per line, optional frequency); ``""`` = none.
    :param stopwords: path of a stopword list (one per line); ``""`` = keep every token (stopwords apply to
        jieba's words, not to the n-grams).
    :param char_ngrams: character n-gram sizes added to the words; ``()`` = words only.
    """

    def __init__(self, mode: str = "search", user_dict: str | None = None, stopwords: str | None = None,
                 char_ngrams: tuple[int, ...] | list[int] = DEFAULT_CHAR_NGRAMS) -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
        if any(not isinstance(n, int) or n < 1 for n in char_ngrams):
            raise ValueError(f"char_ngrams must be positive integers, got {list(char_ngrams)!r}")
        self.mode = mode
        self.char_ngrams = tuple(char_ngrams)
        self.user_dict = str(DEFAULT_USER_DICT) if user_dict is None else user_dict
        self.stopwords_path = str(DEFAULT_STOPWORDS) if stopwords is None else stopwords
        self._jieba = _jieba_instance(self.user_dict)
        self.stopwords = frozenset(_read_lines(Path(self.stopwords_path))) if self.stopwords_path else frozenset()

    def tokenize(self, text: str) -> list[str]:
        """Cut ``text`` into lower-cased terms (words, then n-grams), dropping punctuation, whitespace and
        stopwords."""
        cut = self._jieba.cut_for_search(text) if self.mode == "search" else self._jieba.cut(text)
        words = [t for t in (w.strip().lower() for w in cut) if t and _TOKEN_RE.search(t) and t not in self.stopwords]
        return words + char_ngrams(text, self.char_ngrams) if self.char_ngrams else words


_lock = threading.Lock()


@lru_cache(maxsize=8)
def _jieba_instance(user_dict: str) -> jieba.Tokenizer:
    """One initialised jieba tokenizer per user dictionary (initialisation takes about a second)."""
    with _lock:
        jieba.setLogLevel(logging.WARNING)  # its "Building prefix dict ..." lines say nothing to a user
        tokenizer = jieba.Tokenizer()
        tokenizer.initialize()
        if user_dict:
            tokenizer.load_userdict(user_dict)
        return tokenizer
