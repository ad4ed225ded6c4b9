#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment at .venv in the repo root.
# Idempotent: a second run only checks that everything is installed.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
# torch first and pinned: the CPU build (an unpinned torch pulls a multi-GB CUDA build)
.venv/bin/python -m pip install -q "torch==2.13.0"
# llama-cpp-python compiles from source on a fresh machine (about 4 minutes)
.venv/bin/python -m pip install -q -e ".[all]"
