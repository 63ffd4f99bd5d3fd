#!/usr/bin/env bash
# Issue 12's benchmark matrix at the library's defaults, 2 epochs per run, no check: the
# criteo-s shape (LR async at batch 512 / 4,096 / 16,384, FM k = 3 and 10 async, LR sync at
# 512 and 16,384, FM k = 10 sync), then the kddb shape (FM k = 10 and 3 async, then LR async
# and sync). Run on the NVIDIA machine from the repository root with the release binary in
# .gpu/ and the Vulkan loader packages in .gl/ (../shared/GPU.md):
#   OUT=$OUT bash benches/peers/wide_matrix.sh
# STEP_LIMIT (default 150 s) bounds each run: a kddb run spends ≈ 60 s chunking on the host
# before its epochs. KDDB=0 skips the kddb shape, CRITEO=0 the criteo-s one; RING=1 adds
# kddb FM k = 10 through the staging ring; KDDB_CHUNKS=1 runs, in place of the kddb runs
# above, async LR at chunks × lanes of 256 × 4 (the default), 64 × 8, 128 × 8 and 128 × 4
# (CRITEO=0 KDDB_CHUNKS=1: that study alone). One JSON line per run, tagged, lands in
# $OUT/matrix.jsonl as it finishes; the summary in $OUT/matrix.md.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
install_gl --dry-run --if-present --quiet
use_wgsparse W
STEP_LIMIT=${STEP_LIMIT:-150}
D=/tmp/wide/matrix
mkdir -p /tmp/wide
# t TAG ARGS…: one training run.
t() {
  local tag=$1
  shift
  log "$tag"
  timeout "$STEP_LIMIT" "$W" wide train --train $D --holdout 0.1 --no-early-stop --lr 0.5 \
    --epochs 2 --json "$@" 2>>"$OUT/err.txt" </dev/null \
    | sed "s/^{/{\"tag\":\"$tag\",/" >> "$OUT/matrix.jsonl"
}
gen() {
  log "gen $1"
  "$W" gen ctr --samples "$2" --features "$3" --nnz-per-sample "$4" --seed 1 --raw --out $D \
    --json > /dev/null 2>>"$OUT/err.txt"
}
if [ "${CRITEO:-1}" = 1 ]; then
  gen criteo-s 5134149 1000000 40
  for b in 512 4096 16384; do t "criteo-s lr async b$b" --model lr --batch $b --async; done
  t "criteo-s fm3 async" --model fm --k 3 --async
  t "criteo-s fm10 async" --model fm --k 10 --async
  for b in 512 16384; do t "criteo-s lr sync b$b" --model lr --batch $b; done
  t "criteo-s fm10 sync" --model fm --k 10
  rm -rf $D
fi
if [ "${KDDB:-1}" = 1 ]; then
  gen kddb 19264097 29890095 30
  if [ "${KDDB_CHUNKS:-0}" = 1 ]; then
    for c in "256 4" "64 8" "128 8" "128 4"; do
      read -r chunk lanes <<< "$c"
      t "kddb lr async $chunk x $lanes" --model lr --async --max-chunk "$chunk" --lanes "$lanes"
    done
  else
    t "kddb fm10 async" --model fm --k 10 --async
    t "kddb fm3 async" --model fm --k 3 --async
    t "kddb lr async" --model lr --async
    t "kddb lr sync" --model lr
    [ "${RING:-0}" = 1 ] && t "kddb fm10 async ring" --model fm --k 10 --async --ring
  fi
  rm -rf $D
fi
python3 - "$OUT/matrix.jsonl" <<'PY' | tee "$OUT/matrix.md"
import json, sys
print("| run | device | batch | chunk × lanes | ms per epoch | logloss | AUC |")
print("|---|---|---|---|---|---|---|")
for l in open(sys.argv[1]):
    try:
        j = json.loads(l)
    except json.JSONDecodeError:  # a line cut by the step's limit
        continue
    ms = " / ".join(f"{e['epoch_ms']:.3f}" for e in j["epochs"])
    print(f"| {j['tag']} | {j['device']} | {j['batch']} | {j['chunk']} × {j['lanes']} | {ms} "
          f"| {j['logloss']:.5f} | {j['auc']:.4f} |")
PY
log done
