#!/usr/bin/env bash
# Async LR's chunk on the kddb shape (29.9M features, ~30 nonzeros a sample): the default
# picked on criteo-s (256 samples × 4 lanes, 8-bit slots) against 64 × 8 (the default before)
# and 128-sample chunks, 2 epochs each, one job. Run on the NVIDIA machine from the repository
# root with the release binary in .gpu/ and the Vulkan loader packages in .gl/
# (../shared/GPU.md):
#   OUT=$OUT bash benches/peers/wide_kddb_chunks.sh
# STEP_LIMIT (default 140 s) bounds each run (≈ 70–85 s of it host setup). One JSON line per
# run, tagged, in $OUT/chunks.jsonl; the summary in $OUT/chunks.md.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_gl --dry-run --if-present --quiet
use_wgsparse W
STEP_LIMIT=${STEP_LIMIT:-140}
D=/tmp/wide/kddb
mkdir -p /tmp/wide
log "gen kddb"
"$W" gen ctr --samples 19264097 --features 29890095 --nnz-per-sample 30 --seed 1 --raw --out $D \
  --json > /dev/null 2>>"$OUT/err.txt"
for c in "256 4" "64 8" "128 8" "128 4"; do
  set -- $c
  tag="kddb lr async $1 x $2"
  log "$tag"
  timeout "$STEP_LIMIT" "$W" wide train --train $D --holdout 0.1 --no-early-stop --lr 0.5 \
    --epochs 2 --model lr --async --max-chunk "$1" --lanes "$2" --json 2>>"$OUT/err.txt" </dev/null \
    | sed "s/^{/{\"tag\":\"$tag\",/" >> "$OUT/chunks.jsonl"
done
rm -rf $D
python3 - "$OUT/chunks.jsonl" <<'PY' | tee "$OUT/chunks.md"
import json, sys
print("| run | device | chunk × lanes | workgroups | ms per epoch | logloss |")
print("|---|---|---|---|---|---|")
for l in open(sys.argv[1]):
    try:
        j = json.loads(l)
    except json.JSONDecodeError:  # a line cut by the step's limit
        continue
    ms = " / ".join(f"{e['epoch_ms']:.3f}" for e in j["epochs"])
    print(f"| {j['tag']} | {j['device']} | {j['chunk']} × {j['lanes']} | {j['async_groups']} "
          f"| {ms} | {j['logloss']:.5f} |")
PY
log done
