# Two commands on a fresh machine (Python 3.11 + the package registries):
#   make run    set up .venv and start the app on http://127.0.0.1:7860 with the demo workspace
#   make test   set up .venv (+ Debian's chromium for browser tests) and run every test
#   (make test-fast: the core tests only, no browser and no training)
# Both are idempotent: a second run skips what is done.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-fast lint setup chromium demo-model bench gpu-extras vllm-env vllm-server

setup: $(STAMP)

# The package itself, editable, with its test extra (pyproject.toml; the pins live in requirements*.txt).
$(STAMP): pyproject.toml requirements.txt requirements-test.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -e ".[test]" \
		> $(VENV)/pip.log 2>&1 || { grep -v "^WARNING: Location" $(VENV)/pip.log; exit 1; }
	$(PY) -m pip check
	touch $(STAMP)

chromium:
	@command -v chromium >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then apt-get update -q && apt-get install -y -q chromium; \
		else echo "Browser tests need Debian's chromium: sudo apt-get install chromium"; exit 1; fi; }

run: $(STAMP)
	$(PY) app.py

# Two pytest-xdist workers (tests/conftest.py keeps a module's tests, and the modules that share one running app,
# on one worker), each process one compute thread: two threads a process oversubscribed the two cores, and three
# workers were slower than two (docs/BENCHMARKS.md, The test suite).
test: $(STAMP) chromium lint
	OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $(PY) -m pytest -q -n 2 --dist loadgroup --no-loadscope-reorder --durations=30 tests

# ruff, configured in pyproject.toml: style, pyflakes, import order (seconds).
lint: $(STAMP)
	$(PY) -m ruff check .

# The core tests only: no browser, no training (markers set in tests/conftest.py).
test-fast: $(STAMP)
	$(PY) -m pytest -q -m "not browser and not train" tests

# Optional: DeepSpeed for the DeepSpeed ZeRO strategies of `accelerate launch` (GPU machines only).
gpu-extras: $(STAMP)
	$(PY) -m pip install -q --disable-pip-version-check --no-build-isolation -e ".[deepspeed]"
	$(PY) -m pip check

# Rebuild the bundled demo model and data from scratch (about 5 minutes on 2 cores).
demo-model: $(STAMP)
	$(PY) scripts/build_demo.py

# Optional, GPU machines: vLLM's own environment (.venv-vllm; its pins conflict with gradio's) and its server, which RLOO
# runs with use_vllm=true generate with: make vllm-server MODEL=Qwen/Qwen3-4B-Thinking-2507 [PORT=8000] (docs/VLLM.md).
VLLM_VENV := .venv-vllm
MODEL ?= Qwen/Qwen3-0.6B
PORT ?= 8000
$(VLLM_VENV)/.installed: requirements-vllm.txt
	test -x $(VLLM_VENV)/bin/python || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/python -m pip install -q --disable-pip-version-check -r requirements-vllm.txt
	$(VLLM_VENV)/bin/python -m pip check
	touch $@

vllm-env: $(VLLM_VENV)/.installed

# The flags TRL's `trl vllm-serve` adds to `vllm serve` (trl/scripts/vllm_serve.py build_command), run directly as
# TRL 1.15 advises: the NCCL weight-transfer engine its client sends the weights with, and processed logprobs.
vllm-server: vllm-env
	VLLM_SERVER_DEV_MODE=1 $(VLLM_VENV)/bin/vllm serve $(MODEL) --host 127.0.0.1 --port $(PORT) --enable-scale-out \
		--weight-transfer-config '{"backend": "nccl"}' --logprobs-mode processed_logprobs --max-logprobs -1
