import pytest

from pipelines.indexing import Indexer, file_sources
from pipelines.stores import open_document_store

LAW_A = """# 示例信息保护法
第一章 总则
第一条 为了保护个人信息权益，制定本法。
第二条 处理个人信息应当取得个人同意。
第三条 个人有权撤回其同意。
第二章 附则
第十三条 有下列情形之一的，个人信息处理者方可处理个人信息。
第十三条之一 处理未成年人个人信息应当取得监护人同意。
"""
LAW_B = """# 示例交通法
第一条 机动车应当按规定停放。
第二条 驾驶人应当遵守交通信号。
"""


@pytest.fixture
def empty_store(settings):
    """A store with nothing in it, for what needs no articles."""
    store = open_document_store(settings)
    yield store
    store.close()


@pytest.fixture
def fixture_store(settings, tmp_path):
    """A store with two small laws indexed through the real indexing pipeline."""
    (tmp_path / "a.md").write_text(LAW_A, encoding="utf-8")
    (tmp_path / "b.md").write_text(LAW_B, encoding="utf-8")
    store = open_document_store(settings)
    Indexer(store, settings).index(file_sources([str(tmp_path / "a.md"), str(tmp_path / "b.md")]), progress=False)
    yield store
    store.close()
