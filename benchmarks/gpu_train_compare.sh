#!/usr/bin/env bash
# toollab's trainer against a plain PyTorch loop over the very same batches, on a lent GPU, in one
# run: tokens/s, model-FLOPs utilisation (6 x parameters per token), peak memory. The model has
# the bundled SmolLM2-135M's shape with random weights (the cost does not depend on the weights),
# so nothing large travels to the device; the kit in ../shared/tools/gpu-train shows the same
# approach.
#
# Here, once (writes the git-ignored build/gpu-kit/: config, tokenizer, the data of the shipped
# recipe compressed, the wheels the device lacks; the data first: scripts/recipe-data.sh):
#   benchmarks/gpu_train_compare.sh prepare
# On the device (the run tool), about 6 minutes:
#   carry: ["build/gpu-kit"]   command: bash benchmarks/gpu_train_compare.sh run
# Results in $OUT: recipe.json (the shipped recipe's batches, 8 packed sequences a step, 100
# steps: toollab, the plain loop, the plain loop with toollab's loss), b16.json (16 packed
# sequences a step, 30 steps) and b16c.json (the same with torch.compile, toollab and the plain
# loop with toollab's loss). The recipe's wall time is its tokens over the measured rate.
set -euo pipefail
KIT=build/gpu-kit
PY=${PYTHON:-python3}
RECIPE=smollm2-135m-tools  # bench_train_proxy.py's RECIPE_NAME

prepare() {
  mkdir -p "$KIT/wheels"
  PYTHONPATH=src "$PY" - "$KIT" <<'EOF'
import sys
from pathlib import Path
from transformers import AutoConfig, AutoTokenizer
from toollab.train.base import resolve_base

kit = Path(sys.argv[1])
folder = resolve_base("bundled").folder
AutoConfig.from_pretrained(str(folder)).save_pretrained(str(kit / "cfg"))
AutoTokenizer.from_pretrained(str(folder)).save_pretrained(str(kit / "tok"))
EOF
  local files
  files=$(PYTHONPATH=src "$PY" -c "from toollab.sft.mix import recipe_data
from toollab.train.recipes import recipe_path
print(' '.join(str(p) for p, _ in recipe_data(recipe_path('$RECIPE'))))")
  for f in $files; do
    test -f "$f" || { echo "$f is missing: run scripts/recipe-data.sh ../shared/data first" >&2; exit 2; }
  done
  # shellcheck disable=SC2086
  tar -czf "$KIT/sft-data.tar.gz" $files
  "$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 -d "$KIT/wheels" \
    trl datasets dill multiprocess xxhash rich pyyaml pydantic pydantic-core annotated-types \
    typing-inspection
  du -sh "$KIT"
}

run() {
  test -d "$KIT/cfg" || { echo "run '$0 prepare' here first and carry $KIT"; exit 2; }
  # only what the device's environment lacks
  local pkg dist
  for pkg in trl datasets dill multiprocess xxhash rich yaml pydantic pydantic_core \
    annotated_types typing_inspection; do
    dist=${pkg/yaml/pyyaml}
    "$PY" -c "import $pkg" 2>/dev/null || "$PY" -m pip install -q --no-index --no-deps \
      --find-links "$KIT/wheels" "${dist//_/-}" || true
  done
  tar -xzf "$KIT/sft-data.tar.gz"
  export TOOLLAB_CACHE=/tmp/toollab-cache PYTHONPATH=src HF_HUB_OFFLINE=1
  nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  local out=${OUT:-/tmp}
  "$PY" benchmarks/bench_train_proxy.py --shape full --kit "$KIT" --runs new,plain,plain_lean \
    --steps 100 --threads 8 --json "$out/recipe.json"
  "$PY" benchmarks/bench_train_proxy.py --shape full --kit "$KIT" --runs new,plain,plain_lean \
    --steps 30 --batch-size 16 --threads 8 --json "$out/b16.json"
  "$PY" benchmarks/bench_train_proxy.py --shape full --kit "$KIT" --runs new,plain_lean \
    --steps 30 --batch-size 16 --threads 8 --compile --json "$out/b16c.json" || true
}

"${1:-run}"
