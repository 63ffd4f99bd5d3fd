#!/usr/bin/env bash
# What a fixed-point accumulation in the workgroup copy of w would pay for its adds: the
# stream kernel (at the configurations `auto` picked on an H100) and the launch model's `fused`
# kernel with `--diag int-wg-adds` (integer adds of the f32 bits; garbage sums, timing only)
# against native f32 adds, the compare-exchange loops, plain loads and stores, and no adds.
# Run on the NVIDIA machine from the repository root with the release binary in .gpu/ and the
# Vulkan loader packages in .gl/ (as fused_suite.sh). Everything goes into
# $OUT/fused_int_adds.tgz, rewritten after each input. About 40 s per input on an H100.
#   INPUTS="sparse-4096 sparse-1024 sparse-200"
#   KERNELS="stream fused"
#   CFGS_4096="512x4x264" CFGS_1024="512x8x264" CFGS_200="256x4x528"   the stream kernel's
#                      "WGxEPLxGRID ..." per input (each timed)
#   DIAGS="int-wg-adds plain-wg-adds skip-wg-adds int-wg-adds"   the timing-only runs
#                      (skip-flush too: where the flush's time goes)
#   REPS=50            timed repetitions per run
#   EXTRA=""           more `wgsparse fused` arguments for every run (e.g. "--prefetch"),
#                      named in every tag
#   STEP_LIMIT=120     seconds any one step may take
# Summary: runs.tsv (tag, exit status, JSON) inside the archive.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200"}
KERNELS=${KERNELS-"stream fused"}
DIAGS=${DIAGS-"int-wg-adds plain-wg-adds skip-wg-adds int-wg-adds"}
REPS=${REPS:-50}
read -ra more <<< "${EXTRA-}"
STEP_LIMIT=${STEP_LIMIT:-120}
archive_init fused_int_adds
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
for g in $INPUTS; do
  case $g in
    sparse-4096) cfgs=${CFGS_4096-512x4x264} ;;
    sparse-1024) cfgs=${CFGS_1024-512x8x264} ;;
    *) cfgs=${CFGS_200-256x4x528} ;;
  esac
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  base=(--matrix-raw "$x" --pattern full,xty --reps "$REPS" "${more[@]}")
  for kernel in $KERNELS; do
    # The stream kernel at each configuration; the fused kernel at its launch model's.
    runs=(model)
    [ "$kernel" = stream ] && read -ra runs <<< "$cfgs"
    for c in "${runs[@]}"; do
      extra=()
      tag="$g $kernel${EXTRA:+ $EXTRA}"
      if [ "$kernel" = stream ]; then
        IFS=x read -r wg epl gr <<< "$c"
        extra=(--wg "$wg" --epl "$epl" --groups "$gr")
        tag="$tag $c"
      fi
      for kind in native cas; do
        run_fused "$tag $kind" "${base[@]}" --variant "$kernel" "${extra[@]}" \
          --wg-atomics "$kind" --check
      done
      for d in $DIAGS; do
        run_fused "$tag diag $d" "${base[@]}" --variant "$kernel" "${extra[@]}" --diag "$d"
      done
    done
  done
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
