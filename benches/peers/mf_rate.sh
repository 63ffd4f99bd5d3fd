#!/usr/bin/env bash
# The MF rate job (issue: cuMF_SGD, bar ≥ 2.8 G updates/s in every run): batch-Hogwild! on the
# Netflix shape, k = 128, f16, coherent P/Q, each candidate configuration REPEAT times, then
# f32 once at the default. Run on the NVIDIA machine from the repository root with the Vulkan
# loader packages in .gl/ (as gpu_suite.sh) and, in .gpu/:
#   wgsparse   cargo build --release --bin wgsparse
#   mf-tests   optional: the test binary of tests/mf.rs (cargo test --release --test mf
#              --no-run; the path it prints, target/release/deps/mf-HASH, copied as
#              .gpu/mf-tests), run first: every layout against the CPU twin on the GPU
#   OUT=bench-out benches/peers/mf_rate.sh     (under 7 minutes on an H200: see BUDGET)
# Runs go round-robin over the configurations (repeat 1 of each, then repeat 2, …), so that
# a drift of the machine spreads over all of them; once BUDGET seconds (default 360) have
# passed since the start, the remaining runs are skipped and logged, and none runs past HARD
# seconds (default 405). A Netflix-shape run: reading and shuffling 99M ratings on the host,
# ~1 s of clock warm-up, ~1 s of epochs.
# CONFIGS overrides the candidates: lines "name|workers|extra mf train arguments"; F32_WORKERS
# (default 13728, empty: none) the f32 run's workers; DIMS the shape (`gen ratings` arguments;
# a small one makes a dry run on any adapter).
# Writes log.txt, mf_rate.jsonl (one mf train JSON per run, with a "config" and "run" added)
# and summary.txt: per run G updates/s, test RMSE, the first epoch's rate against the median
# of the others (the clock ramp the warm-up removes), then per configuration min / median /
# max and whether every run reached 2.8.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
EPOCHS=${EPOCHS:-20}
REPEAT=${REPEAT:-3}
BUDGET=${BUDGET:-360}
HARD=${HARD:-405}  # no run outlives this many seconds from the start
# Defaults: ILP 2, staged samples, the subgroup's 32 lanes, one word per access, clock
# warm-up on, workgroups of 256. 13,728 workers is the fastest count of the earlier jobs;
# 27,456 keeps the thread count at 16 lanes per worker; 16,896 × 16 lanes fill 132 SMs ×
# 2,048 threads once; --wg 128 halves the workgroup (finer occupancy steps); one dispatch
# per epoch takes ⌈nnz / (13,728 · 128)⌉ · 128 = 7,296 updates per worker; --incoherent-p
# binds Q alone `@coherent` (--incoherent, both, reached 3.16–3.21 G at the same RMSE).
CONFIGS=${CONFIGS:-"default|13728|
cold|13728|--no-warm-up
vec2|13728|--vector 2
wg128|13728|--wg 128
l16v4|27456|--lanes 16 --vector 4
l16v4|16896|--lanes 16 --vector 4
l8v4|27456|--lanes 8 --vector 4
dispatch8k|13728|--dispatch-updates 8192
pcached|13728|--incoherent-p"}
START=$(date +%s)
mkdir -p /tmp/mf
install_gl --if-present
use_wgsparse
# Log lines show the seconds since the start.
LOG_SINCE=$START
$W info >> "$OUT/log.txt" 2>&1

if [ -x .gpu/mf-tests ]; then
  log "tests/mf.rs on the GPU"
  timeout 90 ./.gpu/mf-tests --test-threads 1 >"$OUT/mf_tests.txt" 2>&1 \
    || log "mf tests FAILED (exit $?): see mf_tests.txt"
  grep -E "^test |test result" "$OUT/mf_tests.txt" | tee -a "$OUT/log.txt"
fi

log "gen netflix"
DIMS=${DIMS:-"--users 480190 --items 17771 --ratings 100480507 --test-fraction 0.0140166"}
# shellcheck disable=SC2086
$W gen ratings $DIMS --rank 16 --seed 1 --binary --train /tmp/mf/netflix.train.bin --test /tmp/mf/netflix.test.bin \
  --json >"$OUT/gen_netflix.json" 2>>"$OUT/log.txt" || { log "gen FAILED"; exit 1; }
floor=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['noise_floor'])" "$OUT/gen_netflix.json")
log "noise floor $floor"

