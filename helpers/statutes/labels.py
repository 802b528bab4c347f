"""How statutes are named, defined once: the law-name prefix, article numbers and the 《法名》第X条 label.

Usage::

    from helpers.statutes.labels import LAW_NAME_PREFIX, article_no, citation_label
    article_no("13")             # "第十三条"; article_no("十三", "一") → "第十三条之一"
    key_law("中华人民共和国民法典第五百条")   # "中华人民共和国民法典"
    article_key("中华人民共和国商标法", "第十条", "2019-04-23")   # "中华人民共和国商标法第十条@2019-04-23"
    citation_label(doc)          # "《中华人民共和国个人信息保护法》第十三条"
"""

from __future__ import annotations

import re

from haystack import Document

from helpers.statutes.numerals import cn_to_int, int_to_cn

LAW_NAME_PREFIX = "中华人民共和国"  # national laws carry it in the corpus; users and answers often leave it out
_KEY_RE = re.compile(r"^(.+?)(第[零〇一二三四五六七八九十百千万]+条(?:之[一二三四五六七八九十]+)?)(?:@[0-9-]+)?$")
VERSION_SEP = "@"  # an older version's key: law + article_no + "@" + its version date


def article_no(number: str, suffix: str | None = None) -> str:
    """Normalise an article number (Arabic or Chinese numerals) to the corpus form: ``13`` → ``第十三条``, with
    ``之一`` kept; raises `ValueError` for text that is not a number."""
    text = f"第{int_to_cn(cn_to_int(number))}条"
    return f"{text}之{suffix}" if suffix else text


def citation_label(doc: Document) -> str:
    """The label an answer cites an article by: ``《law》article_no``."""
    return f"《{doc.meta.get('law', '')}》{doc.meta.get('article_no', '')}"


def article_key(law: str, number: str, version: str | None = None) -> str:
    """An article's key: ``law + article_no`` for the version in force (the key the corpus, the training pairs and
    the citations use), ``law + article_no + "@" + version date`` for an older one, so versions never collide."""
    return f"{law}{number}{VERSION_SEP}{version}" if version else f"{law}{number}"


_ITEM_RE = re.compile(r"^(.+?)((?:第[零〇一二三四五六七八九十百千万]+条(?:之[一二三四五六七八九十]+)?"
                      r"|条目[零〇一二三四五六七八九十百]+))$")


def key_label(key: str) -> str:
    """An article key as a citation:
    ``中华人民共和国刑法修正案（八）条目二十二`` → ``《中华人民共和国刑法修正案（八）》条目二十二``
    (a key it cannot split is returned as it is)."""
    match = _ITEM_RE.match(key)
    return f"《{match.group(1)}》{match.group(2)}" if match else key


def key_law(key: str) -> str:
    """The law of an article key (``law + article_no``, as the corpus and the training pairs write it, or an older
    version's ``…@date``); a key without an article number is its own law."""
    match = _KEY_RE.match(key)
    return match.group(1) if match else key
