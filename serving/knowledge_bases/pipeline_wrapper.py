"""Hayhooks deployment ``knowledge_bases``: list them (with counts), one's statistics (what `stats` prints), or
delete one."""

from hayhooks import BasePipelineWrapper

from interfaces.chat_api import ChatAPI


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        self.api = ChatAPI()

    def run_api(self, action: str = "list", name: str | None = None) -> dict:
        """
        Manage knowledge bases.

        Args:
            action: "list", "stats" (sources, models, BM25 statistics and warnings of one) or "delete".
            name: the knowledge base to describe (default: the default one) or to delete.
        """
        return self.api.manage(action=action, name=name)