train() { # config name, run, workers, extra arguments…
  local name=$1 run=$2 workers=$3; shift 3
  if [ $(( $(date +%s) - START )) -ge "$BUDGET" ]; then
    log "SKIPPED (budget) $name run $run: --workers $workers $*"
    return
  fi
  log "$name run $run: --workers $workers $*"
  local j limit=$(( HARD - ($(date +%s) - START) ))
  [ "$limit" -gt 90 ] && limit=90
  j=$(timeout "$limit" $W mf train --train /tmp/mf/netflix.train.bin --test /tmp/mf/netflix.test.bin \
    --k 128 --epochs "$EPOCHS" --lambda 0.05 --alpha 0.08 --beta 0.3 --noise-floor "$floor" \
    --workers "$workers" --json "$@" 2>>"$OUT/log.txt") || { log "FAILED (exit $?)"; return; }
  python3 -c "import json,sys; j=json.loads(sys.argv[1]); j['config']=sys.argv[2]; j['run']=int(sys.argv[3]); print(json.dumps(j))" \
    "$j" "$name@$workers" "$run" >>"$OUT/mf_rate.jsonl"
}
F32_WORKERS=${F32_WORKERS-13728}
for run in $(seq "$REPEAT"); do
  while IFS='|' read -r name workers extra; do
    [ -n "$name" ] || continue
    # shellcheck disable=SC2086
    train "$name" "$run" "$workers" --precision f16 $extra
  done <<<"$CONFIGS"
  # f32 at the default once, after the first round (before the budget can run out).
  if [ "$run" = 1 ] && [ -n "$F32_WORKERS" ]; then
    train default "$run" "$F32_WORKERS" --precision f32
  fi
done
rm -f /tmp/mf/netflix.*.bin

python3 - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, os, statistics, sys
out = sys.argv[1]
p = os.path.join(out, "mf_rate.jsonl")
rs = [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
print(f"{'config':>22} {'run':>3} {'prec':>4} {'lanes':>5} {'vec':>3} {'ilp':>3} {'stg':>3} "
      f"{'disp':>5} {'wg':>4} {'cohP':>4} {'warm s':>6} {'G upd/s':>8} {'ep1':>6} {'ep2+':>6} {'RMSE':>7} {'/floor':>6}")
for r in rs:
    eps = [e["updates_per_s"] / 1e9 for e in r["epochs"]]
    rest = statistics.median(eps[1:]) if len(eps) > 1 else float("nan")
    rm = r.get("final_rmse") or float("nan")
    fl = r.get("noise_floor") or float("nan")
    print(f"{r['config']:>22} {r['run']:>3} {r['precision']:>4} {r['lanes']:>5} {r['vector']:>3} "
          f"{r['ilp']:>3} {int(bool(r['stage'])):>3} {r['dispatch_updates']:>5} {r['workgroup']:>4} {int(bool(r['coherent_p'])):>4} "
          f"{r.get('warm_up_seconds', 0):6.2f} {r['updates_per_s']/1e9:8.3f} {eps[0]:6.3f} "
          f"{rest:6.3f} {rm:7.4f} {rm/fl:6.3f}")
print()
print(f"{'config':>22} {'prec':>4} {'runs':>4} {'min':>7} {'median':>7} {'max':>7} {'all>=2.8':>8} {'RMSE':>15}")
groups = {}
for r in rs:
    groups.setdefault((r["config"], r["precision"]), []).append(r)
for (c, prec), g in groups.items():
    v = [r["updates_per_s"] / 1e9 for r in g]
    rm = [r.get("final_rmse") or float("nan") for r in g]
    print(f"{c:>22} {prec:>4} {len(v):>4} {min(v):7.3f} {statistics.median(v):7.3f} {max(v):7.3f} "
          f"{str(min(v) >= 2.8):>8} {min(rm):7.4f}-{max(rm):7.4f}")
EOF
log "done"
