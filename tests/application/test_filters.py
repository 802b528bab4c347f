"""The filter contract (`application.filters.check_filters`) at unit level: valid filters returned as given, the
exact limits (`MAX_DEPTH`, `MAX_NODES`, `MAX_LIST_ITEMS`, `MAX_TEXT_CHARS`, 64-bit integers), the value type each
operator compares, field names, and one-line `ValueError`s that name where the filter is wrong. That a bad filter is
an HTTP 400 of the real server is in tests/serving/test_hayhooks_server.py; fuzzing in tests/fuzz/."""

import pytest

from application.filters import MAX_DEPTH, MAX_LIST_ITEMS, MAX_NODES, MAX_TEXT_CHARS, check_filters

PIPL = "中华人民共和国个人信息保护法"
LAW = {"field": "meta.law", "operator": "==", "value": PIPL}


def comparison(operator, value, field="meta.law"):
    return {"field": field, "operator": operator, "value": value}


def refused(filters) -> str:
    """The message of the `ValueError` ``filters`` is refused with (one line)."""
    with pytest.raises(ValueError) as error:
        check_filters(filters)
    message = str(error.value)
    assert "\n" not in message
    return message


def test_no_filters_is_none():
    assert check_filters(None) is None
    assert check_filters({}) is None


@pytest.mark.parametrize("filters", [
    LAW,
    comparison("!=", False, "meta.in_force"),
    comparison("==", True, "meta.in_force"),
    comparison("==", 1.5, "meta.score"),
    comparison("in", [PIPL, "中华人民共和国民法典"]),
    comparison("not in", ["第十三条", 14, True], "meta.article_no"),
    comparison(">=", 20210101, "meta.valid_from"),
    comparison("<", "2021-11-01", "meta.version_date"),
    comparison("<=", "2021-11-01T08:00:00+08:00", "meta.version_date"),
    comparison(">", -(2**63), "meta.valid_to"),
    comparison("<", 2**63 - 1, "meta.valid_to"),
    {"operator": "NOT", "conditions": [LAW]},
    {"operator": "AND", "conditions": [LAW, {"operator": "OR", "conditions": [
        comparison("==", "第十三条", "meta.article_no"), comparison("==", "第十四条", "meta.article_no")]}]},
])
def test_a_valid_filter_is_returned_as_it_is(filters):
    assert check_filters(filters) is filters


@pytest.mark.parametrize("filters", [[], "", "law=民法典", 0, [LAW]])
def test_a_filter_that_is_no_object_is_refused(filters):
    assert refused(filters).startswith("filters must be an object")


def test_depth_is_limited_to_max_depth_levels():
    nested = LAW
    for _ in range(MAX_DEPTH - 1):
        nested = {"operator": "NOT", "conditions": [nested]}
    assert check_filters(nested) is nested  # the comparison sits at level MAX_DEPTH
    message = refused({"operator": "NOT", "conditions": [nested]})
    assert message.endswith(f"filters nest at most {MAX_DEPTH} levels deep")
    assert message.startswith("filters" + ".conditions[0]" * MAX_DEPTH + ":")


def test_conditions_are_limited_to_max_nodes():
    assert check_filters({"operator": "OR", "conditions": [LAW] * (MAX_NODES - 1)})  # with the OR: MAX_NODES
    assert refused({"operator": "OR", "conditions": [LAW] * MAX_NODES}) == (
        f"filters hold at most {MAX_NODES} conditions")


@pytest.mark.parametrize("operator", ["and", "Or", "LIKE", "=", "contains", None, 1, ["AND"]])
def test_an_unknown_operator_is_refused_naming_the_known_ones(operator):
    message = refused({"field": "meta.law", "operator": operator, "value": PIPL})
    assert message.startswith("filters.operator must be one of NOT, OR, AND, ==, !=, >, >=, <, <=, in, not in, got")


@pytest.mark.parametrize("filters", [
    {"operator": "AND", "conditions": [LAW], "field": "meta.law"},
    {"operator": "OR", "conditions": [LAW], "value": 1},
])
def test_a_logical_filter_has_exactly_operator_and_conditions(filters):
    assert "has exactly the keys operator and conditions" in refused(filters)


