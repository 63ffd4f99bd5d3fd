#!/usr/bin/env bash
# Sync wide training without a dispatch per mini-batch (issue 12, item 2): the persistent sync
# kernel (G workgroups take a part's mini-batches in one dispatch, grid barriers between each
# mini-batch's gradient and its update) against the per-mini-batch dispatch path. Run on the
# NVIDIA machine from the repository root with the Vulkan loader packages in .gl/ (as
# wide_suite.sh) and in .gpu/:
#   wgsparse          cargo build --release --bins
#   wide_sync-tests   cargo test --release --test wide_sync --no-run (the path it prints,
#                     target/release/deps/wide_sync-HASH, copied as .gpu/wide_sync-tests)
#   wide-tests        optional, likewise from tests/wide.rs (every model at the default
#                     sync kernel and the persistent one, against the twin)
#   OUT=$OUT bash benches/peers/wide_sync.sh
# About 4 minutes (the per-step time limits bound it at 8.75: tests 2 × 60 s, gen 75, sweeps
# 75 + 100 + 60, checks 45 + 50; TEST_LIMIT=30 brings that to 7.75). Steps:
# 1. tests/wide_sync.rs (and tests/wide.rs) on the GPU: on a discrete GPU the G > 1 tests run
#    (G = 2, 3, 5, 64 against the f64 twin's exact mini-batch SGD; the default G), and the
#    long-span test must train the whole epoch (on lavapipe it is cut short and refused).
# 2. criteo-s (`gen ctr --samples 5134149 --features 1000000 --nnz-per-sample 40 --seed 1`,
#    the last 10% held out: 4,513 mini-batches of 1024 per epoch), `wide sweep --sync` (data
#    chunked once per kernel; same seed, so every run trains on the same chunk orders), batch
#    1024, lr 0.5, 2 epochs, LR and FM k = 10: the dispatch path, then the persistent kernel
#    at G = 1, 8, 32 (a mini-batch's chunks: the default) and 132 (one per SM), and at
#    G = 32 with coherent reads (parameters read by `@coherent` plain loads instead of
#    atomic loads: the lever that halved async's epoch); then LR at
#    chunks of 8 samples (128 per mini-batch): dispatch, persistent at the default G and 132
#    (is the chunk's serial path, not the dispatches, what a mini-batch costs?).
# 3. `wide train --check` (the f64 twin replays every epoch's mini-batches; check_ok: the
#    validation logloss within 0.003 of the twin's): LR persistent at G = 132 over 2 epochs,
#    FM k = 10 persistent at the default G over 1 epoch (the twin's FM epoch costs ≈ 25 s).
# Look for: (a) every test passes (no hang: each step has a time limit; a hang in step 1 or
# a timeout in G > 1 runs means the grid barrier did not hold); (b) per run, epoch_ms and µs
# per mini-batch (epoch_ms / 4,513) against the dispatch path's (≈ 52 µs for LR); (c) each
# persistent run's logloss equal to the dispatch run's (|Δ| ≤ 1e-4: the same SGD on the same
# orders, up to f32 summation order); (d) check_ok true in step 3. Summary:
# $OUT/wide_sync.md; raw lines in $OUT/wide_sync.jsonl, tests in $OUT/*_tests.txt.
# Dry run elsewhere: DRY_RUN=1 skips installing .gl/ into /; SAMPLES / FEATURES shrink the
# data, TEST_LIMIT (default 60) bounds each test binary, e.g.
#   DRY_RUN=1 SAMPLES=20000 FEATURES=5000 OUT=/tmp/s bash benches/peers/wide_sync.sh
# The summary is written even when steps fail (a missing step is named there).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
D=/tmp/wide/criteo_s
mkdir -p /tmp/wide
install_gl --dry-run
use_wgsparse
J="$OUT/wide_sync.jsonl"
$W info --json > "$OUT/wide_info.json" 2>>"$OUT/log.txt"
for t in wide_sync wide; do
  if [ -x .gpu/$t-tests ]; then
    log "tests/$t.rs on the GPU"
    WGSPARSE_BIN=$W timeout "${TEST_LIMIT:-60}" ./.gpu/$t-tests --test-threads 1 >"$OUT/${t}_tests.txt" 2>&1 \
      || log "$t tests FAILED (exit $?): see ${t}_tests.txt"
    grep -E "^test |test result" "$OUT/${t}_tests.txt" | tee -a "$OUT/log.txt"
  fi
