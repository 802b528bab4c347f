"""Quantities a legal answer states: durations, amounts, ages, counts and percentages, in Chinese or Arabic numerals.

Each is read as (value, unit) so that 六个月 = 6个月, 二千元 = 2000元, 1万元 = 一万元, 十六周岁 = 16岁 and
百分之三十 = 30%; a range (3至6个月, 一千元以上二千元以下) gives one quantity per bound. Article numbers
(第十三条) and dates (2021年) are not quantities.

Usage::

    from helpers.statutes.quantities import quantities
    [(q.value, q.unit) for q in quantities("试用期不得超过二个月，罚款1000至2000元")]
    # [(2.0, '月'), (1000.0, '元'), (2000.0, '元')]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from helpers.statutes.numerals import cn_to_int

_CN = "零〇一二两三四五六七八九十百千万"
_DIGITS = "零〇一二两三四五六七八九"
NUMBER = rf"(?:\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?|[{_CN}]+(?:点[{_CN}]+)?|半)"  # 10,000 too
# the unit as written → (canonical unit, multiplier); longest first so 个工作日 wins over 日
UNITS = {
    "个工作日": ("工作日", 1), "工作日": ("工作日", 1), "个小时": ("小时", 1), "小时": ("小时", 1),
    "个月": ("月", 1), "月": ("月", 1), "周岁": ("岁", 1), "岁": ("岁", 1), "年": ("年", 1),
    "日": ("日", 1), "天": ("日", 1), "周": ("周", 1), "星期": ("周", 1),
    "万元": ("元", 10_000), "亿元": ("元", 100_000_000), "元": ("元", 1),
    "倍": ("倍", 1), "%": ("%", 1), "％": ("%", 1), "人": ("人", 1), "名": ("人", 1), "次": ("次", 1),
}
_UNIT_RE = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
QUANTITY_RE = re.compile(
    rf"(?<![第{_CN}\d.,])(?:百分之(?P<pct>{NUMBER})|(?P<low>{NUMBER})\s*(?:至|到|-|－|~|～|—)\s*)?"
    rf"(?(pct)|(?P<num>{NUMBER})\s*(?P<unit>{_UNIT_RE}))"
)

DATE_RE = re.compile(rf"(?:{NUMBER}年)?{NUMBER}月(?:{NUMBER}[日号])?|{NUMBER}年(?={NUMBER}月)")
ARTICLE_WORDS = {("人", 1.0), ("次", 1.0)}  # 一人 (一人公司), 一次 (一次性): words more often than counts


@dataclass(frozen=True)
class Quantity:
    value: float
    unit: str
    start: int  # the span of the text it was read from
    end: int

    @property
    def key(self) -> tuple[float, str]:
        return (self.value, self.unit)


def number_value(text: str) -> float:
    """``二`` → 2, ``1.5`` → 1.5, ``10,000`` → 10000, ``半`` → 0.5, ``三点五`` → 3.5, ``三点五万`` → 35000;
    `ValueError` for anything else."""
    if text == "半":
        return 0.5
    if re.fullmatch(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?", text):
        return float(text.replace(",", ""))
    whole, _, fraction = text.partition("点")
    value = float(cn_to_int(whole))
    scale = 1
    if fraction[-1:] in ("万", "亿"):  # 三点五万: the decimal, then its multiplier (as 3.5万)
        scale, fraction = (10_000 if fraction[-1] == "万" else 100_000_000), fraction[:-1]
    if any(ch not in _DIGITS for ch in fraction):
        raise ValueError(f"not a decimal fraction: {fraction!r}")
    if fraction:
        value += float("0." + "".join(str(cn_to_int(ch)) for ch in fraction))
    return value * scale


def quantities(text: str) -> list[Quantity]:
    """Every quantity in ``text``, in order (a range's lower bound first)."""
    found: list[Quantity] = []
    dates = [m.span() for m in DATE_RE.finditer(text) if "日" in m.group(0) or "号" in m.group(0) or "年" in m.group(0)]
    for match in QUANTITY_RE.finditer(text):
        if any(start <= match.start() < end for start, end in dates):
            continue  # 2021年1月1日: a date, not a duration
        try:
            if match.group("pct"):
                found.append(Quantity(number_value(match.group("pct")), "%", match.start(), match.end()))
                continue
            unit, scale = UNITS[match.group("unit")]
            value = number_value(match.group("num"))
            if unit == "年" and value >= 1900 and value == int(value):
                continue  # a year (2021年), not a duration
            if match.group("low"):
                found.append(Quantity(number_value(match.group("low")) * scale, unit, match.start(), match.end()))
            if (unit, value) not in ARTICLE_WORDS:
                found.append(Quantity(value * scale, unit, match.start(), match.end()))
        except ValueError:  # a run of numeral characters that is no number (万万, 十百)
            continue
    return found
