"""Hayhooks deployment ``index``: add statutes by name and/or .txt/.md files to a knowledge base, as a job.

``POST /index/run`` as a multipart form: ``knowledge_base``, ``laws`` (repeated) and/or ``files``; returns a job id
at once (``GET /index/jobs/{job_id}``: progress, then what was added, replaced or left unchanged), or with
``wait=true`` the results when the job has ended. A following query to that knowledge base finds the new documents.
"""

from fastapi import UploadFile
from hayhooks import BasePipelineWrapper

from application.index_jobs import get_index_jobs
from interfaces.chat_api import ChatAPI


class PipelineWrapper(BasePipelineWrapper):
    def setup(self) -> None:
        self.api = ChatAPI()
        get_index_jobs()  # jobs a stopped server left unfinished are marked interrupted now, not on first use

    def run_api(self, knowledge_base: str = "statutes", laws: list[str] | None = None,
                files: list[UploadFile] | None = None, wait: bool = False) -> dict:
        """
        Create or extend a knowledge base.

        Args:
            knowledge_base: name of the knowledge base (letters, digits, _ and -).
            laws: statute names from the bundled database (short names work, "all" = every current law).
            files: .txt/.md files, UTF-8.
            wait: answer when the job has ended, with its results (default: at once, with the job id).
        """
        uploads = [(f.filename or "upload.txt", f.file.read()) for f in files or []]
        return self.api.index(knowledge_base=knowledge_base, laws=laws, files=uploads, wait=wait)
