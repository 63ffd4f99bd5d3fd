#!/usr/bin/env bash
# Diagnostics of the fused pattern on the NVIDIA machine (repository root, the release binary
# in .gpu/ or W=…, the Vulkan loader packages in .gl/ as gpu_suite.sh). JSON lines into $OUT.
#   CG:  linreg on HIGGS at --chunk 4 (the default: 3 iterations + 1 gated, one submission)
#        and --chunk 64 (61 gated iterations past convergence): the difference over 60 is the
#        cost of one empty gated iteration; --max-iter 0/1/2 give the cost of r₀ and of each
#        iteration. Each line carries seconds, record_seconds (host recording) and
#        wait_seconds (host blocked on the device), submissions and readbacks; the
#        --breakdown line GPU time per phase (xtb, start, gate, fused, alpha, update) too.
#   SPARSE: sparse-4096 `sorted` and `fused` at long-row thresholds and workgroup sizes (what
#        the long-row path costs: rows read twice, two more dispatches), xty beside full (the
#        scatter alone), and w in global memory (L2 atomics instead of workgroup CAS).
# About 3 minutes of GPU wall time (HIGGS generation dominates the CG part).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEP_LIMIT=${STEP_LIMIT:-180}
install_gl --if-present
use_wgsparse W
job_cache
if [ "${CG:-1}" = 1 ]; then
  for args in "--chunk 4" "--chunk 4 --breakdown" "--chunk 64" "--max-iter 0" "--max-iter 1" \
    "--max-iter 2"; do
    log "linreg higgs $args"
    step $W linreg --gen higgs --runs 7 --json $args >> "$OUT/cg.jsonl" 2>>"$OUT/log.txt"
  done
fi
G=${SPARSE_GEN:-sparse-4096}
# sorted at its default (rows up to a tile stay in the tiles) and with rows above 1,024 split;
# xty beside full separates the scatter from the dot products.
for WG in ${SORTED_WG-512 1024}; do
  for L in default 1024; do
    LR=; [ "$L" != default ] && LR="--long-row $L"
    log "fused $G --variant sorted --wg $WG long-row $L"
    step $W fused --gen "$G" --pattern full,xty --variant sorted --wg "$WG" $LR --reps 20 \
      --json >> "$OUT/sparse.jsonl" 2>>"$OUT/log.txt"
  done
done
# fused at long-row thresholds; then w in global memory (native f32 atomics in L2 instead of
# compare-exchange in workgroup memory), plain and with hot columns cached.
for L in ${FUSED_LONG-1024 2458}; do
  log "fused $G --variant fused --long-row $L"
  step $W fused --gen "$G" --pattern full,xty --variant fused --long-row "$L" --reps 20 --json \
    >> "$OUT/sparse.jsonl" 2>>"$OUT/log.txt"
done
for H in 0 1024; do
  log "fused $G --variant fused --global-w --hot-cols $H"
  step $W fused --gen "$G" --pattern full,xty --variant fused --global-w --hot-cols "$H" --reps 20 \
    --json >> "$OUT/sparse.jsonl" 2>>"$OUT/log.txt"
done
log "fused $G --variant sorted --global-w --wg 1024"
step $W fused --gen "$G" --pattern full,xty --variant sorted --global-w --wg 1024 --reps 20 --json \
  >> "$OUT/sparse.jsonl" 2>>"$OUT/log.txt"
log done
