# Two commands on a fresh machine:
#   make run    set up (venv, packages, offline models), answer the sample question, then train the full stack
#   make test   set up (no training) and run the whole test suite (what CI runs)
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
export HAYSTACK_TELEMETRY_ENABLED := False

# llama-cpp-python compiles from source for this very CPU (-march=native). On a Xeon with AMX that build segfaulted
# in ggml_backend_amx_mul_mat on the first prompt longer than a couple of tokens (2026-12-01), so on x86_64 it is
# built without AMX (prompt 103 tok/s there, against 69 tok/s for a generic AVX2 build). The wheel is kept in a
# folder named after the CPU's flags and the build's flags: pip's own wheel cache ignores build flags and would hand
# back the old build.
ARCH := $(shell uname -m)
CPU_ID := $(shell grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | md5sum | cut -c1-10)
LLAMA_REQ := $(shell grep '^llama-cpp-python' requirements.txt)
LLAMA_VERSION := $(lastword $(subst ==, ,$(LLAMA_REQ)))
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
# Only the text library is built: the product never loads llama-cpp-python's multimodal library (mtmd/llava, which
# it imports only for image chat handlers). llama.cpp's tests, examples and tools are off already when it is built
# as llama-cpp-python's subproject.
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF $(if $(filter x86_64,$(ARCH)),-DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)')
BUILD_ID := $(shell echo "$(LLAMA_CMAKE_ARGS)" | md5sum | cut -c1-6)
LLAMA_WHEELS := $(HOME)/.cache/agentic-rag-wheels/llama-cpp-python-$(LLAMA_VERSION)-$(ARCH)-$(CPU_ID)-$(BUILD_ID)

.PHONY: run test setup venv models base-models browser lint serve bench-indexing bench-retrieval clean

run: $(STAMP)  # demo runs setup itself (once: no repeated lines)
	$(PY) -m pipelines demo

# The suite trains nothing on the full corpus: training is tested on small fixtures, and what the full training
# produces is measured by the benchmarks (benchmarks/retrieval.py, judge_calibration.py).
test: base-models browser
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q --durations=20

# The UI tests drive Debian's Chromium (no browser download) and need a CJK font for readable screenshots.
browser:
	@command -v chromium >/dev/null && fc-list :lang=zh | grep -q . || { \
	  SUDO=$$(test "$$(id -u)" = 0 || echo sudo); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium fonts-wqy-zenhei >/dev/null; }

setup: models

venv: $(STAMP)

# Each step prints its seconds ("[setup] …: N s"); `pipelines setup` prints the rest of the phases at its end.
SINCE = $$(( $$(date +%s) - t ))
$(STAMP): requirements.txt requirements-dev.txt pyproject.toml Makefile
	@echo "[setup] venv and torch …"; t=$$(date +%s); \
	  { test -x $(PY) || $(PYTHON) -m venv $(VENV); } && $(PY) -m pip install -q --upgrade pip && \
	  $(PY) -m pip install -q torch==2.13.0 && echo "[setup] venv and torch: $(SINCE) s"
	@echo "[setup] llama-cpp-python wheel for this CPU, and the other packages beside its compile …"; t=$$(date +%s); \
	  { ls $(LLAMA_WHEELS)/*.whl >/dev/null 2>&1 || CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" \
	    $(PY) -m pip wheel -q --no-deps --no-cache-dir -w $(LLAMA_WHEELS) "$(LLAMA_REQ)"; } & wheel=$$!; \
	  grep -v '^llama-cpp-python' requirements.txt > $(VENV)/requirements-without-llama.txt && \
	  grep -v '^-r ' requirements-dev.txt >> $(VENV)/requirements-without-llama.txt && \
	  $(PY) -m pip install -q -r $(VENV)/requirements-without-llama.txt && \
	  echo "[setup] packages (beside the compile): $(SINCE) s"; installed=$$?; \
	  wait $$wheel && test $$installed = 0 && echo "[setup] llama-cpp-python wheel for this CPU: $(SINCE) s"
	@echo "[setup] the wheel, the project …"; t=$$(date +%s); \
	  $(PY) -m pip install -q --no-deps --force-reinstall $(LLAMA_WHEELS)/*.whl && \
	  $(PY) -m pip install -q --find-links $(LLAMA_WHEELS) -r requirements-dev.txt && \
	  PYTHONWARNINGS=ignore $(PY) -m pip install -q --no-deps --no-build-isolation -e . && \
	  echo "[setup] the wheel, the project: $(SINCE) s"  # the project itself (pyproject.toml), editable
	touch $(STAMP)

models: $(STAMP)
	$(PY) -m pipelines setup

base-models: $(STAMP)
	$(PY) -m pipelines setup --no-train

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

bench-indexing: models
	$(PY) benchmarks/indexing.py

bench-retrieval: models
	$(PY) benchmarks/retrieval.py

clean:
	rm -rf data

serve: $(STAMP)  # listens at once, builds what a first answer needs (the quick stack) first; `make run` trains the rest
	$(PY) -m pipelines serve
