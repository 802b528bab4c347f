"""``python -m pipelines``: the command line (`interfaces.cli.main`), reached through the ``agentic-rag`` console
script that pyproject.toml declares, so this package imports nothing of the interface layer above it.

Usage::

    python -m pipelines ask "公司收集我的个人信息需要我同意吗"
"""

import sys
from importlib.metadata import entry_points

scripts = entry_points(group="console_scripts", name="agentic-rag")
if not scripts:
    sys.exit("error: the project is not installed (`make run`, or `pip install -e .` in its venv), so `python -m "
             "pipelines` cannot find its command line")
sys.exit(next(iter(scripts)).load()())
