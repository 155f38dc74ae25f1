#!/usr/bin/env bash
# toollab's trainer against a plain PyTorch loop over the very same batches, on a lent GPU, in one
# run: tokens/s, model-FLOPs utilisation (6 x parameters per token), peak memory, the recipe's
# wall time. The model has the bundled SmolLM2-135M's shape with random weights (the cost does not
# depend on the weights), so nothing large travels to the device; the kit in
# ../shared/tools/gpu-train shows the same approach.
#
# Here, once (writes the git-ignored build/gpu-kit/: config, tokenizer, the recipe's data
# compressed, the wheels the device lacks):
#   benchmarks/gpu_train_compare.sh prepare
# On the device (the run tool), about 6 minutes:
#   carry: ["build/gpu-kit"]   command: bash benchmarks/gpu_train_compare.sh run
# Results: $OUT/recipe.json (the shipped recipe, 264 steps, then the plain loop over its batches)
# and $OUT/b16.json (the same at 16 packed sequences a step, 30 steps).
set -euo pipefail
KIT=build/gpu-kit
PY=${PYTHON:-python3}

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
  tar -czf "$KIT/sft-data.tar.gz" sft-data/deer-seen/examples.jsonl \
    sft-data/seal-tools-dev/examples.jsonl sft-data/envs-train/examples.jsonl
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
    --steps 264 --threads 8 --json "$out/recipe.json"
  "$PY" benchmarks/bench_train_proxy.py --shape full --kit "$KIT" --runs new,plain,plain_lean \
    --steps 30 --batch-size 16 --threads 8 --json "$out/b16.json"
}

"${1:-run}"
