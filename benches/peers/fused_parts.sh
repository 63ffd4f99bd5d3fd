#!/usr/bin/env bash
# Where the stream kernel's time goes at given sizes and grids: per input and configuration
# (CFGS_<input>: "WGxEPLxGRID ..."), `full` and `xty` as is, with `--diag skip-flush` (no
# flush of the workgroup copy into global w) and `--diag skip-wg-adds` (no adds into it, nor
# a flush), then as is again (the spread between the two). Timing only: the diag runs are not
# checked. Run on the NVIDIA machine from the repository root with the release binary in .gpu/
# and the Vulkan loader packages in .gl/ (as fused_suite.sh). Everything goes into
# $OUT/fused_parts.tgz, rewritten after each step. Under a minute per input on an H100.
#   INPUTS="sparse-200 sparse-1024"
#   CFGS_200="128x4x792 256x4x528"   CFGS_1024="512x4x528 256x4x660"   CFGS_4096="512x4x264"
#   REPS=100        timed repetitions per run
#   STEP_LIMIT=60   seconds any one step may take
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-200 sparse-1024"}
REPS=${REPS:-100}
STEP_LIMIT=${STEP_LIMIT:-60}
archive_init fused_parts
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
for g in $INPUTS; do
  case $g in
    sparse-200) cfgs=${CFGS_200-"128x4x792 256x4x528"} ;;
    sparse-1024) cfgs=${CFGS_1024-"512x4x528 256x4x660"} ;;
    *) cfgs=${CFGS_4096-"512x4x264"} ;;
  esac
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  for c in $cfgs; do
    IFS=x read -r wg epl gr <<< "$c"
    base=(--matrix-raw "$x" --pattern full,xty --reps "$REPS" --variant stream --wg "$wg"
      --epl "$epl" --groups "$gr")
    run_fused "$g $c" "${base[@]}"
    run_fused "$g $c skip-flush" "${base[@]}" --diag skip-flush
    run_fused "$g $c skip-wg-adds" "${base[@]}" --diag skip-wg-adds
    run_fused "$g $c again" "${base[@]}"
  done
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
