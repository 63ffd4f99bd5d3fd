#!/usr/bin/env bash
# MF on several GPUs (issue 14 point 3): the Yahoo!Music shape trained on one GPU and on two
# by the G × G·c block schedule, same data, same epochs. Run from the repository root on the
# two-GPU machine with the Vulkan loader packages in .gl/ (as gpu_suite.sh) and, in .gpu/:
#   wgsparse         cargo build --release --bin wgsparse
#   mf-multi-tests   (optional) the test binary of tests/mf_multi.rs:
#                    cargo test --release --test mf_multi --no-run, the printed
#                    target/release/deps/mf_multi-HASH copied as .gpu/mf-multi-tests
# Writes logs and JSON lines into $OUT (default ./bench-out); ends with a summary table.
#   OUT=$OUT benches/peers/mf_multi_suite.sh                       (2 GPUs, about 6 minutes)
#   WGSPARSE_SHARE_ADAPTERS=1 SCALE=0.1 OUT=$OUT benches/peers/mf_multi_suite.sh
#       (one GPU opened as two devices: checks the path end to end; its "2 GPU" figures share
#        one GPU and say nothing about scaling)
# Environment: SCALE (fraction of the shape's ratings, users and items × √SCALE; default 1), EPOCHS
# (default 20), WORKERS (per GPU, default 13728 as the one-GPU Yahoo!Music run in
# BENCHMARKS.md), SPLITS (column blocks per GPU to try on two GPUs, default "1 2 4";
# 1 is cuMF_SGD's 2×2 grid, where the GPUs wait for each other's Q block between rounds),
# LAMBDA (default 1.0, the paper's; BENCHMARKS.md: it holds the planted model near zero, so
# LAMBDA=0.05 gives an RMSE comparison nearer the noise floor).
# Runs, each on the same generated files:
#   one     the single-device trainer (no --gpus): its GPU-timestamp rate, the one-GPU figure
#           of BENCHMARKS.md
#   g1      --gpus 1 --split 1: the multi-device path on one GPU, timed by wall clock as the
#           two-GPU runs are (the fair baseline for the speed-up)
#   g2 cN   --gpus 2 --split N for each N of SPLITS
# What to look for: g2's updates/s over g1's (issue 14: ≥ 1.6×), its final RMSE beside g1's
# and one's (issue: within 1%), and per GPU the seconds waiting for the other's Q block.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SCALE=${SCALE:-1}
EPOCHS=${EPOCHS:-20}
WORKERS=${WORKERS:-13728}
SPLITS=${SPLITS:-"1 2 4"}
LAMBDA=${LAMBDA:-1.0}
mkdir -p /tmp/mf
install_gl --quiet
use_wgsparse
export WGSPARSE_BIN=$PWD/.gpu/wgsparse
$W info >> "$OUT/log.txt" 2>&1
nvidia-smi -L >> "$OUT/log.txt" 2>&1

if [ -x .gpu/mf-multi-tests ]; then
  log "tests/mf_multi.rs on the GPU"
  timeout 120 ./.gpu/mf-multi-tests --test-threads 1 >"$OUT/mf_multi_tests.txt" 2>&1 \
    || log "mf_multi tests FAILED (exit $?): see mf_multi_tests.txt"
  grep -E "^test |test result" "$OUT/mf_multi_tests.txt" | tee -a "$OUT/log.txt"
fi

# Users and items scale by √SCALE, ratings by SCALE: the density stays the shape's.
s() { python3 -c "print(max(1, round($1 * $SCALE ** $2)))"; }
dims="--users $(s 1000990 0.5) --items $(s 624961 0.5) --ratings $(s 256804235 1) --test-fraction 0.0155914"
hp="--k 128 --lambda $LAMBDA --alpha 0.08 --beta 0.2 --precision f16 --workers $WORKERS"
log "gen yahoo × $SCALE: $dims"
$W gen ratings $dims --rank 16 --seed 1 --binary --train /tmp/mf/yahoo.train.bin \
  --test /tmp/mf/yahoo.test.bin --json >"$OUT/gen_yahoo.json" 2>>"$OUT/log.txt" \
  || { log "gen FAILED"; exit 1; }
floor=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['noise_floor'])" "$OUT/gen_yahoo.json")
log "noise floor $floor"

train() { # label, extra arguments…
  local label=$1; shift
  log "mf $label: $*"
  if timeout 200 $W mf train --train /tmp/mf/yahoo.train.bin --test /tmp/mf/yahoo.test.bin \
    --epochs "$EPOCHS" --noise-floor "$floor" $hp --json "$@" >/tmp/mf/run.json 2>>"$OUT/log.txt"; then
    python3 -c "import json,sys; j = json.load(open('/tmp/mf/run.json')); j['label'] = sys.argv[1]; print(json.dumps(j))" \
      "$label" >>"$OUT/mf_multi.jsonl"
  else
    log "FAILED (exit $?)"
  fi
}
train one
train g1 --gpus 1 --split 1
for c in $SPLITS; do train "g2 c$c" --gpus 2 --split "$c"; done
rm -f /tmp/mf/yahoo.*.bin /tmp/mf/run.json

python3 - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, os, sys
p = os.path.join(sys.argv[1], "mf_multi.jsonl")
rows = [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
base = next((r["updates_per_s"] for r in rows if r["label"] == "g1"), None)
print(f"{'run':>7} {'GPUs':>4} {'c':>2} {'G upd/s':>8} {'vs g1':>6} {'RMSE':>7} {'floor':>7}  per GPU: wall s / waiting s")
for r in rows:
    ups = r["updates_per_s"]
    rel = f"{ups / base:6.2f}" if base else "     -"
    per = "  ".join(f"{d['seconds']:.2f}/{d['wait_seconds']:.2f}" for d in r.get("devices", []))
    fl = r.get("noise_floor") or float("nan")
    rm = r.get("final_rmse") or float("nan")
    print(f"{r['label']:>7} {r.get('gpus', 1):>4} {r.get('split', '-'):>2} {ups / 1e9:8.3f} {rel} "
          f"{rm:7.4f} {fl:7.4f}  {per}")
EOF
log "done"
