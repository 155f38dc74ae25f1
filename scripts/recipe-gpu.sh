#!/usr/bin/env bash
# Training recipes on a GPU machine that has torch, transformers, peft and accelerate but no
# network, and that takes at most about 50 MB along with this checkout per call. The bundled
# GGUF (97 MB) travels in two halves, in two calls made back to back: the machine keeps what the
# first call left outside the checkout while it stays warm.
#
# Here, once (writes the git-ignored build/gpu-a/ and build/gpu-b/):
#   scripts/recipe-gpu.sh prepare RECIPE.yaml...   # their data, the wheels the machine lacks, the halves
# A RECIPE.yaml with a `traces:` key is a GLPFT config (`toollab train glpft`, e.g.
# configs/glpft-lora.yaml): its trace files travel, it trains all four stages, and each stage's
# adapter is packed (runs/<name>/<stage>/packed). The first SFT recipe is the smoke run's.
# On the GPU machine, two calls, the second as soon as the first returns:
#   carry ["build/gpu-a"]   command: bash scripts/recipe-gpu.sh stage
#       installs the wheels, keeps the first half, and trains a random-weight model of the base's
#       shape for 20 steps on the first recipe's data (a smoke run: tokens/s, peak memory)
#   carry ["build/gpu-b"]   command: bash scripts/recipe-gpu.sh train
#       joins the GGUF and checks its SHA-256, converts it once, runs every recipe side by side
#       (each its own process), and writes $OUT/<recipe>.tgz: the final adapter in float16, the
#       run's run.json and its log (runs/<recipe>.log); a run still going after TOOLLAB_GPU_SECONDS (default 420)
#       is stopped and its newest checkpoint's adapter is packed instead (the log says so).
#       With TOOLLAB_GPU_CURVE=K, K of each SFT run's checkpoints, evenly spaced from the first to
#       the last kept, are packed as well, each into $OUT/<recipe>-step-<N>.tgz (at most 8 files
#       come back: recipes x (K + 1) <= 8), for a curve of the figures against steps
#       (benchmarks/bench_curve.py)
# Here again:
#   scripts/recipe-gpu.sh fetch DIR                # DIR/<recipe>.tgz -> runs/<recipe>/
set -euo pipefail
A=build/gpu-a
B=build/gpu-b
KEEP=${TOOLLAB_GPU_KEEP:-/root/toollab-gpu}
PY=${PYTHON:-python3}
SECONDS_BUDGET=${TOOLLAB_GPU_SECONDS:-420}
CURVE=${TOOLLAB_GPU_CURVE:-0}
WHEELS="trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 pydantic==2.14.4
  pydantic-core==2.50.5 annotated-types typing-inspection typing-extensions jsonschema
  jsonschema-specifications referencing rpds-py jsonpointer gguf==0.19.0"

