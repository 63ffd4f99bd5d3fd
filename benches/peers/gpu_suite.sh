#!/usr/bin/env bash
# The GPU benchmark job: run on the NVIDIA machine from the repository root with the release
# binary in .gpu/ and the Vulkan loader packages in .gl/ (see BENCHMARKS.md). Writes JSON and
# a log into $OUT (default ./bench-out).
#   benches/peers/gpu_suite.sh [MATRICES] [KS] [EXTRA wgsparse sddmm FLAGS]
set -uo pipefail
OUT=${OUT:-bench-out}
mkdir -p "$OUT"
MATS=${1:-"nytimes web-google enron nips pubmed-lite"}
KS=${2:-"32,128,512"}
EXTRA=${3:-"--variant all --check"}
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
if ! ./.gpu/wgsparse info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
W=./.gpu/wgsparse
PEER=benches/peers/sddmm_torch.py
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
log "info";     $W info --json > "$OUT/info.json" 2>>"$OUT/log.txt"; $W info | tee -a "$OUT/log.txt"
log "roofline"; $W roofline --json --mib 2000 --reps 30 > "$OUT/roofline.json" 2>>"$OUT/log.txt"; cat "$OUT/roofline.json"
log "torch copy"; python3 $PEER --copy 2000 --reps 30 > "$OUT/peer_copy.jsonl" 2>>"$OUT/log.txt"; cat "$OUT/peer_copy.jsonl"
for m in $MATS; do
  log "sddmm $m"
  rm -rf /tmp/mats/$m
  $W sddmm --gen "$m" --k "$KS" $EXTRA --reps 10 --export /tmp/mats/$m --json \
    >> "$OUT/sddmm.jsonl" 2>>"$OUT/log.txt"
  tail -c 600 "$OUT/sddmm.jsonl"; echo
  log "peer $m"
  python3 $PEER /tmp/mats/$m --k "$KS" --reps 10 >> "$OUT/peer_sddmm.jsonl" 2>>"$OUT/log.txt"
  rm -rf /tmp/mats/$m
done
log "done"
