#!/usr/bin/env bash
# Async LR with the feature-sorted slots packed (`slot16`, `slot8`) at three chunkings, the
# fastest checked against the f64 twin, and the PyTorch peer in the same job (issue 12's LR
# bar: ≤ 2 ms per epoch, validation logloss within 0.003 of the twin). Run on the NVIDIA
# machine from the repository root with the release binary in .gpu/ and the Vulkan loader
# packages in .gl/ (../shared/GPU.md):
#   OUT=$OUT bash benches/peers/wide_slots.sh
# Data: the criteo-s shape (`gen ctr --samples 5134149 --features 1000000 --nnz-per-sample
# 40 --seed 1`, the last 10% held out), batch 1024, lr 0.5, async, persistent workgroups as
# the library caps them (epoch chunks / 64, the GPU's resident ones), plain reads and the
# guard's copy by a dispatch (P below; a run's slots are 32-bit unless it packs them).
# 1. `wide sweep` per chunking (3 epochs, 2 passes): the former default 64 × 8 (P, P+slot16,
#    P+slot8), 128 × 4 and 256 × 2 (the same three; 256 × 2 also P+slot8 with a 1,024-word
#    tile). Async LR's default is P+slot8 at 256 × 4.
# 2. `wide train --async --check` (2 epochs) at the fastest chunking and run of step 1.
# 3. The PyTorch peer (`wide_torch.py`, EmbeddingBag + sparse SGD), LR, 2 epochs. PEER=0
#    skips it.
# SWEEPS replaces step 1's list: one sweep per line, `chunk lanes run …`, each run a `wide
# sweep --run`, a leading `P` standing for the default flags, e.g.
#   SWEEPS=$'256 2 P,slot8 P,slot8,agg-ilp\n512 1 P,slot16,tile-words=4096'
# Limits: gen 75 s, each sweep STEP_LIMIT (150 s), check 60 s, peer 75 s. On the H100
# machine each run of a sweep costs 10–20 s beside its epochs (the data chunked, the
# pipelines built) and gen 5 s: a sweep of 4–5 runs × 2 passes outgrows 60 s. Raw lines in $OUT/wide_slots_*.jsonl, the summary
# in $OUT/wide_slots.md.
# Dry run elsewhere (lavapipe): DRY_RUN=1 skips installing .gl/; SAMPLES / FEATURES shrink
# the data; BIN names the binary, e.g.
#   DRY_RUN=1 SAMPLES=20000 FEATURES=5000 PEER=0 BIN=target/release/wgsparse OUT=/tmp/s \
#     bash benches/peers/wide_slots.sh
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# Log lines to the job's stdout even from inside a sweep's pipe into the JSON lines.
exec 3>&1
LOG_FD=3
D=/tmp/wide/criteo_s_slots
mkdir -p /tmp/wide
install_gl --dry-run
use_wgsparse BIN
J="$OUT/wide_slots_sweep.jsonl"
C="$OUT/wide_slots_check.jsonl"
COMMON=(--train $D --holdout 0.1 --batch 1024 --lr 0.5)
P=plain-reads,kernel-copies
STEP_LIMIT=${STEP_LIMIT:-150}
SWEEPS=${SWEEPS:-"64 8 P P,slot16 P,slot8
128 4 P P,slot16 P,slot8
256 2 P P,slot16 P,slot8 P,slot8,tile-words=1024"}
log "gen criteo-s"
step $W gen ctr --samples "${SAMPLES:-5134149}" --features "${FEATURES:-1000000}" \
  --nnz-per-sample 40 --seed 1 --raw --out $D --json >> "$OUT/wide_slots_gen.jsonl" 2>>"$OUT/log.txt"
while read -r chunk lanes runs; do
  [ -n "$chunk" ] || continue
  args=()
  for r in $runs; do
    args+=(--run "${r/#P/$P}")
  done
  log "sweep lr, chunks of $chunk × $lanes"
  step $W wide sweep --model lr "${COMMON[@]}" --epochs 3 --passes 2 --max-chunk "$chunk" \
    --lanes "$lanes" "${args[@]}" 2>>"$OUT/log.txt" </dev/null \
    | sed "s/^{/{\"sweep_chunk\":$chunk,/" >> "$J"
done <<< "$SWEEPS"
# The fastest valid run: its chunk, lanes and flags.
read -r CHUNK LANES FLAGS < <(python3 - "$J" <<'PY'
import json, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    try:
        r = json.loads(l)
    except json.JSONDecodeError:  # a line cut by a step's time limit
        continue
    if "error" not in r and r["valid_result"]:
        runs.setdefault((r["sweep_chunk"], r["lanes"], r["flags"]), []).append(r["epoch_ms_median"])
if runs:
    (c, lanes, flags), _ = min(runs.items(), key=lambda kv: statistics.median(kv[1]))
    print(c, lanes, flags)
PY
)
if [ -n "${CHUNK:-}" ]; then
  log "check lr: chunks of $CHUNK × $LANES, $FLAGS"
  # shellcheck disable=SC2086  # the flags are words
  STEP_LIMIT=60 step $W wide train --model lr "${COMMON[@]}" --async --no-early-stop --epochs 2 \
    --max-chunk "$CHUNK" --lanes "$LANES" $FLAGS --check --json >> "$C" 2>>"$OUT/log.txt"
fi
if [ "${PEER:-1}" = 1 ]; then
  log "peer torch lr"
  step python3 benches/peers/wide_torch.py $D --holdout 0.1 --batch 1024 --lr 0.5 --epochs 2 \
    --models lr --idioms embbag >> "$OUT/wide_slots_peer.jsonl" 2>>"$OUT/log.txt"
fi
rm -rf $D
python3 - "$J" "$C" "$OUT/wide_slots_peer.jsonl" <<'PY' | tee "$OUT/wide_slots.md"
import json, os, statistics, sys

def lines(path):
    out = []
    for l in open(path) if os.path.exists(path) else []:
        try:
            out.append(json.loads(l))
        except json.JSONDecodeError:  # a line cut by a step's time limit
            pass
    return out

rows = {}
for r in lines(sys.argv[1]):
    rows.setdefault((r["sweep_chunk"], r["lanes"], r["run"]), []).append(r)
print("| chunk × lanes | run | ms/epoch per pass | median | logloss |")
print("|---|---|---|---|---|")
for (c, lanes, run), rs in rows.items():
    ok = [r for r in rs if "error" not in r]
    if not ok:
        print(f"| {c} × {lanes} | {run} | error: {rs[0].get('error')} | | |")
        continue
    meds = [r["epoch_ms_median"] for r in ok]
    print(f"| {c} × {lanes} | {run} | " + " / ".join(f"{m:.3f}" for m in meds)
          + f" | {statistics.median(meds):.3f} | {ok[-1]['logloss']:.5f} |")
for c in lines(sys.argv[2]):
    print(f"\ncheck: epochs " + " / ".join(f"{e['epoch_ms']:.3f}" for e in c["epochs"])
          + f" ms, logloss {c['logloss']:.5f}, f64 twin {c.get('cpu_logloss')}, check_ok {c.get('check_ok')}")
for p in lines(sys.argv[3]):
    print(f"peer torch: {json.dumps({k: v for k, v in p.items() if k != 'epochs'})}")
PY
log "done"
