"""Hayhooks deployment ``knowledge_bases``: list them (with counts) or delete one."""

from hayhooks import BasePipelineWrapper

from interfaces.chat_api import ChatAPI


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        self.api = ChatAPI()

    def run_api(self, action: str = "list", name: str | None = None) -> dict:
        """
        Manage knowledge bases.

        Args:
            action: "list" or "delete".
            name: the knowledge base to delete.
        """
        return self.api.manage(action=action, name=name)
