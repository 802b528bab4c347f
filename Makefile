# Two commands on a fresh machine:
#   make run    set up (venv, packages, offline models), index the default corpus, answer the sample question
#   make test   set up and run the whole test suite (what CI runs)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export HAYSTACK_TELEMETRY_ENABLED := False

.PHONY: run test setup venv models browser lint serve bench-indexing bench-retrieval clean

run: models
	$(PY) -m pipelines demo

test: models browser
	$(PY) -m pytest -q

# The UI tests drive Debian's Chromium (no browser download) and need a CJK font for readable screenshots.
browser:
	@command -v chromium >/dev/null && fc-list :lang=zh | grep -q . || { \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null; }

setup: models

venv: $(STAMP)

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

models: $(STAMP)
	$(PY) -m pipelines setup

lint: $(STAMP)
	$(VENV)/bin/ruff check .

bench-indexing: models
	$(PY) benchmarks/indexing.py

bench-retrieval: models
	$(PY) benchmarks/retrieval.py

clean:
	rm -rf data

serve: models
	$(PY) -m pipelines serve
