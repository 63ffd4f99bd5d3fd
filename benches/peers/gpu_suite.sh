#!/usr/bin/env bash
# The GPU benchmark job: run on the NVIDIA machine from the repository root with the release
# binary in .gpu/ and the Vulkan loader packages in .gl/ (see BENCHMARKS.md). Writes JSON and
# a log into $OUT (default ./bench-out).
#   MATS="nytimes enron" KS="32 128 512" BASE=1 SWEEPS="enron nips" benches/peers/gpu_suite.sh
#   MATS      suite matrices: every (K, variant) timed and checked, then the peer (every
#             operand layout, the fastest reported) on the same exported S, A and B
#   PEER_ARGS extra arguments of sddmm_torch.py (e.g. --no-half)
#   KS        inner dimensions (space separated)
#   VARIANTS  variants (space separated)
#   BASE=1    also record `wgsparse info`, `wgsparse roofline` and the torch copy bandwidth
#   SWEEPS    suite matrices for the exhaustive sweep at K=128 (model vs best)
#   SWEEP_VARIANT  the swept variant: sm-l2 (default) or row-run
# One process per (matrix, K), so a job cut short keeps what it finished; every variant is
# timed after the GPU's clocks have settled under load (see `median_warm`: an idle H200
# clocks down to ~500 MHz within a second).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
MATS=${MATS-"nytimes web-google enron nips pubmed-lite dense75k"}
KS=${KS:-"32 128 512"}
SWEEPS=${SWEEPS-""}
VARIANTS=${VARIANTS:-"auto naive warp sm-l2 sm-sm"}
install_gl
use_wgsparse
job_cache
PEER=benches/peers/sddmm_torch.py
if [ "${BASE:-0}" = 1 ]; then
  log "info";     $W info --json > "$OUT/info.json" 2>>"$OUT/log.txt"; $W info | tee -a "$OUT/log.txt"
  log "roofline"; $W roofline --json --mib 2000 --reps 30 > "$OUT/roofline.json" 2>>"$OUT/log.txt"; cat "$OUT/roofline.json"
  log "torch copy"; python3 $PEER --copy 2000 --reps 30 > "$OUT/peer_copy.jsonl" 2>>"$OUT/log.txt"; cat "$OUT/peer_copy.jsonl"
fi
for m in $MATS; do
  rm -rf /tmp/mats/$m
  $W gen suite "$m" --raw --out /tmp/mats/$m >>"$OUT/log.txt" 2>&1
  for k in $KS; do
    log "sddmm $m K=$k variants=$VARIANTS"
    $W sddmm --matrix-raw /tmp/mats/$m --k "$k" --variant "${VARIANTS// /,}" --check --reps 10 \
      --export /tmp/mats/$m --json >> "$OUT/sddmm.jsonl" 2>>"$OUT/log.txt"
  done
  # The peer runs on the operands wgsparse used (exported above) and compares with its P.
  log "peer $m"
  python3 $PEER /tmp/mats/$m --k "${KS// /,}" --reps 10 ${PEER_ARGS:-} >> "$OUT/peer_sddmm.jsonl" 2>>"$OUT/log.txt"
  rm -rf /tmp/mats/$m
done
for m in $SWEEPS; do
  log "sweep $m"
  $W sddmm --gen "$m" --k 128 --variant "${SWEEP_VARIANT:-sm-l2}" --no-tune --sweep --reps 3 --json >> "$OUT/sweeps.jsonl" 2>>"$OUT/log.txt"
done
log "done"
