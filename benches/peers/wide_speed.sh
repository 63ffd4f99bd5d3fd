#!/usr/bin/env bash
# Wide async epoch time on the criteo-s shape, plain flow kernel against the pipelined one
# (`--pipe`, shaders/wide/flow_pipe.wgsl), issue 12. Run on the NVIDIA machine from the
# repository root with the release binary in .gpu/ and the Vulkan loader packages in .gl/
# (as wide_diag.sh). Writes JSON lines and a log into $OUT (default ./bench-out):
#   OUT=$OUT bash benches/peers/wide_speed.sh
# Budget: ≈ 6 minutes (each run is capped by RUN_S seconds, default 75, setup included; the
# whole job stops starting runs after JOB_S seconds, default 290). W (binary) and SAMPLES
# (default 5134149) exist for a smoke test elsewhere.
# Data: `gen ctr --samples 5134149 --features 1000000 --nnz-per-sample 40`, 90% train
# (4,620,734 samples, 144,398 chunks of 32), generated once. Every run: batch 1024, lr 0.5,
# 2 epochs (FM 1), `wide train --json` (epoch_ms_median from timestamp queries around the epoch's
# one pass; logloss on the 10% held out). Order: the A/B pair first, then the knobs.
#   1. LR async, plain kernel, P = 1024 (19.7 ms/epoch in the last sweep), --check (f64
#      replay: cpu_logloss, check_ok)
#   2. LR async --pipe, P = 1024, --check
#   3. --pipe --flush-every 8 (local SGD on the cached hot features and the bias: one global
#      atomic per hot parameter per 8 chunks instead of per chunk; the step scale assumes
#      8× the chunks in flight), --check; the same at chunks of 64 × 4 lanes; --flush-every 32
#   4. --pipe at chunks of 64 × 4 lanes (11.2 ms with the plain kernel)
#   5. --pipe --flush-every 8 --direct-split 1024: only the 1,024 most frequent features
#      through the segments, the others applied per edge straight after the Loss
#   6. FM k = 10 async --pipe --flush-every 8, 1 epoch (the plain kernel: 112 ms)
#   7. --pipe --cache 0; --pipe --flush-every 8 at chunks of 128
#   8. FM k = 10 async, plain kernel, 1 epoch (last: the likeliest to be cut by the budget)
# Look for: epoch_ms of 2 and 3 against 1, the bar 2 ms; logloss within 0.003 above
# cpu_logloss (check_ok true); whether --flush-every cuts the per-chunk cost (the suspected
# same-address atomics on the hot features and the bias).
set -uo pipefail
OUT=${OUT:-bench-out}
RUN_S=${RUN_S:-75}
JOB_S=${JOB_S:-290}
D=/tmp/wide/speed
mkdir -p "$OUT" /tmp/wide
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done; ldconfig
W=${W:-./.gpu/wgsparse}
if ! $W info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
SAMPLES=${SAMPLES:-5134149}
J="$OUT/wide_speed.jsonl"
START=$SECONDS
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
log "gen criteo-s"
if [ ! -e $D/labels.f32 ]; then
  $W gen ctr --samples "$SAMPLES" --features 1000000 --nnz-per-sample 40 --seed 1 --raw \
    --out $D --json >> "$OUT/wide_gen.jsonl" 2>>"$OUT/log.txt" || { log "gen FAILED"; exit 1; }
fi
run() {
  if [ $((SECONDS - START)) -ge "$JOB_S" ]; then
    log "SKIPPED (job budget): $*"
    return
  fi
  log "wide $*"
  timeout "$RUN_S" $W wide train --train $D --holdout 0.1 --no-early-stop --lr 0.5 \
    --epochs "${EP:-2}" --batch 1024 --json "$@" >> "$J" 2>>"$OUT/log.txt"
  rc=$?
  if [ $rc = 124 ]; then log "TIMEOUT after ${RUN_S}s: $*"; elif [ $rc != 0 ]; then log "FAILED (exit $rc): $*"; fi
}
run --model lr --async --check
run --model lr --async --pipe --check
run --model lr --async --pipe --flush-every 8 --check
run --model lr --async --pipe --flush-every 8 --max-chunk 64 --lanes 4 --check
run --model lr --async --pipe --flush-every 32
run --model lr --async --pipe --max-chunk 64 --lanes 4
run --model lr --async --pipe --flush-every 8 --direct-split 1024
EP=1 run --model fm --k 10 --async --pipe --flush-every 8
run --model lr --async --pipe --cache 0
run --model lr --async --pipe --flush-every 8 --max-chunk 128
EP=1 run --model fm --k 10 --async
rm -rf $D
python3 - "$J" <<'PY' | tee -a "$OUT/log.txt"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    e = r.get("epoch_ms_median") or float("nan")
    chunks = -(-r["n_train"] // r["chunk"])
    print(f'{r["model"]:5} pipe={r.get("pipe")!s:5} flush={r.get("flush_every")} split={r.get("direct_split")} chunk={r["chunk"]:3} lanes={r["lanes"]:2} '
          f'hot={r["hot_features"]:5} P={r.get("async_groups")} S={r.get("in_flight")} '
          f'epoch {e:9.2f} ms  {chunks / e * 1e-3:7.2f} M chunks/s  '
          f'logloss {r["logloss"]} cpu {r.get("cpu_logloss")} ok {r.get("check_ok")} '
          f'setup {r.get("setup_s", 0):.1f} s')
PY
log "done"
