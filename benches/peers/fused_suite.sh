#!/usr/bin/env bash
# The fused-pattern benchmark job: run on the NVIDIA machine from the repository root with the
# release binary in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh). Writes JSON
# lines and a log into $OUT (default ./bench-out).
#   INPUTS="sparse-200 sparse-1024 sparse-4096 kdd2010 dense-32 dense-200 dense-1000 dense-2000 higgs"
#   PATTERNS="xty,full"        instantiations timed for every input
#   STEP_LIMIT=240             seconds any one step may take (a slow step is logged and skipped)
#   SWEEP="sparse-1024"        inputs whose (VS, workgroup, C) sweep reports the model's gap
#   CG=1                       LR-CG end to end on the HIGGS shape, wgsparse and PyTorch, then
#                              wgsparse's --breakdown (GPU time per phase, the host's parts)
#   SPARSE_LONG="4294967295"   sparse-*: extra checked runs of `fused` at these --long-row
#                              thresholds (4294967295: rows never split)
#   SORTED_WG="128 512 1024"   sparse-*: extra checked runs of `sorted` at these workgroup sizes
#                              (tiles of up to 8 entries per invocation)
#   KDD_LONG="4096"            kdd2010: extra runs of `fused` at these --long-row thresholds
#   KDD_LIMIT=420              seconds the kdd2010 export + timing step may take
#   KDD_SORTED_WG="1024 256"   kdd2010: runs of `sorted` (wide keys) at these workgroup sizes
#   KDD_REORDER="off"          kdd2010: runs of auto and fused at these --reorder-cols settings
#                              on the exported X (the first step's auto re-indexes the columns
#                              by entry count at this shape: its rule; `off` is the A/B)
#   PEER_REORDER=on            kdd2010: the peer also on X with its columns re-indexed alike
#                              (fused_peer.py --reorder-cols; the fastest of all counts)
# Two jobs of under 8 minutes each:
#   INPUTS="sparse-200 sparse-1024 sparse-4096 higgs" benches/peers/fused_suite.sh
#   INPUTS=kdd2010 SWEEP= CG=0 benches/peers/fused_suite.sh
# For each input: exports X and the operands and runs fused_peer.py on the same data in the same
# job (the export is deleted afterwards); then `wgsparse fused` times `auto` (tuned) and every
# variant (sparse: fused, sorted, two-pass, unfused; dense: fused, two-pass, unfused) with the
# f64 check, the copy roofline and GB/s. kdd2010 (w beyond workgroup memory, no f64 check):
# generating its 424M entries and uploading them dominate a step, so one invocation exports X
# and times auto (tuner bounded on large X; among its candidates sorted, at one tile size) and
# fused (hot-column cache, long rows split); then the peer on the export; then fused at the
# KDD_LONG thresholds and sorted (wide keys: 29.9M columns are past a packed key; w in global
# memory) at the KDD_SORTED_WG workgroup sizes on the exported X (generating 424M entries took 21 s per
# 42M on 2 host cores). Every result carries wall_s (host seconds of its plan
# and runs) and the output host_s (generation, export), to see where a slow step goes.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-200 sparse-1024 sparse-4096 kdd2010 dense-32 dense-200 dense-1000 dense-2000 higgs"}
PATTERNS=${PATTERNS:-"xty,full"}
STEP_LIMIT=${STEP_LIMIT:-240}
SWEEP=${SWEEP-"sparse-1024"}
CG=${CG:-1}
install_gl --if-present
use_wgsparse W
job_cache
PEER=benches/peers/fused_peer.py
for g in $INPUTS; do
  # The f64 check of every variant costs host time on the largest inputs; skip it for kdd2010.
  CHECK=--check; VARIANTS=auto,fused,sorted,two-pass,unfused; PATS=$PATTERNS; REPS=20
  case "$g" in
    kdd2010) CHECK=; VARIANTS=auto,fused; PATS=full; REPS=10 ;;
    dense-*|higgs) VARIANTS=auto,fused,two-pass,unfused ;;
  esac
  if [ "$g" = kdd2010 ]; then
    log "fused kdd2010 export + variants=$VARIANTS (limit ${KDD_LIMIT:-420}s)"
    rm -rf /tmp/fused/kdd2010
    STEP_LIMIT=${KDD_LIMIT:-420} step $W fused --gen kdd2010 --pattern full --variant "$VARIANTS" \
      --roofline --reps $REPS --export /tmp/fused/kdd2010 --json >> "$OUT/fused.jsonl" 2>>"$OUT/log.txt"
    log "peer kdd2010"
    STEP_LIMIT=${KDD_LIMIT:-420} step python3 $PEER /tmp/fused/kdd2010 --reps 20 \
      --reorder-cols "${PEER_REORDER:-on}" \
      >> "$OUT/peer_fused.jsonl" 2>>"$OUT/log.txt"
    # The column re-indexing A/B (auto tunes each setting apart: its cache key holds it).
    for R in ${KDD_REORDER-off}; do
      log "fused kdd2010 --reorder-cols $R"
      STEP_LIMIT=${KDD_LIMIT:-420} step $W fused --matrix-raw /tmp/fused/kdd2010 --pattern full \
        --variant auto,fused --reorder-cols "$R" --reps 5 --roofline --json \
        >> "$OUT/fused.jsonl" 2>>"$OUT/log.txt"
    done
    # The exported X read back: no second generation (minutes of host time at this size).
    for L in ${KDD_LONG-4096}; do
      log "fused kdd2010 --long-row $L"
      step $W fused --matrix-raw /tmp/fused/kdd2010 --pattern full --variant fused --long-row "$L" \
        --reps 5 --json >> "$OUT/fused.jsonl" 2>>"$OUT/log.txt"
    done
    # Sorted tiles with wide keys (no f64 check at this size; tests/fused_sorted.rs sorted_wide_keys
    # checks the path against the twin).
    for WG in ${KDD_SORTED_WG-1024 256}; do
      log "fused kdd2010 --variant sorted --wg $WG"
      step $W fused --matrix-raw /tmp/fused/kdd2010 --pattern full --variant sorted --wg "$WG" \
        --reps 5 --roofline --json >> "$OUT/fused.jsonl" 2>>"$OUT/log.txt"
    done
    rm -rf /tmp/fused/kdd2010
    continue
  fi
  log "fused $g (export + peer)"
  rm -rf "/tmp/fused/$g"
  step $W fused --gen "$g" --pattern full --variant fused --reps 5 --export "/tmp/fused/$g" --json \
    >> "$OUT/fused_export.jsonl" 2>>"$OUT/log.txt"
  step python3 $PEER "/tmp/fused/$g" --reps 20 >> "$OUT/peer_fused.jsonl" 2>>"$OUT/log.txt"
  rm -rf "/tmp/fused/$g"
  log "fused $g patterns=$PATS variants=$VARIANTS"
  step $W fused --gen "$g" --pattern "$PATS" --variant "$VARIANTS" $CHECK --roofline --reps $REPS --json \
    >> "$OUT/fused.jsonl" 2>>"$OUT/log.txt"
  case "$g" in
    sparse-*)
      for WG in ${SORTED_WG-128 512 1024}; do
        log "fused $g --variant sorted --wg $WG"
        step $W fused --gen "$g" --pattern full --variant sorted --wg "$WG" --check --reps $REPS \
          --roofline --json >> "$OUT/fused_sorted.jsonl" 2>>"$OUT/log.txt"
      done
      for L in ${SPARSE_LONG-4294967295}; do
        log "fused $g --long-row $L"
        step $W fused --gen "$g" --pattern full --variant fused --long-row "$L" --check --reps $REPS \
          --json >> "$OUT/fused_long.jsonl" 2>>"$OUT/log.txt"
      done ;;
  esac
