"""The names of the two laws `fixture_store` (tests/components/conftest.py) holds, and a filter to each."""

LAW_A_NAME, LAW_B_NAME = "示例信息保护法", "示例交通法"
ONLY_A = {"field": "meta.law", "operator": "==", "value": LAW_A_NAME}
ONLY_B = {"field": "meta.law", "operator": "==", "value": LAW_B_NAME}
