#!/usr/bin/env bash
# The loop-cap guards on a GPU (no cap): run on the NVIDIA machine from the repository root
# with the test binaries in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh):
#   .gpu/loop_cap_guards  from `cargo test --release --test loop_cap_guards --no-run`'s path
#   .gpu/loop_cap         from `cargo test --release --test loop_cap --no-run`'s path
# A GPU is not probed (Caps::loop_cap = None), so every case of tests/loop_cap_guards runs
# its unbounded plan and must equal the f64 twin: SDDMM naive and SM-L2 at K = 600,000 with
# the model's and an 8-float slice, SM-SM at K = 65,536 on the model's tile, a row run of
# 100,000+ nonzeros on one lane, SpDNN dense rows and sliced ELL on one neuron fed by all
# (N = 4,096 and 70,000), the thesis's CSR·CSR 1D on a full row of Y (N = 40,000), wide
# predict and validation of a 600,000-feature sample (LR and FM), and folded long-row chunks
# on one or two workgroups. tests/loop_cap checks the adapter reports no cap.
# Writes $OUT/guards.txt, $OUT/probe.txt and $OUT/log.txt. Under a minute of GPU wall time.
# Dry run elsewhere: DRY_RUN=1 skips installing .gl/ into /; BIN (default .gpu) is where the
# test binaries are, e.g. on lavapipe (where the guards refuse or size the plans instead):
#   DRY_RUN=1 BIN=/tmp/bins OUT=/tmp/g bash benches/peers/loop_cap_guards.sh
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
LIMIT=${LIMIT:-240}
BIN=${BIN:-.gpu}
install_gl --dry-run
job_cache
run() {
  local name=$1 file=$2
  if [ ! -x "$BIN/$name" ]; then
    log "no $BIN/$name: skipped"
    return
  fi
  # The NVIDIA driver when the loader does not find it by itself.
  if [ "${DRY_RUN:-0}" != 1 ] && [ -z "${VK_DRIVER_FILES:-}" ] \
    && [ -e "$NVIDIA_ICD" ]; then
    export VK_DRIVER_FILES=$NVIDIA_ICD
  fi
  log "tests/$name on the device"
  timeout "$LIMIT" "$BIN/$name" --test-threads 1 --nocapture > "$OUT/$file" 2>&1
  local rc=$?
  if [ $rc -eq 0 ]; then
    log "tests/$name passed"
  else
    log "tests/$name FAILED (exit $rc; see $file)"
  fi
  grep -E "^test |test result" "$OUT/$file" | tee -a "$OUT/log.txt"
}
run loop_cap probe.txt
run loop_cap_guards guards.txt
