"""What the scripted LLM server is told to match and reply in the query-pipeline tests: the system-prompt phrases
that identify each stage, and a judge reply with given scores."""

REWRITER = "你是中国法律检索专家"
JUDGE = "法律检索质量评估员"
ANSWERER = "严谨的中国法律咨询助手"


def judge(each: int, missing: str = "") -> str:
    """A judge reply giving ``each`` points on all four dimensions."""
    return (f'{{"reasoning": "理由", "relevance": {each}, "completeness": {each}, "accuracy": {each}, '
            f'"coverage": {each}, "missing": "{missing}"}}')
