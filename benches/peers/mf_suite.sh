#!/usr/bin/env bash
# The MF job (issue: cuMF_SGD): run on the NVIDIA machine from the repository root with the
# Vulkan loader packages in .gl/ (as gpu_suite.sh) and, in .gpu/:
#   wgsparse        cargo build --release --bin wgsparse
#   mf_reference    cargo build --release --example mf_reference
#   mf-tests        the test binary of tests/mf.rs: cargo test --release --test mf --no-run
#                   (the path it prints, target/release/deps/mf-HASH, copied as .gpu/mf-tests)
#   mf_train-tests  optional, likewise from tests/mf_train.rs (convergence, f16 vs f32)
# Writes logs and JSON lines into $OUT (default ./bench-out); ends with a summary table.
#   SHAPES=netflix WORKERS="6864 13728" WF_WORKERS="1024 4096" EPOCHS=20 PEER=0 CHECKS=1 \
#     benches/peers/mf_suite.sh          (about 5 minutes on an H200)
#   SHAPES=yahoo CHECKS=0 benches/peers/mf_suite.sh   (Yahoo!Music alone, a second job)
# CHECKS=0 skips steps 1 and 2.
# Steps (each skipped when its binary is missing):
#   1. tests/mf.rs on the GPU, --include-ignored (the wavefront schedule check included).
#   2. Coherence A/B with mf_reference. MovieLens-100K's shape, k = 32, 8/64/512/4096
#      workers: f32 with the CPU serial twin and lockstep simulation beside the GPU on the
#      same data, f16 GPU only, f32 GPU only without @coherent (--incoherent). Then a tenth
#      of Netflix's users and items (same density, 1.0M ratings), k = 128, 64/686/6864
#      workers, GPU only: f16, f32, f16 --incoherent; the CPU serial twin and lockstep
#      simulation of that data (run on the CPU machine) end at 0.4132 (f16) / 0.4239 (f32),
#      686 lockstep workers 0.4124 / 0.4226, noise floor 0.1127.
#   3. Netflix shape (480,190 × 17,771, 99.07M + 1.41M; λ 0.05, α 0.08, β 0.3), planted rank
#      16 from `wgsparse gen ratings` (its JSON gives the noise floor, passed to mf train):
#      batch-Hogwild! f16 and f32 at each of WORKERS, f16 without @coherent at the first
#      worker count, wavefront f16 at each of WF_WORKERS (column blocks 2 × workers).
#   4. Yahoo!Music shape (1,000,990 × 624,961, 252.8M + 4.0M; λ 1.0, β 0.2), two bands:
#      batch-Hogwild! f16 at the last of WORKERS.
#   PEER=1 also runs benches/peers/mf_cupy.py on the same files (f16 and f32).
#   NOISE=0.85 generates the ratings with that noise (gen ratings --noise; default 0.1).
#   YAHOO_LAMBDA=0.04 replaces the paper's λ = 1.0 for Yahoo!Music (whose ratings span 0–100;
#   the planted ratings span 1–5, so the paper's λ scaled by the range ratio is 0.04).
#   HOGWILD=0 skips the batch-Hogwild! runs on the Netflix shape (wavefront only).
#   ILP="1 2 4" runs the Netflix batch-Hogwild! f16 runs at each ILP × WORKERS (mf train --ilp:
#   samples a worker updates together; default 2), then f32 once at the fastest f16 (ILP,
#   workers); STAGE="0 1" runs each of those without (--no-stage) and with staged samples
#   (default 1: staged, as mf train);
#   REPEAT=3 repeats each f16 run (the rate must hold in every run); INCOHERENT=0 skips the
#   --incoherent run; REFERENCE=0 skips step 2 (keeps the tests of step 1).
#     SHAPES=netflix WORKERS="8448 16896" ILP="1 2 4" STAGE="0 1" WF_WORKERS="" CHECKS=1 REFERENCE=0 \
#       EPOCHS=20 benches/peers/mf_suite.sh
#   STREAMS="1 4 8" runs the wavefront at each of WF_WORKERS with each stream count (virtual
#   subgroups per worker sharing its block; default 1, the paper's scheme).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SHAPES=${SHAPES:-"netflix"}
CHECKS=${CHECKS:-1}
WORKERS=${WORKERS:-"6864 13728"}
WF_WORKERS=${WF_WORKERS-"1024 4096"}  # empty: no wavefront runs
EPOCHS=${EPOCHS:-20}
ILP=${ILP:-2}
REPEAT=${REPEAT:-1}
mkdir -p /tmp/mf
install_gl
use_wgsparse
export WGSPARSE_BIN=$PWD/.gpu/wgsparse
$W info >> "$OUT/log.txt" 2>&1