done
for g in $SWEEP; do
  log "sweep $g"
  step $W fused --gen "$g" --pattern full --variant fused --sweep --reps 5 --json >> "$OUT/fused_sweep.jsonl" 2>>"$OUT/log.txt"
done
if [ "$CG" = 1 ]; then
  log "linreg CG higgs (wgsparse, then PyTorch on the same X and labels)"
  rm -rf /tmp/fused/higgs-cg
  step $W linreg --gen higgs --runs 5 --json --export /tmp/fused/higgs-cg >> "$OUT/linreg.jsonl" 2>>"$OUT/log.txt"
  ITERS=$(python3 -c "import json,sys; print(json.loads(open('$OUT/linreg.jsonl').read().strip().splitlines()[-1])['iterations'])")
  step python3 $PEER --cg /tmp/fused/higgs-cg --cg-iters "$ITERS" --reps 12 >> "$OUT/peer_cg.jsonl" 2>>"$OUT/log.txt"
  rm -rf /tmp/fused/higgs-cg
  # Where the time goes (one compute pass per phase, timed apart from the headline run).
  log "linreg CG higgs --breakdown"
  step $W linreg --gen higgs --runs 5 --json --breakdown >> "$OUT/linreg_breakdown.jsonl" 2>>"$OUT/log.txt"
fi
log "done"
