import pytest

from helpers.statutes.neighbours import neighbour_keys, referred_keys

CIVIL = "中华人民共和国民法典"


def test_neighbours_nearest_first_and_never_before_the_first_article():
    assert neighbour_keys(f"{CIVIL}第五百条", span=2) == [
        f"{CIVIL}第四百九十九条", f"{CIVIL}第五百零一条", f"{CIVIL}第四百九十八条", f"{CIVIL}第五百零二条"]
    assert neighbour_keys(f"{CIVIL}第一条", span=2) == [f"{CIVIL}第二条", f"{CIVIL}第三条"]
    assert neighbour_keys(f"{CIVIL}第五百条", span=0) == []


def test_an_older_version_has_the_in_force_neighbours():
    assert neighbour_keys(f"{CIVIL}第十条@2017-10-01", span=1) == [f"{CIVIL}第九条", f"{CIVIL}第十一条"]


def test_keys_without_a_plain_article_number_have_none():
    assert neighbour_keys(f"{CIVIL}第十条之一") == []
    assert neighbour_keys("中华人民共和国刑法修正案（八）条目二十二") == []
    with pytest.raises(ValueError, match="span"):
        neighbour_keys(f"{CIVIL}第十条", span=-1)


def test_referred_articles_once_each_in_order():
    text = "违反本法第八十二条之一规定的，依照本法第四十七条处理；本法第四十七条另有规定的除外。第九条"
    assert referred_keys("劳动合同法", text) == ["劳动合同法第八十二条之一", "劳动合同法第四十七条"]
    assert referred_keys("劳动合同法", "依照民法典第五百条") == []
