#!/usr/bin/env bash
# Regenerate requirements/lock.txt: exact versions and sha256 hashes of every package that
# scripts/setup.sh installs (all extras of pyproject.toml, torch's CPU build, uv itself).
# Review the result with `git diff requirements/` before committing it.
# Usage: scripts/lock.sh [--upgrade | --upgrade-package NAME ...]   (default: keep current pins)
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-}
if [ -z "$UV" ]; then
  if command -v uv >/dev/null 2>&1; then UV=uv
  elif [ -x .venv/bin/uv ]; then UV=.venv/bin/uv
  else echo "lock.sh needs uv: run scripts/setup.sh first, or pip install uv" >&2; exit 2
  fi
fi
# torch's CPU wheel is found in a local wheel folder when the machine has one
FIND_LINKS=()
for d in ${DPTEXT_WHEELS:-/opt/wheels}; do [ -d "$d" ] && FIND_LINKS+=(--find-links "$d"); done
COMMON=(--generate-hashes --python-version 3.11 --python-platform x86_64-manylinux_2_28
        --custom-compile-command "scripts/lock.sh" "${FIND_LINKS[@]}" "$@")
"$UV" pip compile -q pyproject.toml --all-extras --constraint requirements/torch-cpu.txt \
  "${COMMON[@]}" -o requirements/lock.txt
"$UV" pip compile -q requirements/tools.in "${COMMON[@]}" -o requirements/tools.txt
echo "packages locked: $(grep -c '^[a-z0-9]' requirements/lock.txt) (+ $(grep -c '^[a-z0-9]' requirements/tools.txt) tools)"
