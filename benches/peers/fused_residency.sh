#!/usr/bin/env bash
# The launch models' grids under the default residency (Hopper as CUDA describes it: 228 KiB
# of workgroup memory an SM) against the one measured under Vulkan (48 KiB an SM: BENCHMARKS.md,
# twenty-second measurements), set through the environment (WGSPARSE_UNIT_SHARED_BYTES,
# WGSPARSE_UNIT_SHARED_RESERVED). Per input and variant of VARIANTS, the plan's own grid under
# each residency, `full` and `xty`, checked against the twin. Run on the NVIDIA machine from
# the repository root with the release binary in .gpu/ and the Vulkan loader packages in .gl/
# (as fused_suite.sh). Everything goes into $OUT/fused_residency.tgz, rewritten after each
# step. Under a minute per input on an H100.
#   INPUTS="sparse-4096 sparse-1024 sparse-200"
#   VARIANTS="stream fused sorted"
#   SHARED=49152 RESERVED=1024   the residency tried against the default
#   STEP_LIMIT=60   seconds any one step may take
#   DEADLINE=""     seconds: no input starts after them (a call's limit)
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200"}
VARIANTS=${VARIANTS-"stream fused sorted"}
SHARED=${SHARED:-49152}
RESERVED=${RESERVED:-1024}
STEP_LIMIT=${STEP_LIMIT:-60}
DEADLINE=${DEADLINE-}
archive_init fused_residency
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
start=$(date +%s)
for g in $INPUTS; do
  past_deadline "$g" && break
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  for v in $VARIANTS; do
    base=(--matrix-raw "$x" --pattern full,xty --reps 50 --variant "$v" --check)
    run_fused "$g $v default" "${base[@]}"
    WGSPARSE_UNIT_SHARED_BYTES=$SHARED WGSPARSE_UNIT_SHARED_RESERVED=$RESERVED \
      run_fused "$g $v shared $SHARED reserved $RESERVED" "${base[@]}"
  done
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
