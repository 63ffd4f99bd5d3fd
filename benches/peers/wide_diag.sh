#!/usr/bin/env bash
# Where the wide engine's time per mini-batch goes (issue 12), on the NVIDIA machine from the
# repository root with the release binary in .gpu/ and the Vulkan loader packages in .gl/ (as
# wide_suite.sh). About 4 minutes. Writes JSON lines and a log into $OUT (default ./bench-out):
#   OUT=$OUT bash benches/peers/wide_diag.sh
# 1. `wgsparse roofline`: the cost of a bare one-workgroup dispatch in one pass (dispatch_us).
# 2. A criteo-s-like set cut to 460,800 samples (`gen ctr --features 1000000
#    --nnz-per-sample 40`; 90% train: 405 mini-batches of 1024), 2 epochs per run, every run
#    `wide train --json` (epoch_ms from timestamp queries around the epoch's one pass; the
#    host's encoding, bind groups and schedule writes are outside it). Per mini-batch cost =
#    epoch_ms / 405:
#    - sync flow (2 dispatches per mini-batch) at chunks of 32 / 16 / 8 / 4 samples (32 / 64 /
#      128 / 256 workgroups per mini-batch; lanes 8, and 16 at chunk 16), and with the
#      importance cache off: is one flow dispatch bound by one workgroup's serial path?
#    - stage (4 dispatches per mini-batch) at chunk 32.
#    - async: one dispatch per epoch of P persistent workgroups (12,960 chunks cap P at
#      12,960 / 64 = 202, S = 6.3 mini-batches; and P = 64), with the per-feature step scale
#      and without it (wide_suite.sh sweeps P on the full criteo-s shape);
#      `--check` replays each epoch as exact mini-batch SGD on the f64 twin (cpu_logloss;
#      check_ok: async at most 0.003 above it; the unscaled run is expected to fail it).
# Look for: sync epoch_ms / 405 against 2 × dispatch_us (the floor of 2 dispatches), falling
# with smaller chunks if the serial path was the cost; async epoch_ms and logloss ≤ sync's
# + 0.003 with the scale; without it, whether S = 6.3 already diverges on the GPU.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
D=/tmp/wide/diag
mkdir -p /tmp/wide
install_gl
use_wgsparse
J="$OUT/wide_diag.jsonl"
log "roofline"
$W roofline --mib 256 --reps 10 --json >> "$J" 2>>"$OUT/log.txt" || log "roofline FAILED"
log "gen diag set"
$W gen ctr --samples 460800 --features 1000000 --nnz-per-sample 40 --seed 1 --raw --out $D \
  --json >> "$OUT/wide_gen.jsonl" 2>>"$OUT/log.txt" || { log "gen FAILED"; exit 1; }
run() {
  log "wide $*"
  $W wide train --train $D --holdout 0.1 --no-early-stop --lr 0.5 --epochs 2 --batch 1024 \
    --json "$@" >> "$J" 2>>"$OUT/log.txt" || log "FAILED (exit $?): $*"
}
run --model lr --sync
run --model lr --sync --max-chunk 16
run --model lr --sync --max-chunk 16 --lanes 16
run --model lr --sync --max-chunk 8
run --model lr --sync --max-chunk 4
run --model lr --sync --cache 0
run --model lr --sync --mode stage
run --model lr --sync --mode stage --max-chunk 8
run --model lr --async --check
run --model lr --async --async-groups 64 --check
run --model lr --async --no-async-scale --check
run --model lr --async --max-chunk 8
run --model fm --k 10 --sync
run --model fm --k 10 --sync --max-chunk 8
run --model fm --k 10 --async --check
run --model fm --k 10 --async --no-async-scale
rm -rf $D
python3 - "$J" <<'PY' | tee -a "$OUT/log.txt"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "roofline" in r:
        print("bare dispatch_us", r["roofline"].get("dispatch_us"))
        continue
    e = r.get("epoch_ms_median") or float("nan")
    print(f'{r["model"]:5} {r["mode"]:5} sync={r["sync"]!s:5} chunk={r["chunk"]:3} '
          f'lanes={r["lanes"]:2} hot={r["hot_features"]:5} P={r.get("async_groups")} '
          f'S={r.get("in_flight")} scaled={r.get("scaled_features")} '
          f'epoch {e:9.2f} ms  per mini-batch {1e3 * e / 405:8.2f} us  '
          f'logloss {r["logloss"]} cpu {r.get("cpu_logloss")} ok {r.get("check_ok")}')
PY
log "done"
