#!/usr/bin/env bash
# The training data of the shipped recipe `smollm2-135m-tools` (toollab train recipe), written
# into ./sft-data/<name>/examples.jsonl, each with its dataset card (README.md) beside it.
#
#   scripts/recipe-data.sh [DATA]     # DATA: the folder holding deer/, seal-tools/, bfcl/
#
# Every file is guarded against every default evaluation set (BFCL, the Seal-Tools test
# splits, DEER's test set and its 77 unseen tools, the environments' test splits): an example
# that reaches one of them is dropped and counted in its card. About a minute on 2 cores.
set -euo pipefail
D="${1:-${TOOLLAB_SHARED_DATA:-../shared/data}}"
OUT=sft-data
ENVS=$(python -c "from toollab.envs import env_names; print(' '.join(env_names()))")
mkdir -p "$OUT"

# DEER's published query -> call examples of its 900 seen tools: 5 candidate tools each (DEER's
# 2:1:2 sampling mix), 40 % copied as NoCall without their gold tool (DEER's call ratio 0.6).
toollab data sft --out "$OUT/deer-seen/examples.jsonl" \
  --source "deer-examples:$D/deer/tool.json,n=3000" \
  --distractors 5 --distractor-mode mix --nocall 0.4 --drop-null-args \
  --guard-root "$D" --seed 3

# The same, with argument-order and value-format variety and masked names (the ablation's
# augmented variant).
toollab data sft --out "$OUT/deer-seen-aug/examples.jsonl" \
  --source "deer-examples:$D/deer/tool.json,n=3000" \
  --distractors 5 --distractor-mode mix --nocall 0.4 --drop-null-args \
  --vary 0.3 --mask 0.1 --guard-root "$D" --seed 3

# Seal-Tools dev (single, multiple and nested calls) with the tools upstream offers.
toollab data sft --out "$OUT/seal-tools-dev/examples.jsonl" \
  --source "seal-tools:$D/seal-tools/dev.jsonl" --guard-root "$D" --seed 1

# 100 train-split instances of each of the 13 environments (Call, NoCall, NoSearch branches).
# shellcheck disable=SC2046
toollab data sft --out "$OUT/envs-train/examples.jsonl" \
  $(for e in $ENVS; do echo --env "$e"; done) --n 100 --guard-root "$D" --seed 2
