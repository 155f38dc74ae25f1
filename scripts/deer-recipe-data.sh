#!/usr/bin/env bash
# The training data of the recipe `smollm2-135m-deer` (DEER's own multi-decision samples in
# DEER's format and prompt), written into ./sft-data/deer-decisions/ (train) and
# ./sft-data/deer-decisions-valid/ (validation), each with its dataset card.
#
#   scripts/deer-recipe-data.sh [DATA]   # DATA: the folder holding deer/ (and bfcl/, seal-tools/)
#
# 1. DEER's sample construction (toollab data synth deer, no teacher): the published query ->
#    call examples of the 900 seen tools, 60 % Call / 40 % NoCall, 5 candidates by DEER's
#    2 : 1 : 2 random / intra-class / inter-class mix; NoSearch queries are DEER's own (the first
#    user turns of WizardLM conversations that DEER's released valid.json carries as its NoSearch
#    samples, 193 of them: upstream's 2,000 are not published); DEER's test queries and its 77
#    unseen tools are kept out; 90 / 10 split into train / valid.
# 2. Each chain rendered on DEER's raw prompt (`<system> Human: q Assistant: <chain>` and the
#    end token), the loss on what the model writes at inference (`--loss written`: round one's
#    `#Begin# ... #SearchAPI#`, round two's `CallAPI# ... #End#` / `NoCallAPI# ... #End#`), not
#    on the API pool between, which the agent supplies; guarded against every default
#    evaluation set.
# About a minute on 2 cores.
set -euo pipefail
D="${1:-${TOOLLAB_SHARED_DATA:-../shared/data}}"
OUT=sft-data
mkdir -p "$OUT/deer-synth-src"

python - "$D/deer/valid.json" "$OUT/deer-synth-src/nosearch.jsonl" <<'PY'
import json, sys
from toollab.templates.deer_tpl import NO_SEARCH_CHAIN
src, dst = sys.argv[1], sys.argv[2]
with open(src, encoding="utf-8") as fh:
    records = json.load(fh)
kept = [r for r in records if r["conversations"][-1]["value"] == NO_SEARCH_CHAIN]
with open(dst, "w", encoding="utf-8") as fh:
    for r in kept:
        fh.write(json.dumps(r, ensure_ascii=False) + "\n")
print(f"{len(kept)} NoSearch queries from {src}", file=sys.stderr)
PY

toollab data synth deer --tools "$D/deer/tool.json" --nosearch "$OUT/deer-synth-src/nosearch.jsonl" \
  --exclude "$D/deer/test.json" --out "$OUT/deer-synth" --quiet

toollab data sft --out "$OUT/deer-decisions/examples.jsonl" \
  --data "$OUT/deer-synth/train.json" --format deer --template deer --target template \
  --loss written --guard-root "$D" --seed 9
toollab data sft --out "$OUT/deer-decisions-valid/examples.jsonl" \
  --data "$OUT/deer-synth/valid.json" --format deer --template deer --target template \
  --loss written --n 40 --guard-root "$D" --seed 9