@pytest.mark.parametrize("conditions", [[], None, LAW, "meta.law"])
def test_a_logical_filter_needs_a_non_empty_list(conditions):
    assert refused({"operator": "AND", "conditions": conditions}) == (
        "filters: AND needs a non-empty list of conditions")


def test_a_comparison_has_exactly_field_operator_and_value():
    assert "exactly the keys field, operator and value" in refused({**LAW, "extra": 1})
    assert "exactly the keys field, operator and value" in refused({"field": "meta.law", "operator": "=="})


@pytest.mark.parametrize("field", [
    "meta.法名", "meta..law", "meta.law.", ".law", "1law", "meta.law name", "meta.law;drop", "a.b.c.d.e",
    "a" * 65, "", None, 7, ["meta.law"],
])
def test_a_field_is_a_dotted_ascii_name(field):
    assert refused(comparison("==", PIPL, field)).startswith("filters.field must be a field name such as meta.law")


@pytest.mark.parametrize("field", ["law", "meta.law", "a.b.c.d", "_x.y_1", "a" * 64])
def test_field_names_at_the_limits_are_accepted(field):
    assert check_filters(comparison("==", PIPL, field))


def test_in_takes_a_list_of_at_most_max_list_items_scalars():
    assert check_filters(comparison("in", [PIPL] * MAX_LIST_ITEMS))
    for value in ([PIPL] * (MAX_LIST_ITEMS + 1), PIPL, [[PIPL]], [PIPL, {"a": 1}], [None], (PIPL,)):
        message = refused(comparison("in", value))
        assert message.startswith(f"filters.value of 'in' must be a list of at most {MAX_LIST_ITEMS} strings")
    assert "'not in'" in refused(comparison("not in", "第十三条", "meta.article_no"))


@pytest.mark.parametrize("value", [
    True, False, None, float("inf"), float("-inf"), float("nan"), 2**63, -(2**63) - 1,
    "二〇二一年十一月一日", "2021/11/01", "2021-13-01", "yesterday", "", [20210101], {"year": 2021},
])
def test_an_order_comparison_takes_a_number_or_an_iso_date(value):
    message = refused(comparison(">=", value, "meta.valid_from"))
    assert message.startswith("filters.value of '>=' must be a number or an ISO date, got")


@pytest.mark.parametrize("value", [None, [PIPL], {"a": 1}, float("nan"), 2**64, "x" * (MAX_TEXT_CHARS + 1)])
def test_an_equality_takes_a_string_a_number_or_a_boolean(value):
    message = refused(comparison("==", value))
    assert message.startswith("filters.value of '==' must be a string, a number or true/false, got")


def test_text_values_are_limited_to_max_text_chars():
    assert check_filters(comparison("==", "法" * MAX_TEXT_CHARS))
    assert check_filters(comparison("in", ["法" * MAX_TEXT_CHARS]))
    refused(comparison("in", ["法" * (MAX_TEXT_CHARS + 1)]))
    refused(comparison("<", "2021-11-01" + " " * MAX_TEXT_CHARS, "meta.version_date"))


@pytest.mark.parametrize("filters", [
    comparison("==", "\ud800个人信息"),
    comparison("in", [PIPL, "个人\udfff"]),
    comparison("<", "2021-11-01\ud800", "meta.version_date"),
])
def test_a_lone_surrogate_in_a_value_is_refused(filters):
    assert "must be" in refused(filters)


def test_the_message_names_where_the_filter_is_wrong():
    filters = {"operator": "AND", "conditions": [LAW, {"operator": "OR", "conditions": [
        LAW, comparison(">", "下个月", "meta.valid_from")]}]}
    assert refused(filters).startswith("filters.conditions[1].conditions[1].value of '>'")
    message = refused({"operator": "AND", "conditions": [LAW, [LAW]]})
    assert message.startswith("filters.conditions[1] must be an object")


def test_a_huge_value_is_not_echoed_back():
    message = refused(comparison("==", {"text": "第一条\n" * 200_000}))
    assert len(message) < 200 and "characters)" in message
