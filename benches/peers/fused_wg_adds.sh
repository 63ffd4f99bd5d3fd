#!/usr/bin/env bash
# Native f32 adds into the workgroup copy of w (`--wg-atomics native`: Vulkan's
# shaderSharedFloat32AtomicAdd, through SPIR-V rewritten from naga's) against the
# compare-exchange loops (`--wg-atomics cas`), then `auto` with them against the peer. Run on
# the NVIDIA machine from the repository root with the release binary in .gpu/ and the Vulkan
# loader packages in .gl/ (as fused_suite.sh). Per input: the export; the stream kernel at
# the configuration `auto` picked on an H100 (tuner revision 13), native / cas / native / cas;
# the launch model's `fused` kernel native / cas; `auto` tuned afresh (native where the
# device has them) and checked; the peer on the same export. `wgsparse roofline` first (its
# workgroup scatter rows time both kinds of adds). Everything goes into
# $OUT/fused_wg_adds.tgz, rewritten after each step. About 2.5 minutes per input on an H100.
#   INPUTS="sparse-4096 sparse-1024 sparse-200"
#   STEP_LIMIT=200     seconds any one step may take
#   PEER_REPS=20       the peer's timed repetitions per option
#   DEADLINE=""        seconds: no input starts after them (a call's limit)
# With the test binary .gpu/gpu_atomics (from `cargo test --release --test gpu_atomics
# --no-run`) it first runs the f32 atomics' tests on the device: tests_gpu_atomics.txt.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200"}
STEP_LIMIT=${STEP_LIMIT:-200}
PEER_REPS=${PEER_REPS:-20}
DEADLINE=${DEADLINE-}
archive_init fused_wg_adds
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
device_tests gpu_atomics 120
step "$W" roofline --json > "$WORK/roofline.json" 2>>"$WORK/err.txt"
start=$(date +%s)
for g in $INPUTS; do
  past_deadline "$g" && break
  case $g in
    sparse-4096) stream=(--wg 512 --epl 4 --groups 528) ;;
    sparse-1024) stream=(--wg 256 --epl 4 --groups 528) ;;
    *) stream=(--wg 128 --epl 8 --groups 528) ;;
  esac
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  base=(--matrix-raw "$x" --pattern full,xty --reps 50 --check)
  for a in native cas native cas; do
    run_fused "$g stream $a" "${base[@]}" --variant stream "${stream[@]}" \
      --wg-atomics "$a"
  done
  for a in native cas; do
    run_fused "$g fused $a" "${base[@]}" --variant fused --wg-atomics "$a"
  done
  run_fused "$g auto tuned, checked" "${base[@]}" --roofline --variant auto
  run_peer "$g" "$x"
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
