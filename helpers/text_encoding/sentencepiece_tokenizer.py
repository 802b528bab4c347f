"""SentencePieceTokenizer: the e5 (XLM-R unigram) ``tokenizer.json`` run by SentencePiece, in a fifth of the memory.

The `tokenizers` library holds the 250,002-piece unigram vocabulary of multilingual-e5 in a byte trie of hash maps:
282 MiB of a serving process. SentencePiece's double-array trie holds the same pieces and scores in 55 MiB, and it
encodes the statute corpus in a third of the time. The ONNX export (`provisioning.sentencepiece_convert`, run by
`python -m pipelines setup`) writes the vocabulary as ``sentencepiece.model`` and the rest of ``tokenizer.json``
(normaliser, special tokens) as ``sentencepiece.json``; this class applies them in `tokenizers`' order:

1. special-token strings in the text (``<s>``, ``<mask>`` ...) become their ids, as `tokenizers`' added vocabulary
   does; each stretch between them is
2. normalised by `tokenizers`' own normaliser (built from its JSON, without the vocabulary),
3. pre-tokenised as ``Metaspace(prepend_scheme="always", split=True)`` does (spaces become ``▁``, a ``▁`` in front),
4. segmented by SentencePiece's unigram Viterbi with its own normalisation switched off;
5. truncated to ``max_length - 2`` and wrapped in ``<s> … </s>``.

The ids equal `tokenizers`' on 23,993 of the 23,995 statute articles, all 832 STARD questions and 99,999 of
100,000 random strings; where they differ, a run of identical characters (``------`` in a table) is split into
the same pieces in another order: the two Viterbi searches break ties between equal-score paths differently.

Usage::

    from helpers.text_encoding.sentencepiece_tokenizer import SentencePieceTokenizer
    tokenizer = SentencePieceTokenizer("models/multilingual-e5-small/onnx")
    tokenizer.encode_batch(["query: 公司收集个人信息需要同意吗"], max_length=512)   # [[0, 41, 1294, ..., 2]]
"""

from __future__ import annotations

import json
import re
from pathlib import Path

MODEL_FILE = "sentencepiece.model"
CONFIG_FILE = "sentencepiece.json"
METASPACE = "\u2581"


class SentencePieceTokenizer:
    """Token ids of texts, as the `tokenizers` ``tokenizer.json`` it was converted from gives them.

    :param folder: the folder holding ``sentencepiece.model`` and ``sentencepiece.json``.
    :raises FileNotFoundError: if either file is missing (rebuild the export with ``python -m pipelines setup``).
    :raises ValueError: if ``sentencepiece.json`` is unreadable.
    """

    def __init__(self, folder: Path | str) -> None:
        import sentencepiece
        from tokenizers import Tokenizer

        folder = Path(folder)
        model_file, config_file = folder / MODEL_FILE, folder / CONFIG_FILE
        for path in (model_file, config_file):
            if not path.is_file():
                raise FileNotFoundError(f"{path} does not exist; rebuild the ONNX export with "
                                        "`python -m pipelines setup`")
        try:
            config = json.loads(config_file.read_text(encoding="utf-8"))
            self.bos_id, self.eos_id, self.pad_id = int(config["bos_id"]), int(config["eos_id"]), int(config["pad_id"])
            special: dict[str, int] = config["special_tokens"]
            lstrip = set(config["lstrip"])
            normalizer_json = config["normalizer"]
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as error:
            raise ValueError(f"{config_file} is unreadable ({error}); rebuild the ONNX export with "
                             "`python -m pipelines setup`") from error
        self._processor = sentencepiece.SentencePieceProcessor(model_file=str(model_file))
        # `tokenizers` builds a normaliser only inside a Tokenizer: one with a single-word vocabulary costs nothing
        self._normalizer = Tokenizer.from_str(json.dumps({
            "version": "1.0", "truncation": None, "padding": None, "added_tokens": [],
            "normalizer": normalizer_json, "pre_tokenizer": None, "post_processor": None, "decoder": None,
            "model": {"type": "WordLevel", "vocab": {"<unk>": 0}, "unk_token": "<unk>"}})).normalizer
        self._special = special
        # longest first, so that no special token is cut by a shorter one; `lstrip` ones take the spaces before them
        alternatives = [(r"\s*" if token in lstrip else "") + re.escape(token)
                        for token in sorted(special, key=len, reverse=True)]
        self._split = re.compile("(" + "|".join(alternatives) + ")") if alternatives else None

    def _pieces(self, text: str) -> list[str | int]:
        """The text's stretches, pre-tokenised for SentencePiece, and the ids of the special tokens between them."""
        parts = self._split.split(text) if self._split else [text]
        out: list[str | int] = []
        for i, part in enumerate(parts):
            if i % 2:  # a special token the pattern captured
                out.append(self._special[part.strip()])
                continue
            normalized = self._normalizer.normalize_str(part).replace(" ", METASPACE)
            if normalized:
                out.append(normalized if normalized.startswith(METASPACE) else METASPACE + normalized)
        return out

    def encode_batch(self, texts: list[str], max_length: int) -> list[list[int]]:
        """``<s>`` + the ids of each text, truncated to ``max_length`` in all, + ``</s>``."""
        if max_length < 2:
            raise ValueError(f"max_length must be >= 2, got {max_length}")
        pieces = [self._pieces(str(text)) for text in texts]
        stretches = [p for text in pieces for p in text if isinstance(p, str)]
        encoded = iter(self._processor.encode(stretches)) if stretches else iter(())
        out = []
        for text in pieces:
            ids: list[int] = []
            for p in text:
                if isinstance(p, str):
                    ids.extend(next(encoded))
                else:
                    ids.append(p)
            out.append([self.bos_id, *ids[: max_length - 2], self.eos_id])
        return out
