#!/usr/bin/env bash
# Diagnostics of the fused pattern on the NVIDIA machine (repository root, the release binary
# in .gpu/ or W=…, the Vulkan loader packages in .gl/ as gpu_suite.sh). JSON lines into $OUT.
#   CG:  linreg on HIGGS at --chunk 4 (the default: 3 iterations + 1 gated, one submission)
#        and --chunk 64 (61 gated iterations past convergence): the difference over 60 is the
#        cost of one empty gated iteration; --max-iter 0/1/2 give the cost of r₀ and of each
#        iteration. Each line carries seconds, record_seconds (host recording) and
#        wait_seconds (host blocked on the device), submissions and readbacks.
#   SPARSE: sparse-4096 `sorted` and `fused` at long-row thresholds and workgroup sizes, to
#        see what the long-row path (rows > threshold: dot pre-pass, scatter post-pass) costs.
# About 4 minutes of GPU wall time.
set -uo pipefail
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
if [ -d .gl ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
W=${W:-./.gpu/wgsparse}
if ! $W info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
export WGSPARSE_CACHE_DIR="$OUT/cache"
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
step() {
  timeout "${STEP_LIMIT:-180}" "$@"
  local rc=$?
  [ $rc -ne 0 ] && log "step exit $rc: $*"
  return 0
}
if [ "${CG:-1}" = 1 ]; then
  for args in "--chunk 4" "--chunk 64" "--max-iter 0" "--max-iter 1" "--max-iter 2"; do
    log "linreg higgs $args"
    step $W linreg --gen higgs --runs 7 --json $args >> "$OUT/cg.jsonl" 2>>"$OUT/log.txt"
  done
fi
G=${SPARSE_GEN:-sparse-4096}
for L in ${SORTED_LONG-1024 2048 4096}; do
  for WG in ${SORTED_WG-512 1024}; do
    log "fused $G --variant sorted --wg $WG --long-row $L"
    step $W fused --gen "$G" --pattern full --variant sorted --wg "$WG" --long-row "$L" --reps 20 \
      --json >> "$OUT/sparse.jsonl" 2>>"$OUT/log.txt"
  done
done
for L in ${FUSED_LONG-1024 2458 4096}; do
  log "fused $G --variant fused --long-row $L"
  step $W fused --gen "$G" --pattern full --variant fused --long-row "$L" --reps 20 --json \
    >> "$OUT/sparse.jsonl" 2>>"$OUT/log.txt"
done
log done
