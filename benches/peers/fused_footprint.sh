#!/usr/bin/env bash
# The stream kernel's workgroup-memory footprint against its grid: under Vulkan an NVIDIA SM
# holds 48 KiB of workgroup memory (BENCHMARKS.md, twenty-second measurements), so what a
# workgroup declares sets how many are resident, and a grid beyond them runs in more than one
# wave. Per input: the float adds and the fixed-point sums (`--wg-fixed on`, where FIXED=1)
# at each workgroup size × entries of SIZES_<input> (default: what `auto` picked), over
# GRIDS_<input> (--groups) and ROW_TILES (--row-tile: fewer rows a tile, less workgroup
# memory), each checked against the twin at the first grid. Run on the
# NVIDIA machine from the repository root with the release binary in .gpu/ and the Vulkan
# loader packages in .gl/ (as fused_suite.sh). Everything goes into
# $OUT/fused_footprint.tgz, rewritten after each step. About a minute per input on an H100.
#   INPUTS="sparse-1024 sparse-200 sparse-4096"
#   GRIDS_<input>   grids for that input (defaults below: 3 to 8 workgroups an SM of 132)
#   SIZES_<input>   "WGxEPL ..." (defaults below)
#   FIXED=1         0: float adds only
#   ROW_TILES="0 160 128"   0: the layout's own cap
#   EXTRA=""       more `wgsparse fused` arguments for every run (e.g. "--reorder-cols on")
#   STEP_LIMIT=60   seconds any one step may take
#   DEADLINE=""     seconds: no input starts after them (a call's limit)
# With the test binaries .gpu/fused_stream and .gpu/fused_wg_fixed (`cargo test --release
# --test NAME --no-run`) it first runs those tests on the device: tests_NAME.txt.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-1024 sparse-200 sparse-4096"}
ROW_TILES=${ROW_TILES-"0 160 128"}
STEP_LIMIT=${STEP_LIMIT:-60}
FIXED=${FIXED:-1}
read -ra extra <<< "${EXTRA-}"
DEADLINE=${DEADLINE-}
archive_init fused_footprint
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
device_tests fused_stream 150
device_tests fused_wg_fixed 150
step "$W" roofline --json > "$WORK/roofline.json" 2>>"$WORK/err.txt"
start=$(date +%s)
for g in $INPUTS; do
  past_deadline "$g" && break
  case $g in
    sparse-4096) sizes=${SIZES_4096-512x4} grids=${GRIDS_4096-"264 132"} ;;
    sparse-1024) sizes=${SIZES_1024-256x4} grids=${GRIDS_1024-"528 396 660 792"} ;;
    *) sizes=${SIZES_200-256x4} grids=${GRIDS_200-"528 792 1056"} ;;
  esac
  fixed=(off)
  [ "$FIXED" = 1 ] && fixed=(off on)
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  for size in $sizes; do
    base=(--matrix-raw "$x" --pattern full,xty --reps 50 --variant stream
      --wg "${size%x*}" --epl "${size#*x}" "${extra[@]}")
    for f in "${fixed[@]}"; do
      for rt in $ROW_TILES; do
        tile=()
        [ "$rt" != 0 ] && tile=(--row-tile "$rt")
        check=(--check)
        for gr in $grids; do
          run_fused "$g stream $size ${EXTRA:+$EXTRA }fixed $f row-tile $rt groups $gr" "${base[@]}" \
            "${tile[@]}" --groups "$gr" --wg-fixed "$f" "${check[@]}"
          check=()
        done
      done
    done
  done
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
