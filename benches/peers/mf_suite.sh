#!/usr/bin/env bash
# The MF benchmark job (issue: cuMF_SGD): run on the NVIDIA machine from the repository root
# with the release binary in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh).
# Writes JSON lines and a log into $OUT (default ./bench-out).
#   SHAPES="netflix yahoo" WORKERS="3432 6864 13728" EPOCHS=20 PEER=1 benches/peers/mf_suite.sh
#   SHAPES   planted data sets: netflix (480,190 × 17,771, 99.07M + 1.41M; λ 0.05, β 0.3) and
#            yahoo (1,000,990 × 624,961, 252.8M + 4.0M; λ 1.0, β 0.2), rank 16, Zipf degrees
#   WORKERS  batch-Hogwild! worker counts to sweep (f16 and f32 each)
#   WF_WORKERS  wavefront worker counts (column blocks: 2 × workers)
#   PEER=1   also run benches/peers/mf_cupy.py (cuMF_SGD's kernel design in CUDA via CuPy) on
#            the same files, the same worker counts, f16 and f32
# `mf train --gen SHAPE` (same generator, in memory) also reports the planted noise floor.
set -uo pipefail
OUT=${OUT:-bench-out}
SHAPES=${SHAPES:-"netflix yahoo"}
WORKERS=${WORKERS:-"3432 6864 13728"}
WF_WORKERS=${WF_WORKERS:-"512 1024"}
EPOCHS=${EPOCHS:-20}
mkdir -p "$OUT" /tmp/mf
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done; ldconfig
if ! ./.gpu/wgsparse info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
W=./.gpu/wgsparse
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
for shape in $SHAPES; do
  case $shape in
    netflix) dims="--users 480190 --items 17771 --ratings 100480507 --test-fraction 0.0140166"; hp="--lambda 0.05 --alpha 0.08 --beta 0.3";;
    yahoo)   dims="--users 1000990 --items 624961 --ratings 256804235 --test-fraction 0.0155914"; hp="--lambda 1.0 --alpha 0.08 --beta 0.2";;
    *) log "unknown shape $shape"; continue;;
  esac
  log "gen $shape"
  $W gen ratings $dims --rank 16 --seed 1 --binary --train /tmp/mf/$shape.train.bin \
    --test /tmp/mf/$shape.test.bin --json >> "$OUT/mf_gen.jsonl" 2>>"$OUT/log.txt"
  for prec in f16 f32; do
    for w in $WORKERS; do
      log "mf $shape hogwild $prec workers=$w"
      $W mf train --train /tmp/mf/$shape.train.bin --test /tmp/mf/$shape.test.bin --k 128 \
        --epochs "$EPOCHS" $hp --precision $prec --workers "$w" --json \
        >> "$OUT/mf.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?)"
    done
    for w in $WF_WORKERS; do
      log "mf $shape wavefront $prec workers=$w"
      $W mf train --train /tmp/mf/$shape.train.bin --test /tmp/mf/$shape.test.bin --k 128 \
        --epochs "$EPOCHS" $hp --precision $prec --scheme wavefront --workers "$w" --json \
        >> "$OUT/mf.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?)"
    done
  done
  for prec in f16 f32; do
    log "mf $shape --gen (noise floor) $prec"
    $W mf train --gen $shape --k 128 --epochs "$EPOCHS" $hp --precision $prec --json \
      >> "$OUT/mf_gen_floor.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?)"
  done
  if [ "${PEER:-0}" = 1 ]; then
    log "peer $shape"
    python3 benches/peers/mf_cupy.py /tmp/mf/$shape.train.bin /tmp/mf/$shape.test.bin \
      --workers "${WORKERS// /,}" --precision f16,f32 --epochs "$EPOCHS" \
      $hp >> "$OUT/mf_peer.jsonl" 2>>"$OUT/log.txt" || log "peer FAILED"
  fi
  rm -f /tmp/mf/$shape.*.bin
done
log "done"
