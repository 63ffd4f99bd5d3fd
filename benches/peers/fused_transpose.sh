#!/usr/bin/env bash
# The transpose variant (`wgsparse fused --variant transpose`: Xᵀ materialized, two gathers)
# on the KDD2010 shape and 500k × 4,096, beside `sorted` (auto's earlier pick at KDD2010) and
# `auto` tuned afresh, and the peer on the same exported X in the same job. Run on the NVIDIA
# machine from the repository root with the release binary in .gpu/ and the Vulkan loader
# packages in .gl/ (as fused_suite.sh). Everything it writes goes into one archive,
# $OUT/fused_transpose.tgz (the device call returns at most 8 files), rewritten after each
# step so a call cut at its limit still returns what ran. About 8 minutes of GPU wall time
# (more than 10 at kdd2010 with PASSES=3, three EXTRA runs and PANELS: split such a job).
#   INPUTS="sparse-4096 kdd2010"
#   STEP_LIMIT=300                 seconds any one step may take
#   AUTO=1                         0: no `auto` run (its tuning takes ~2 minutes at kdd2010)
#   SORTED=1                       0: no `sorted` run at kdd2010
#   EXTRA="--vs 16"                more transpose runs (re-indexed), ';' between their flags
#   PEER_REPS=20                   the peer's timed repetitions per option
#   PEER=1                         0: no peer run
#   PATTERNS=full,xty              the patterns of every timed run (e.g. xty,xty,full,xty: the
#                                  same Xᵀ pass timed again in one process)
#   PASSES=1                       times each plan is measured (`--passes`: whether a slow
#                                  plan stays slow in its process)
#   FLAGS=""                       flags added to every timed run (e.g. --spin-first: the
#                                  clocks spun up before each plan is timed)
#   PANELS=""                      e.g. "1,2,4,8": spmv_panels.py on the export too (cuSPARSE's
#                                  X·y and Xᵀ·p summed over that many column panels, re-indexed)
# Per input, PATTERNS with --roofline (and --check, the f64 twin, on the first transpose
# run): transpose with the columns re-indexed and not, sorted re-indexed (kdd2010), `auto`
# tuned afresh, then fused_peer.py --reorder-cols on. Summary: runs.tsv (tag, exit status,
# JSON) inside the archive.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 kdd2010"}
STEP_LIMIT=${STEP_LIMIT:-300}
AUTO=${AUTO:-1}
SORTED=${SORTED:-1}
EXTRA=${EXTRA-}
PEER_REPS=${PEER_REPS:-20}
PEER=${PEER:-1}
PATTERNS=${PATTERNS:-full,xty}
PASSES=${PASSES:-1}
FLAGS=${FLAGS-}
PANELS=${PANELS-}
archive_init fused_transpose
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
for g in $INPUTS; do
  x=$WORK/x/$g
  case $g in
    kdd2010) reps=10 ;;
    *) reps=50 ;;
  esac
  run_fused "$g export, transpose" --gen "$g" --pattern full --variant transpose --reps 3 \
    --reorder-cols off --export "$x"
  common=(--matrix-raw "$x" --pattern "$PATTERNS" --roofline --reps "$reps" --passes "$PASSES")
  # shellcheck disable=SC2206  # FLAGS splits into flags on purpose
  common+=($FLAGS)
  run_fused "$g transpose re-indexed, checked" "${common[@]}" --variant transpose --reorder-cols on --check
  run_fused "$g transpose" "${common[@]}" --variant transpose --reorder-cols off
  IFS=';' read -ra extras <<< "$EXTRA"
  for e in "${extras[@]}"; do
    # shellcheck disable=SC2086  # the flags split on purpose
    run_fused "$g transpose re-indexed $e" "${common[@]}" --variant transpose --reorder-cols on $e
  done
  if [ "$g" = kdd2010 ] && [ "$SORTED" = 1 ]; then
    run_fused "$g sorted re-indexed" "${common[@]}" --variant sorted --reorder-cols on
  fi
  if [ -n "$PANELS" ]; then
    (cd benches/peers && step python3 spmv_panels.py --matrix-raw "$x" --panels "$PANELS") \
      > "$WORK/panels_$g.jsonl" 2>>"$WORK/err.txt"
    log "$g panels done"
    pack
  fi
  input_done "$g" "$x" "${common[@]}"
done
pack
log "archive: $ARCHIVE"
