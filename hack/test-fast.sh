#!/usr/bin/env bash
# The inner loop: every test except those marked slow (about 2 s or more), e2e (the documents end to end),
# kubectl (the real kubectl against `karmada-devplane up`) and realplane (the reference plane). About 1.5 minutes
# on a loaded 2-core machine; the full suite is `pytest -q`. Extra arguments go to pytest (paths, -k, -x, ...).
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"
[[ -x "$python" ]] || python=python3
exec "$python" -m pytest -q -m "not slow and not e2e and not kubectl and not realplane" "$@"
