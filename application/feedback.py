"""Answer feedback: 👍 / 👎 and "the right article is …", kept durably and turned into training pairs.

Every answer gets an ``answer_id``. The server keeps its newest answers in an `AnswerRegistry`, on disk so that
they outlive a restart (``DATA_DIR/feedback/answers.jsonl``); the CLI keeps its last one in a file
(`save_last_answer`). ``POST /feedback``, the web UI's buttons and ``python -m pipelines
feedback`` add a record to the `FeedbackLog`: ``DATA_DIR/feedback/feedback.jsonl``, one JSON line per record, with
the question, the evidence keys, the cited keys and the answer. Each record is appended with one ``O_APPEND`` write
and fsync'd before the call returns, so a kill loses at most the record being written, never an earlier one (a torn
last line is skipped when read, and the next record starts on a line of its own).

`FeedbackLog.pairs` turns the records into ``train --pairs`` input (``{"query", "gold"}``): the question with the
article the user named, or with the articles a 👍 answer cited; ``train --with-feedback`` adds them to its pairs.

Usage::

    registry, log = AnswerRegistry(), FeedbackLog(settings.data_dir / FEEDBACK_FILE)
    answered = registry.remember(result, question, "statutes")          # result.answer_id is set too
    log.add(answered, parse_verdict("👎"), article=resolve_article(store, "劳动合同法第八十二条"), source="api")
    log.pairs()   # [{"query": question, "gold": ["中华人民共和国劳动合同法第八十二条"]}]
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading
import time
import uuid
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.retrievers.citation_lookup import CitationLookup
from document_store.knowledge_base_store import KnowledgeBaseStore
from helpers.checks.user_text import shown
from helpers.records.result import RAGResult

FEEDBACK_FILE = Path("feedback") / "feedback.jsonl"
ANSWERS_FILE = Path("feedback") / "answers.jsonl"  # the server's newest answers (`AnswerRegistry`)
LAST_ANSWER_FILE = Path("feedback") / "last_answer.json"
UP, DOWN = "up", "down"
VERDICTS = {"up": UP, "👍": UP, "down": DOWN, "👎": DOWN}
REMEMBERED_ANSWERS = 1000
MAX_ARTICLE_CHARS = 100


class UnknownAnswerError(LookupError):
    """Feedback named an answer this server does not hold (never given, or older than its newest answers)."""


@dataclass(frozen=True)
class AnsweredQuestion:
    """What a feedback record keeps of the answer it judges."""

    answer_id: str
    question: str
    answer: str
    evidence: tuple[str, ...]  # the keys of what the answer stage was given
    cited: tuple[str, ...]  # the keys of the articles the answer cites
    knowledge_base: str | None
    mode: str

    @classmethod
    def of(cls, result: RAGResult, question: str) -> AnsweredQuestion:
        """``result`` (given an ``answer_id`` here when it has none) as answered to ``question``."""
        result.answer_id = result.answer_id or uuid.uuid4().hex
        evidence = result.evidence or result.sources
        return cls(answer_id=result.answer_id, question=question, answer=result.answer,
                   evidence=tuple(e["key"] for e in evidence if e.get("key")),
                   cited=tuple(c["key"] for c in result.citations if c.get("key") and c.get("type") == "statute"),
                   knowledge_base=result.knowledge_base, mode=result.mode)

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "evidence": list(self.evidence), "cited": list(self.cited)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnsweredQuestion:
        return cls(**{**data, "evidence": tuple(data["evidence"]), "cited": tuple(data["cited"])})


class AnswerRegistry:
    """The newest ``size`` answers by ``answer_id``; thread-safe. With a ``path`` they survive a restart: each one
    is appended there as it is remembered (one fsync'd line) and read back at start, so feedback on an answer the
    web UI still shows works after the server restarted; the file is rewritten with the newest ``size`` once it
    holds twice as many."""

    def __init__(self, size: int = REMEMBERED_ANSWERS, path: Path | None = None) -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, got {size}")
        self.size, self.path = size, path
        self._answers: OrderedDict[str, AnsweredQuestion] = OrderedDict()
        self._lock = threading.Lock()
        self._lines = 0  # the lines in the file
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        try:
            lines = path.read_bytes().splitlines()
        except FileNotFoundError:
            return
        self._lines = len(lines)
        for line in lines:
            try:
                answered = AnsweredQuestion.from_dict(json.loads(line))
            except (ValueError, KeyError, TypeError):  # a line torn by a kill
                continue
            self._keep(answered)

    def _keep(self, answered: AnsweredQuestion) -> None:
        self._answers[answered.answer_id] = answered
        self._answers.move_to_end(answered.answer_id)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)

    def remember(self, result: RAGResult, question: str) -> AnsweredQuestion:
        answered = AnsweredQuestion.of(result, question)
        with self._lock:
            self._keep(answered)
            if self.path is not None:
                append_line(self.path, (json.dumps(answered.to_dict(), ensure_ascii=False) + "\n").encode("utf-8"))
                self._lines += 1
                if self._lines > 2 * self.size:
                    self._rewrite(self.path)
        return answered

    def _rewrite(self, path: Path) -> None:
        """The file with the answers held now only (temp file, fsync, rename)."""
        temporary = path.with_name(f".{path.name}.{os.getpid()}")
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.writelines(json.dumps(a.to_dict(), ensure_ascii=False) + "\n" for a in self._answers.values())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
        self._lines = len(self._answers)

    def get(self, answer_id: str) -> AnsweredQuestion:
        with self._lock:
            if answer_id in self._answers:
                return self._answers[answer_id]
        raise UnknownAnswerError(f"unknown answer_id {shown(answer_id)}: feedback is taken for this server's newest "
                                 f"{self.size} answers")


def append_line(path: Path, line: bytes) -> None:
    """Append ``line`` with one ``O_APPEND`` write and fsync it; a line torn by a kill before it is closed first,
    so the new one starts a line of its own. Callers serialise their own writes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size and os.pread(fd, 1, size - 1) != b"\n":
            line = b"\n" + line
        written = 0
        while written < len(line):
            written += os.write(fd, line[written:])
        os.fsync(fd)
    finally:
        os.close(fd)


def parse_verdict(value: Any) -> str | None:
    """``up`` / ``down`` (or 👍 / 👎) as `UP` / `DOWN`; None for no verdict; anything else a `ValueError`."""
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value.strip().lower() not in VERDICTS:
        raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}, got {value!r}")
    return VERDICTS[value.strip().lower()]