for t in mf mf_train; do
  if [ "$CHECKS" = 1 ] && [ -x .gpu/$t-tests ]; then
    log "tests/$t.rs on the GPU (--include-ignored)"
    timeout 300 ./.gpu/$t-tests --include-ignored --test-threads 1 >"$OUT/${t}_tests.txt" 2>&1 \
      || log "$t tests FAILED (exit $?): see ${t}_tests.txt"
    grep -E "^test |test result" "$OUT/${t}_tests.txt" | tee -a "$OUT/log.txt"
  fi
done

if [ "$CHECKS" = 1 ] && [ "${REFERENCE:-1}" = 1 ] && [ -x .gpu/mf_reference ]; then
  # MovieLens-100K's shape (as `mf train --gen small`), k = 32: the CPU lockstep simulation
  # beside the GPU, same data, same workers (the 22:30 diagnostics had 64 / 512 / 4,096 GPU
  # workers at 0.53 / 0.70 / 0.69 against 0.42 for 8; simulated here: 0.41 / 0.42 / 0.38).
  small() {
    log "mf_reference small $*"
    timeout 150 ./.gpu/mf_reference --users 943 --items 1682 --ratings 100000 --k 32 \
      --workers 8,64,512,4096 --epochs "$EPOCHS" --json "$@" \
      >>"$OUT/mf_reference.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?)"
  }
  small --precision f32
  small --precision f16 --no-cpu
  small --precision f32 --no-cpu --incoherent
  for run in "f16" "f32" "f16 --incoherent"; do
    set -- $run; prec=$1; coherence=${2:-}
    {
      log "mf_reference netflix/10 $prec ${coherence:-coherent}"
      timeout 120 ./.gpu/mf_reference --users 48019 --items 1777 --ratings 1004805 \
        --workers 64,686,6864 --epochs "$EPOCHS" --precision $prec --no-cpu --json $coherence \
        >>"$OUT/mf_reference.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?)"
    }
  done
fi