prepare() {
  (($#)) || { echo "usage: $0 prepare RECIPE.yaml..." >&2; exit 2; }
  rm -rf "$A" "$B"
  mkdir -p "$A/wheels" "$A/recipes" "$B"
  PYTHONPATH=src "$PY" - "$A" "$@" <<'EOF'
import os
import shutil
import sys
import tarfile
from pathlib import Path

import yaml
from transformers import AutoConfig, AutoTokenizer

from toollab.train.base import resolve_base

kit = Path(sys.argv[1])
files: set[Path] = set()
for recipe in sys.argv[2:]:
    doc = yaml.safe_load(Path(recipe).read_text(encoding="utf-8"))
    copy = kit / "recipes" / Path(recipe).name
    if "traces" in doc:  # a GLPFT config: its paths are relative to its folder
        traces = [Path(os.path.relpath(Path(recipe).parent / t)) for t in doc["traces"]]
        if any(t.is_absolute() or t.parts[0] == ".." for t in traces):
            sys.exit(f"{recipe}: its trace files must lie inside this checkout")
        files.update(traces)
        doc["traces"] = [f"../{t}" for t in traces]  # the copy is read from runs/
        copy.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        continue
    shutil.copy(recipe, copy)
    for source in doc["data"]:
        path = Path(source["path"])
        files.add(path)
        if (path.parent / "README.md").is_file():
            files.add(path.parent / "README.md")
with tarfile.open(kit / "sft-data.txz", "w:xz") as tar:
    for path in sorted(files):
        tar.add(path)
base = resolve_base("bundled")
AutoConfig.from_pretrained(str(base.folder)).save_pretrained(str(kit / "cfg"))
AutoTokenizer.from_pretrained(str(base.folder)).save_pretrained(str(kit / "tok"))
(kit / "gguf-name").write_text(base.gguf.name if base.gguf else "", encoding="utf-8")
print(base.gguf, file=open(kit / "gguf-path.local", "w"))
EOF
  # shellcheck disable=SC2086
  "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d "$A/wheels" $WHEELS
  local gguf size extra first
  gguf=$(cat "$A/gguf-path.local")
  rm "$A/gguf-path.local"
  sha256sum "$gguf" | cut -d' ' -f1 >"$A/base.sha256"
  size=$(stat -c %s "$gguf")
  extra=$(du -sb "$A" | cut -f1)
  first=$(((size + extra) / 2 - extra))  # both calls carry about the same
  head -c "$first" "$gguf" >"$A/base.part1"
  tail -c +"$((first + 1))" "$gguf" >"$B/base.part2"
  du -sh "$A" "$B"
}

_env() {
  export PYTHONPATH="$KEEP/site:$PWD/src" TOOLLAB_CACHE="$KEEP/cache" HF_HUB_OFFLINE=1
  export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
}

_untar() { "$PY" -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(filter="data")' "$1"; }

_toollab() { exec "$PY" -c 'import sys; sys.argv[0] = "toollab"; from toollab.cli.main import main; main()' "$@"; }

stage() {
  test -f "$A/base.part1" || { echo "carry $A (made by '$0 prepare')" >&2; exit 2; }
  mkdir -p "$KEEP"
  cp -r "$A/." "$KEEP/"
  "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$KEEP/site" "$KEEP"/wheels/*.whl
  _env
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$PY" -c 'import torch, transformers, peft, trl, accelerate, datasets
for m in (torch, transformers, peft, trl, accelerate, datasets): print(m.__name__, m.__version__)'
  test -d sft-data || _untar "$KEEP/sft-data.txz"
  # a random-weight model of the base's shape (throughput does not depend on the weights)
  "$PY" - "$KEEP" <<'EOF'
import sys
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

keep = Path(sys.argv[1])
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(str(keep / "cfg")))
model.save_pretrained(str(keep / "random"))
AutoTokenizer.from_pretrained(str(keep / "tok")).save_pretrained(str(keep / "random"))
EOF
  local first out=${OUT:-/tmp}
  first=$(grep -L '^traces:' "$KEEP"/recipes/*.yaml | head -n1)
  test -n "$first" || { echo "no SFT recipe for the smoke run" >&2; exit 2; }
  sed -e "s#^base: .*#base: $KEEP/random#" -e "s#^output_dir: .*#output_dir: $KEEP/smoke#" \
    -e "s#^max_steps: .*#max_steps: 20#" -e "s#^epochs: .*#epochs: 1#" \
    -e "s#^eval_steps: .*#eval_steps: 0#" -e "s#^save_steps: .*#save_steps: 1000#" \
    "$first" >"$KEEP/smoke.yaml"
  (_toollab train recipe "$KEEP/smoke.yaml" --quiet --json) >"$out/smoke.json"
  cat "$out/smoke.json"
}

_pack() {  # _pack NAME RUN_DIR STATUS: the adapter (float16), run.json and the log into $OUT/NAME.tgz
  local name=$1 run=$2 status=$3 out=${OUT:-/tmp}
  _pack_adapter "$run" "$status" || return 1
  local keep=("$name/packed") f
  for f in "$name/run.json" "$name.log"; do [[ -e "$(dirname "$run")/$f" ]] && keep+=("$f"); done
  tar -czf "$out/$name.tgz" -C "$(dirname "$run")" "${keep[@]}"
}

_pack_adapter() {  # _pack_adapter DIR STATUS: DIR/packed, DIR's adapter (a run's, or a checkpoint's own) or newest checkpoint in float16
  local run=$1 status=$2
  "$PY" - "$run" "$status" <<'EOF'
import json
import sys
from pathlib import Path

from safetensors.torch import load_file, save_file

run, status = Path(sys.argv[1]), sys.argv[2]
src = run if (run / "adapter_model.safetensors").is_file() else run / "adapter"
if not (src / "adapter_model.safetensors").is_file():
    steps = sorted(run.glob("checkpoint-*"), key=lambda p: int(p.name.split("-")[1]))
    steps = [p for p in steps if (p / "adapter_model.safetensors").is_file()]
    if not steps:
        sys.exit(f"{run}: no adapter and no checkpoint")
    src = steps[-1]
    status += f"; packed {src.name}"
dest = run / "packed"
dest.mkdir(exist_ok=True)
tensors = load_file(str(src / "adapter_model.safetensors"))
save_file({k: v.half().contiguous() for k, v in tensors.items()}, str(dest / "adapter_model.safetensors"))
(dest / "adapter_config.json").write_text((src / "adapter_config.json").read_text())
(dest / "status.json").write_text(json.dumps({"status": status, "source": src.name}))
print(run, status, src.name)
EOF
}

_pack_curve() {  # _pack_curve NAME: $CURVE of runs/NAME's checkpoints, evenly spaced, each into $OUT/NAME-step-N.tgz
  local name=$1 out=${OUT:-/tmp} ckpt
  ((CURVE > 0)) || return 0
  for ckpt in $("$PY" - "runs/$name" "$CURVE" <<'EOF'
import sys
from pathlib import Path

run, k = Path(sys.argv[1]), int(sys.argv[2])
steps = [p for p in run.glob("checkpoint-*") if (p / "adapter_model.safetensors").is_file()]
steps.sort(key=lambda p: int(p.name.split("-")[1]))
if steps:
    k = min(k, len(steps))
    picks = sorted({len(steps) - 1 - round(i * (len(steps) - 1) / max(k - 1, 1)) for i in range(k)})
    print("\n".join(steps[i].name for i in picks))
EOF
  ); do
    _pack_adapter "runs/$name/$ckpt" "checkpoint of a curve" >/dev/null || continue
    tar -czf "$out/$name-step-${ckpt#checkpoint-}.tgz" -C runs "$name/$ckpt/packed"
  done
}

_pack_glpft() {  # _pack_glpft NAME STATUS: each stage's adapter (float16) and run.json, the log
  local name=$1 status=$2 out=${OUT:-/tmp} stage keep=()
  for stage in backbone planner caller summarizer; do
    [[ -d "runs/$name/$stage" ]] || continue
    _pack_adapter "runs/$name/$stage" "$status" || { echo "$name/$stage: nothing to pack"; continue; }
    keep+=("$name/$stage/packed")
    [[ -f "runs/$name/$stage/run.json" ]] && keep+=("$name/$stage/run.json")
  done
  [[ -f "runs/$name/run.json" ]] && keep+=("$name/run.json")
  keep+=("$name.log")
  tar -czf "$out/$name.tgz" -C runs "${keep[@]}"
}

train() {
  test -f "$KEEP/base.part1" || { echo "run '$0 stage' first, on this machine" >&2; exit 2; }
  test -f "$B/base.part2" || { echo "carry $B" >&2; exit 2; }
  local gguf
  gguf="$KEEP/$(cat "$KEEP/gguf-name")"
  cat "$KEEP/base.part1" "$B/base.part2" >"$gguf"
  echo "$(cat "$KEEP/base.sha256")  $gguf" | sha256sum -c -
  _env
  test -d sft-data || _untar "$KEEP/sft-data.txz"
  "$PY" -c "import sys; from toollab.train.base import resolve_base; print(resolve_base(sys.argv[1]))" "$gguf"
  local r name pids=() names=()
  for r in "$KEEP"/recipes/*.yaml; do
    name=$(basename "$r" .yaml)
    mkdir -p runs
    if grep -q '^traces:' "$r"; then  # GLPFT: output_dir is relative to the config's folder
      sed -e "s#^base: .*#base: $gguf#" -e "s#^output_dir: .*#output_dir: $name#" "$r" >"runs/$name.yaml"
      _toollab train glpft --config "runs/$name.yaml" --quiet >"runs/$name.log" 2>&1 &
    else
      sed -e "s#^base: .*#base: $gguf#" -e "s#^output_dir: .*#output_dir: runs/$name#" "$r" >"runs/$name.yaml"
      _toollab train recipe "runs/$name.yaml" --quiet >"runs/$name.log" 2>&1 &  # $! is the run itself
    fi
    pids+=($!)
    names+=("$name")
  done
  local start=$SECONDS i status
  for i in "${!pids[@]}"; do
    while kill -0 "${pids[$i]}" 2>/dev/null && ((SECONDS - start < SECONDS_BUDGET)); do sleep 2; done
    if kill -0 "${pids[$i]}" 2>/dev/null; then
      kill -TERM "${pids[$i]}"; wait "${pids[$i]}" || true
      status="stopped after ${SECONDS_BUDGET} s"
    elif wait "${pids[$i]}"; then
      status="finished in $((SECONDS - start)) s or less"
    else
      status="failed (exit $?)"
    fi
    tail -n 5 "runs/${names[$i]}.log"
    if grep -q '^traces:' "runs/${names[$i]}.yaml"; then
      _pack_glpft "${names[$i]}" "$status"
    else
      _pack "${names[$i]}" "runs/${names[$i]}" "$status" || echo "${names[$i]}: nothing to pack"
      _pack_curve "${names[$i]}"
    fi
  done
}

fetch() {
  local dir=${1:?usage: $0 fetch DIR} f
  mkdir -p runs
  # a recipe's adapter lands in runs/<recipe>/packed, a curve's checkpoint in runs/<recipe>/checkpoint-<N>/packed
  for f in "$dir"/*.tgz; do tar -xzf "$f" -C runs; echo "runs/$(tar -tzf "$f" | head -n1 | cut -d/ -f1-2)"; done
}

"${1:-train}" "${@:2}"