done
log "gen criteo-s"
gen_ok=1
# SAMPLES / FEATURES shrink the data for a dry run elsewhere (the job uses the defaults).
timeout 75 $W gen ctr --samples "${SAMPLES:-5134149}" --features "${FEATURES:-1000000}" \
  --nnz-per-sample 40 --seed 1 --raw --out $D \
  --json >> "$OUT/wide_gen.jsonl" 2>>"$OUT/log.txt" || { log "gen FAILED: no runs"; gen_ok=0; }
P=sync-kernel=persistent
RUNS=(--run sync-kernel=dispatch --run $P,sync-groups=32 --run $P,sync-groups=132
  --run $P,sync-groups=32,coherent-reads --run $P,sync-groups=8 --run $P,sync-groups=1)
sweep() {
  local limit=$1; shift
  log "wide sweep --sync $*"
  timeout "$limit" $W wide sweep --sync --train $D --holdout 0.1 --batch 1024 --lr 0.5 \
    --epochs 2 --passes 1 "${RUNS[@]}" "$@" >> "$J" 2>>"$OUT/log.txt" \
    || log "FAILED (exit $?): sweep $*"
}
if [ "$gen_ok" = 1 ]; then
sweep 75 --model lr
sweep 100 --model fm --k 10
# Chunks of 8 samples (128 per mini-batch): a shorter serial path per workgroup, the
# persistent kernel at its default G (128 within the resident workgroups) and at 132.
RUNS=(--run sync-kernel=dispatch --run $P --run $P,sync-groups=132)
sweep 60 --model lr --max-chunk 8
check() {
  local limit=$1; shift
  log "wide train --check $*"
  timeout "$limit" $W wide train --train $D --holdout 0.1 --no-early-stop --batch 1024 \
    --lr 0.5 --sync --check --json "$@" >> "$OUT/wide_sync_check.jsonl" 2>>"$OUT/log.txt" \
    || log "FAILED (exit $?): check $*"
}
check 45 --model lr --epochs 2 --sync-kernel persistent --sync-groups 132
check 50 --model fm --k 10 --epochs 1 --sync-kernel persistent
fi
rm -rf $D
python3 - "$J" "$OUT/wide_sync_check.jsonl" <<'PY' | tee "$OUT/wide_sync.md" | tee -a "$OUT/log.txt"
import json, math, os, sys
rows = []
if os.path.exists(sys.argv[1]):
    rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
if not rows:
    print(f"sweeps: no lines in {sys.argv[1]} (see log.txt)")
print("| model | chunk | run | kernel | G | dispatches / epoch | epoch ms (median of 2) | µs per mini-batch | logloss | Δ vs dispatch |")
print("|---|---|---|---|---|---|---|---|---|---|")
# The dispatch run of the same model and chunking trained on the same chunk orders.
ref = {(r["model"], r["chunk"]): r.get("logloss") for r in rows if r.get("sync_kernel") == "dispatch"}
for r in rows:
    mb = math.ceil(r["n_train"] / r["batch"])
    e = r.get("epoch_ms_median")
    us = f'{1e3 * e / mb:.2f}' if e else "-"
    l, d = r.get("logloss"), ref.get((r["model"], r["chunk"]))
    delta = f"{l - d:+.2e}" if l is not None and d is not None else "-"
    print(f'| {r["model"]} | {r["chunk"]} | {r["run"]} | {r.get("sync_kernel")} | {r.get("sync_groups")} '
          f'| {r.get("dispatches")} '
          f'| {f"{e:.2f}" if e else r.get("error", "-")} | {us} | {l} | {delta} |')
try:
    for l in open(sys.argv[2]):
        if not l.startswith("{"):
            continue
        c = json.loads(l)
        print(f'check: {c["model"]} {c["sync_kernel"]} G = {c["sync_groups"]}: logloss '
              f'{c["logloss"]} vs f64 twin {c["cpu_logloss"]}: check_ok {c["check_ok"]}; '
              f'epoch_ms {[round(x["epoch_ms"], 2) for x in c["epochs"]]}')
except FileNotFoundError:
    print("check: no lines")
PY
log "done"