train() { # shape, floor, extra arguments…
  local shape=$1 floor=$2; shift 2
  log "mf $shape $*"
  timeout 240 $W mf train --train /tmp/mf/$shape.train.bin --test /tmp/mf/$shape.test.bin \
    --k 128 --epochs "$EPOCHS" --noise-floor "$floor" --json "$@" \
    >>"$OUT/mf.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?)"
}
for shape in $SHAPES; do
  case $shape in
    netflix) dims="--users 480190 --items 17771 --ratings 100480507 --test-fraction 0.0140166"; hp="--lambda 0.05 --alpha 0.08 --beta 0.3";;
    yahoo)   dims="--users 1000990 --items 624961 --ratings 256804235 --test-fraction 0.0155914"; hp="--lambda ${YAHOO_LAMBDA:-1.0} --alpha 0.08 --beta 0.2";;
    *) log "unknown shape $shape"; continue;;
  esac
  log "gen $shape"
  $W gen ratings $dims --rank 16 --seed 1 ${NOISE:+--noise $NOISE} --binary --train /tmp/mf/$shape.train.bin \
    --test /tmp/mf/$shape.test.bin --json >"$OUT/gen_$shape.json" 2>>"$OUT/log.txt" \
    || { log "gen FAILED"; continue; }
  floor=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['noise_floor'])" "$OUT/gen_$shape.json")
  log "$shape noise floor $floor"
  if [ "$shape" = netflix ]; then
    if [ "${HOGWILD:-1}" = 1 ]; then
      for ilp in $ILP; do
        for st in ${STAGE:-1}; do
          stage=--no-stage; [ "$st" = 1 ] && stage=--stage
          for w in $WORKERS; do
            for _ in $(seq "$REPEAT"); do
              train $shape "$floor" $hp --precision f16 --workers "$w" --ilp "$ilp" $stage
            done
          done
        done
      done
      # f32 at the fastest coherent f16 (ILP, workers) of the Netflix runs so far.
      best=$(python3 - "$OUT/mf.jsonl" <<'PY'
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rs = [r for r in rs if r["items"] < 100000 and r["scheme"] == "hogwild"
      and r["precision"] == "f16" and r.get("coherent")]
if rs:
    b = max(rs, key=lambda r: r["updates_per_s"])
    print(b.get("ilp", 1), b["workers"], "--stage" if b.get("stage") else "--no-stage")
PY
)
      if [ -n "$best" ]; then
        set -- $best
        train $shape "$floor" $hp --precision f32 --workers "$2" --ilp "$1" ${3:-}
      fi
      if [ "${INCOHERENT:-1}" = 1 ]; then
        first=${WORKERS%% *}
        train $shape "$floor" $hp --precision f16 --workers "$first" --incoherent
      fi
    fi
    for w in $WF_WORKERS; do
      for st in ${STREAMS:-1}; do
        train $shape "$floor" $hp --precision f16 --scheme wavefront --workers "$w" --streams "$st"
      done
    done
  else
    train $shape "$floor" $hp --precision f16 --workers "${WORKERS##* }"
  fi
  if [ "${PEER:-0}" = 1 ]; then
    log "peer $shape"
    python3 benches/peers/mf_cupy.py /tmp/mf/$shape.train.bin /tmp/mf/$shape.test.bin \
      --workers "${WORKERS// /,}" --precision f16,f32 --epochs "$EPOCHS" \
      $hp >>"$OUT/mf_peer.jsonl" 2>>"$OUT/log.txt" || log "peer FAILED"
  fi
  rm -f /tmp/mf/$shape.*.bin
done

python3 - "$OUT" <<'EOF' | tee "$OUT/summary.txt"
import json, os, sys
out = sys.argv[1]
def lines(name):
    p = os.path.join(out, name)
    return [json.loads(l) for l in open(p) if l.strip()] if os.path.exists(p) else []
print("mf_reference final test RMSE (netflix/10: CPU serial f16 0.4132 / f32 0.4239, floor 0.1127)")
for r in lines("mf_reference.jsonl"):
    finals = {k: round(v[-1], 4) for k, v in r["rmse"].items()}
    print(f"  {r['users']}x{r['items']} k{r['k']} {r['precision']} coherent={r['coherent']}: "
          f"{finals} floor {r['noise_floor']:.4f}")
print(f"{'shape':>8} {'scheme':>9} {'prec':>4} {'workers':>7} {'coh':>5} {'strm':>4} {'ilp':>3} {'stg':>3} {'G upd/s':>8} {'RMSE':>7} {'floor':>7} {'/floor':>6}")
for r in lines("mf.jsonl"):
    shape = "yahoo" if r["items"] > 100000 else "netflix"
    fl = r.get("noise_floor") or float("nan")
    rm = r.get("final_rmse") or float("nan")
    print(f"{shape:>8} {r['scheme']:>9} {r['precision']:>4} {r['workers']:>7} {str(r.get('coherent')):>5} "
          f"{r.get('streams', 1):>4} {r.get('ilp', 1):>3} {int(bool(r.get('stage'))):>3} "
          f"{r['updates_per_s']/1e9:8.3f} {rm:7.4f} {fl:7.4f} {rm/fl:6.3f}")
EOF
log "done"
