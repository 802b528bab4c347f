"""Hayhooks deployment ``index``: add statutes by name and/or .txt/.md files to a knowledge base.

``POST /index/run`` as a multipart form: ``knowledge_base``, ``laws`` (repeated) and/or ``files``; returns what was added,
replaced or left unchanged. A following query to that knowledge base finds the new documents.
"""

from fastapi import UploadFile
from hayhooks import BasePipelineWrapper

from interfaces.chat_api import ChatAPI


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        self.api = ChatAPI()

    def run_api(self, knowledge_base: str = "statutes", laws: list[str] | None = None,
                files: list[UploadFile] | None = None) -> dict:
        """
        Create or extend a knowledge base.

        Args:
            knowledge_base: name of the knowledge base (letters, digits, _ and -).
            laws: statute names from the bundled database (short names work, "all" = every current law).
            files: .txt/.md files, UTF-8.
        """
        uploads = [(f.filename or "upload.txt", f.file.read()) for f in files or []]
        return self.api.index(knowledge_base=knowledge_base, laws=laws, files=uploads)
