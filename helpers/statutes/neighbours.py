"""Where the decisive article hides when a search misses it: next to a hit, or named by one.

When round 1 misses, the gold is often an article just before or after a hit of the right law, or one a hit refers to
(``依照本法第X条``); see `research/reports/round2_paths_study.md`. These functions name those articles by key.

Usage::

    from helpers.statutes.neighbours import neighbour_keys, referred_keys
    neighbour_keys("中华人民共和国民法典第五百条", span=1)
    # ["中华人民共和国民法典第四百九十九条", "中华人民共和国民法典第五百零一条"]
    referred_keys("中华人民共和国劳动合同法", "……依照本法第四十七条的规定……")
    # ["中华人民共和国劳动合同法第四十七条"]
"""

from __future__ import annotations

import re

from helpers.statutes.labels import VERSION_SEP, article_key, article_no, key_law
from helpers.statutes.numerals import CN_NUMERAL_CHARS, cn_to_int

_NUMBER = re.compile(rf"^第([{CN_NUMERAL_CHARS}]+)条$")
_REFERENCE = re.compile(rf"本法第([{CN_NUMERAL_CHARS}]+)条(?:之([一二三四五六七八九十]+))?")


def neighbour_keys(key: str, span: int = 2) -> list[str]:
    """The keys of the articles numbered up to ``span`` before and after ``key``'s, nearest first (the in-force
    version's keys; an ``之一`` article or a key without an article number has no neighbours here)."""
    if span < 0:
        raise ValueError(f"span must be >= 0, got {span}")
    law = key_law(key)
    match = _NUMBER.match(key.split(VERSION_SEP)[0][len(law):])
    if law == key or match is None:
        return []
    number = cn_to_int(match.group(1))
    found = []
    for distance in range(1, span + 1):
        found += [article_key(law, article_no(str(n))) for n in (number - distance, number + distance) if n > 0]
    return found


def referred_keys(law: str, text: str) -> list[str]:
    """The keys of the articles of ``law`` that ``text`` names as ``本法第X条`` (or ``之一``), in order, once each."""
    keys = [article_key(law, article_no(str(cn_to_int(m.group(1))), m.group(2))) for m in _REFERENCE.finditer(text)]
    return list(dict.fromkeys(keys))
