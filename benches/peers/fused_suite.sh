#!/usr/bin/env bash
# The fused-pattern benchmark job: run on the NVIDIA machine from the repository root with the
# release binary in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh). Writes JSON
# lines and a log into $OUT (default ./bench-out).
#   INPUTS="sparse-200 sparse-1024 sparse-4096 kdd2010 dense-32 dense-200 dense-1000 dense-2000 higgs"
#   PATTERNS="xty,xtxy,full"   instantiations timed for every input
#   SWEEP="sparse-1024"        inputs whose (VS, workgroup, C) sweep reports the model's gap
#   CG=1                       LR-CG end to end on the HIGGS shape, wgsparse and PyTorch
# For each input: `wgsparse fused` times every variant (fused, two-pass, unfused) with the
# f64 check, the copy roofline and GB/s; then exports X and the operands and runs
# fused_peer.py on the same data in the same job; the export is deleted afterwards.
set -uo pipefail
OUT=${OUT:-bench-out}
INPUTS=${INPUTS-"sparse-200 sparse-1024 sparse-4096 kdd2010 dense-32 dense-200 dense-1000 dense-2000 higgs"}
PATTERNS=${PATTERNS:-"xty,xtxy,full"}
SWEEP=${SWEEP-"sparse-1024"}
CG=${CG:-1}
mkdir -p "$OUT"
if [ -d .gl ]; then for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig; fi
W=${W:-./.gpu/wgsparse}
if ! $W info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
export WGSPARSE_CACHE_DIR="$OUT/cache"
PEER=benches/peers/fused_peer.py
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
for g in $INPUTS; do
  # The f64 check of every variant costs host time on the largest inputs; skip it for kdd2010.
  CHECK=--check; [ "$g" = kdd2010 ] && CHECK=
  log "fused $g (export + peer)"
  rm -rf "/tmp/fused/$g"
  $W fused --gen "$g" --pattern full --variant fused --reps 5 --export "/tmp/fused/$g" --json \
    >> "$OUT/fused_export.jsonl" 2>>"$OUT/log.txt"
  python3 $PEER "/tmp/fused/$g" --reps 20 >> "$OUT/peer_fused.jsonl" 2>>"$OUT/log.txt"
  rm -rf "/tmp/fused/$g"
  log "fused $g patterns=$PATTERNS"
  $W fused --gen "$g" --pattern "$PATTERNS" --variant auto,all $CHECK --roofline --reps 20 --json \
    >> "$OUT/fused.jsonl" 2>>"$OUT/log.txt"
done
for g in $SWEEP; do
  log "sweep $g"
  $W fused --gen "$g" --pattern full --variant fused --sweep --reps 5 --json >> "$OUT/fused_sweep.jsonl" 2>>"$OUT/log.txt"
done
if [ "$CG" = 1 ]; then
  log "linreg CG higgs (wgsparse, then PyTorch on the same X and labels)"
  rm -rf /tmp/fused/higgs-cg
  $W linreg --gen higgs --runs 5 --json --export /tmp/fused/higgs-cg >> "$OUT/linreg.jsonl" 2>>"$OUT/log.txt"
  ITERS=$(python3 -c "import json,sys; print(json.loads(open('$OUT/linreg.jsonl').read().strip().splitlines()[-1])['iterations'])")
  python3 $PEER --cg /tmp/fused/higgs-cg --cg-iters "$ITERS" --reps 12 >> "$OUT/peer_cg.jsonl" 2>>"$OUT/log.txt"
  rm -rf /tmp/fused/higgs-cg
fi
log "done"
