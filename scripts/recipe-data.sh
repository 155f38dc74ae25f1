#!/usr/bin/env bash
# The training data of the recipes `smollm2-135m-tools` (the shipped model) and
# `smollm2-135m-tools-loop` (the loop mix, both), and `smollm2-135m-tools-v1` (the first shipped
# model), written into ./sft-data/<name>/examples.jsonl, each
# with its dataset card (README.md) beside it, and the loop recipe's mix card
# (./sft-data/loop-MIX.md: every choice, the counts and the shares of the draws).
#
#   scripts/recipe-data.sh [DATA]     # DATA: the folder holding deer/, seal-tools/, bfcl/
#
# Every file is guarded against every default evaluation set (BFCL, the Seal-Tools test
# splits, DEER's test set and its 77 unseen tools, the environments' test splits): an example
# that reaches one of them is dropped and counted in its card. About five minutes on 2 cores.
set -euo pipefail
D="${1:-${TOOLLAB_SHARED_DATA:-../shared/data}}"
OUT=sft-data
ENVS=$(python -c "from toollab.envs import env_names; print(' '.join(env_names()))")
mkdir -p "$OUT"

# -- smollm2-135m-tools-v1 ------------------------------------------------------------------------
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

# -- the loop mix: smollm2-135m-tools and smollm2-135m-tools-loop (docs/recipe-loop.md says why
# each line is as it is) --------------------------------------------------------------------------

# Whole conversations, 120 per environment: the first turn's program run step by step with its
# real results, the answer from the observed values, up to 2 follow-up user turns (a call in
# the world the earlier turns left, a request no tool fits, a question answered without a tool).
# shellcheck disable=SC2046
toollab data sft --out "$OUT/loop-conversations/examples.jsonl" --conversations \
  $(for e in $ENVS; do echo --source "env:$e,n=120"; done) --followups 2 \
  --guard-root "$D" --seed 5

# Multi-call programs: the Call instances with 2 to 5 calls among 900 train instances of each
# environment, 30 % with masked function and parameter names.
# shellcheck disable=SC2046
toollab data sft --out "$OUT/loop-envs-multi/examples.jsonl" \
  $(for e in $ENVS; do echo --source "env:$e,n=900,calls=2-5"; done) --mask 0.3 \
  --guard-root "$D" --seed 6

# Every branch (Call, NoCall, NoSearch) of 250 train instances per environment, and a hard
# no-call copy of each single-call one (the nearest tools of environments that cannot serve the
# request), 30 % masked.
# shellcheck disable=SC2046
toollab data sft --out "$OUT/loop-envs-single/examples.jsonl" \
  $(for e in $ENVS; do echo --source "env:$e,n=250"; done) --hard-nocall 1.0 --mask 0.3 \
  --guard-root "$D" --seed 7

# Seal-Tools dev with composed multi-call requests (30 % of the single calls, 2-3 at a time),
# 20 % masked.
toollab data sft --out "$OUT/loop-seal-dev/examples.jsonl" \
  --source "seal-tools:$D/seal-tools/dev.jsonl" --compose 0.3 --compose-max 3 --mask 0.2 \
  --guard-root "$D" --seed 8

# DEER's seen-tool examples with 10 % NoCall copies (not 40 %: they are easy negatives), weighted
# down to 0.3 in the recipe.
toollab data sft --out "$OUT/deer-seen-loop/examples.jsonl" \
  --source "deer-examples:$D/deer/tool.json,n=3000" \
  --distractors 5 --distractor-mode mix --nocall 0.1 --drop-null-args \
  --guard-root "$D" --seed 3

RECIPE=$(python -c "from toollab.train.recipes import recipe_path; print(recipe_path('smollm2-135m-tools'))")
python -m toollab.sft.mix "$RECIPE" "$OUT/loop-MIX.md" "$(dirname "$0")/../docs/recipe-loop.md"

# -- the unfamiliar-tools fix: benchmarks/recipes/loop-fix.yaml, a candidate (docs/recipe-loop.md,
# "The unfamiliar-tools fix") ---------------------------------------------------------------------

# Seal-Tools dev split by tools: 5 % of the tools its gold calls use held out; the instances that
# call one (validation.jsonl) are for choosing between recipes with tools never trained on.
toollab data holdout "$D/seal-tools/dev.jsonl" --format seal-tools --share 0.05 --seed 0 \
  --out "$OUT/seal-dev-holdout"

# Every branch of 250 train instances per environment and their hard no-call copies, as
# loop-envs-single, but half of the Call instances offered only their gold tool and 0-4 others,
# and 40 % masked.
# shellcheck disable=SC2046
toollab data sft --out "$OUT/fix-envs-single/examples.jsonl" \
  $(for e in $ENVS; do echo --source "env:$e,n=250"; done) --hard-nocall 1.0 --reduce 0.5 \
  --mask 0.4 --guard-root "$D" --seed 7

# The multi-call programs of loop-envs-multi, half of them with reduced tool sets, 40 % masked.
# shellcheck disable=SC2046
toollab data sft --out "$OUT/fix-envs-multi/examples.jsonl" \
  $(for e in $ENVS; do echo --source "env:$e,n=900,calls=2-5"; done) --reduce 0.5 --mask 0.4 \
  --guard-root "$D" --seed 6

# Seal-Tools dev without its held-out tools, composed as loop-seal-dev, 40 % masked.
toollab data sft --out "$OUT/fix-seal-dev/examples.jsonl" \
  --source "toollab:$OUT/seal-dev-holdout/train.jsonl" --compose 0.3 --compose-max 3 --mask 0.4 \
  --guard-root "$D" --seed 8

# The control (benchmarks/recipes/loop-e1-holdout.yaml): loop-seal-dev's settings on the same
# train part, so that the candidate and its control both never saw the held-out tools.
toollab data sft --out "$OUT/ctl-seal-dev/examples.jsonl" \
  --source "toollab:$OUT/seal-dev-holdout/train.jsonl" --compose 0.3 --compose-max 3 --mask 0.2 \
  --guard-root "$D" --seed 8

python -m toollab.sft.mix "$(dirname "$0")/../benchmarks/recipes/loop-fix.yaml" "$OUT/loop-fix-MIX.md" \
  "$(dirname "$0")/../docs/recipe-loop.md"