def resolve_article(store: KnowledgeBaseStore, text: str) -> str:
    """The key of the article ``text`` names in the knowledge base (劳动合同法第八十二条, 《民法典》第1032条);
    a `ValueError` when it names none, or none the knowledge base holds."""
    text = text.strip() if isinstance(text, str) else ""
    if not text or len(text) > MAX_ARTICLE_CHARS:
        raise ValueError(f"article must name one article, e.g. 劳动合同法第八十二条 (at most {MAX_ARTICLE_CHARS} "
                         "characters)")
    rankings = CitationLookup(document_store=store).run(queries=[text])["rankings"]
    keys = list(dict.fromkeys(doc.meta["key"] for ranking in rankings for doc in ranking.documents))
    if len(keys) != 1:
        raise ValueError(f"unknown article {text!r}: name one article the knowledge base holds, with its law "
                         "(e.g. 劳动合同法第八十二条)" if not keys else
                         f"{text!r} names {len(keys)} articles ({'、'.join(keys[:3])}…); name one")
    return keys[0]


def save_last_answer(folder: Path, answered: AnsweredQuestion) -> None:
    """Keep the CLI's last answer (for ``feedback --last``), written whole (temp file, rename)."""
    path = folder / LAST_ANSWER_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(answered.to_dict(), ensure_ascii=False), encoding="utf-8")
    os.replace(temporary, path)


def load_last_answer(folder: Path) -> AnsweredQuestion:
    try:
        return AnsweredQuestion.from_dict(json.loads((folder / LAST_ANSWER_FILE).read_text(encoding="utf-8")))
    except FileNotFoundError:
        raise UnknownAnswerError("no answer to give feedback on yet: ask a question first "
                                 "(`python -m pipelines ask …`)") from None
    except (OSError, ValueError, KeyError, TypeError) as error:
        raise UnknownAnswerError(f"the last answer cannot be read ({error}); ask again") from error


class FeedbackLog:
    """Append-only feedback records in a JSON-lines file; safe across threads and processes (one ``O_APPEND`` write
    per record)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def add(self, answered: AnsweredQuestion, verdict: str | None, article: str | None = None,
            source: str = "api") -> dict[str, Any]:
        """Append a record (a verdict, the right article's key, or both) and return it once it is on disk."""
        if verdict not in (UP, DOWN, None):
            raise ValueError(f"verdict must be {UP!r}, {DOWN!r} or None, got {verdict!r}")
        if verdict is None and not article:
            raise ValueError("feedback needs a verdict (up/down, 👍/👎) or the right article, or both")
        record = {"feedback_id": uuid.uuid4().hex, "time": round(time.time(), 3), "verdict": verdict,
                  "article": article, "source": source, **answered.to_dict()}
        self._append((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))
        return record

    def _append(self, line: bytes) -> None:
        with self._lock:
            append_line(self.path, line)

    def records(self) -> list[dict[str, Any]]:
        """Every complete record, oldest first (a torn or foreign line is skipped)."""
        try:
            lines = self.path.read_bytes().splitlines()
        except FileNotFoundError:
            return []
        out = []
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and {"feedback_id", "question", "verdict", "article"} <= record.keys():
                out.append(record)
        return out

    def pairs(self, knowledge_base: str | None = None) -> list[dict[str, Any]]:
        """Training pairs: each question with the article a user named as right, or with what a 👍 answer cited
        (only the answers from ``knowledge_base`` when given: its keys are what a model trained for it knows)."""
        pairs: dict[tuple[str, tuple[str, ...]], dict[str, Any]] = {}
        for record in self.records():
            if knowledge_base is not None and record.get("knowledge_base") != knowledge_base:
                continue
            gold = ([record["article"]] if record["article"]
                    else list(record["cited"]) if record["verdict"] == UP else [])
            if gold:
                pairs[(record["question"], tuple(gold))] = {"query": record["question"], "gold": gold}
        return list(pairs.values())

    def export(self, path: Path, knowledge_base: str | None = None) -> int:
        """Write `pairs` as a ``train --pairs`` file; returns how many."""
        pairs = self.pairs(knowledge_base)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(json.dumps(p, ensure_ascii=False) + "\n" for p in pairs), encoding="utf-8")
        return len(pairs)
