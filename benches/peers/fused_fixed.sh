#!/usr/bin/env bash
# Fixed-point sums of w in the stream kernel (`--wg-fixed on`: integer adds into workgroup
# memory, shared/fixed_wg) against f32 adds (`--wg-fixed off`, native where the device has
# them), then `auto` (which times both on its stream pick) against the peer. Run on the
# NVIDIA machine from the repository root with the release binary in .gpu/ and the Vulkan
# loader packages in .gl/ (as fused_suite.sh). Per input: the export; the stream kernel at
# the configuration `auto` picked on an H100 (tuner revision 14), off / on / off / on, on at
# the GRIDS grids, the float kernel with `--diag int-wg-adds` (what the integer adds alone
# cost) and at n = 4,096 on with workgroups of 1,024; then `auto` tuned afresh and checked,
# then cached, and the peer on the same export. Every valid run but the grids' is checked
# against the twin. `wgsparse roofline` first.
# Everything goes into $OUT/fused_fixed.tgz, rewritten after each step. About 2.5 minutes
# per input on an H100.
#   INPUTS="sparse-4096 sparse-1024 sparse-200"
#   GRIDS="132 528"    more grids (--groups) for the fixed sums
#   AUTO=1             0: no `auto` runs and no peer
#   FIXED_DIAGS="fixed-no-global fixed-lo-only"   timing switches of the sums, each run once
#   STEP_LIMIT=200     seconds any one step may take
#   PEER_REPS=20       the peer's timed repetitions per option
#   DEADLINE=""        seconds: no input starts after them (a call's limit)
# With the test binary .gpu/fused_wg_fixed (from `cargo test --release --test fused_wg_fixed
# --no-run`) it first runs those tests on the device: tests_fused_wg_fixed.txt.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200"}
GRIDS=${GRIDS-"132 528"}
AUTO=${AUTO:-1}
FIXED_DIAGS=${FIXED_DIAGS-"fixed-no-global fixed-lo-only"}
STEP_LIMIT=${STEP_LIMIT:-200}
PEER_REPS=${PEER_REPS:-20}
DEADLINE=${DEADLINE-}
archive_init fused_fixed
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
device_tests fused_wg_fixed 200
step "$W" roofline --json > "$WORK/roofline.json" 2>>"$WORK/err.txt"
start=$(date +%s)
for g in $INPUTS; do
  past_deadline "$g" && break
  case $g in
    sparse-4096) stream=(--wg 512 --epl 4) grid=264 ;;
    sparse-1024) stream=(--wg 256 --epl 4) grid=528 ;;
    *) stream=(--wg 256 --epl 4) grid=528 ;;
  esac
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  base=(--matrix-raw "$x" --pattern full,xty --reps 50 --variant stream "${stream[@]}")
  for f in off on off on; do
    run_fused "$g stream fixed $f" "${base[@]}" --groups "$grid" --wg-fixed "$f" --check
  done
  for gr in $GRIDS; do
    run_fused "$g stream fixed on groups $gr" "${base[@]}" --groups "$gr" --wg-fixed on
  done
  for d in $FIXED_DIAGS; do
    run_fused "$g stream fixed on diag $d" "${base[@]}" --groups "$grid" --wg-fixed on --diag "$d"
  done
  # Integer adds of the bits in the float kernel: what the sums' adds alone would cost.
  run_fused "$g stream diag int-wg-adds" "${base[@]}" --groups "$grid" --diag int-wg-adds
  if [ "$g" = sparse-4096 ]; then
    # w's two words leave one workgroup an SM: 1,024 invocations fill it.
    run_fused "$g stream fixed on wg 1024" --matrix-raw "$x" --pattern full,xty --reps 50 \
      --variant stream --wg 1024 --epl 4 --wg-fixed on --check
  fi
  if [ "$AUTO" = 0 ]; then
    rm -rf "$x"
    pack
    continue
  fi
  run_fused "$g auto tuned, checked" --matrix-raw "$x" --pattern full,xty --reps 50 \
    --check --roofline --variant auto
  run_fused "$g auto cached" --matrix-raw "$x" --pattern full,xty --reps 50 --variant auto
  run_peer "$g" "$x"
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
