"""Small labelled pairs over the 个人信息保护法 for training tests (seconds, not the full corpus)."""

import json

PIPL = "中华人民共和国个人信息保护法"


def pairs_file(tmp_path, pairs, name="pairs.jsonl"):
    path = tmp_path / name
    path.write_text("\n".join(json.dumps(p, ensure_ascii=False) for p in pairs), encoding="utf-8")
    return path


def pipl_pairs(n=60):
    numbers = ["一", "二", "三", "四", "五", "六", "七", "八", "九", "十"]
    keys = [f"{PIPL}第{numbers[i % 10]}条" for i in range(n)]
    questions = ["个人信息保护的目的", "个人信息的定义", "处理个人信息的原则", "处理个人信息应当具有明确合理的目的",
                 "处理个人信息应当公开透明", "个人信息的质量", "个人信息处理者的责任", "个人信息保护的宣传教育",
                 "个人信息保护的国际合作", "禁止非法处理个人信息"]
    # one pair in four names an article about something else (complaints), so some evidence lacks its gold
    return [{"query": questions[i % 10] + "？" * (i // 10 + 1),
             "gold": [f"{PIPL}第六十五条" if i % 4 == 3 else keys[i]]} for i in range(n)]
