"""Chinese numerals as used in statute numbering (第一千二百六十条, 第十三条之一).

Usage::

    from helpers.statutes.numerals import cn_to_int, int_to_cn
    assert cn_to_int("一千二百六十") == 1260
    assert int_to_cn(1032) == "一千零三十二"
"""

from __future__ import annotations

DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
UNITS = {"十": 10, "百": 100, "千": 1000, "万": 10000}
CN_NUMERAL_CHARS = "".join(DIGITS) + "".join(UNITS)
_DIGIT_CHARS = "零一二三四五六七八九"


def cn_to_int(text: str) -> int:
    """Parse a Chinese (or Arabic) numeral; raise `ValueError` for anything else."""
    text = text.strip()
    if text.isdigit():
        return int(text)
    if not text or any(ch not in DIGITS and ch not in UNITS for ch in text):
        raise ValueError(f"not a Chinese numeral: {text!r}")
    total, section, number, smallest_unit = 0, 0, 0, 10000
    for ch in text:
        if ch in DIGITS:
            number = DIGITS[ch]
        elif ch == "万":  # once, after something (一万, not 万万 or 万)
            if total or not section + number:
                raise ValueError(f"not a Chinese numeral: {text!r}")
            total += (section + number) * 10000
            section, number, smallest_unit = 0, 0, 10000
        else:  # 千, 百, 十 in falling order within a section (十百 is no number)
            if UNITS[ch] >= smallest_unit:
                raise ValueError(f"not a Chinese numeral: {text!r}")
            section += (number or 1) * UNITS[ch]
            number, smallest_unit = 0, UNITS[ch]
    return total + section + number


def int_to_cn(value: int) -> str:
    """Write a positive integer below 100,000 the way statutes number their articles."""
    if not 0 < value < 100_000:
        raise ValueError(f"article numbers must be in 1..99999, got {value}")
    parts: list[str] = []
    zero_pending = False
    for unit_value, unit in ((10000, "万"), (1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = value // unit_value % 10
        if digit == 0:
            if parts:
                zero_pending = True
            continue
        if zero_pending:
            parts.append("零")
            zero_pending = False
        parts.append(_DIGIT_CHARS[digit] + unit)
    text = "".join(parts)
    return text[1:] if text.startswith("一十") else text
