#!/usr/bin/env bash
# Where async wide training's time per chunk goes, and which flow-kernel variant cuts it
# (issue 12). Run on the NVIDIA machine from the repository root with the release binary in
# .gpu/ and the Vulkan loader packages in .gl/ (as wide_suite.sh); about 5–6 minutes:
#   OUT=$OUT bash benches/peers/wide_async_diag.sh
# (DIAG=1 adds the timing-only switches of step 1 back; jobs 1–4 measured them.)
# Data: the criteo-s shape (`gen ctr --samples 5134149 --features 1000000 --nnz-per-sample
# 40 --seed 1`, the last 10% held out), generated once.
# 1. `wide sweep` (one process, the data chunked once per segment cut): LR, batch 1024, lr
#    0.5, async at its default chunking (64 samples × 4 lanes, 1024 persistent workgroups),
#    3 epochs per run (epoch_ms from timestamp queries; the median is reported), 2 passes
#    over the run list (interleaved, so drift shows):
#    - snapshot reads (`snapshot-reads`: parameters read from a read-only copy made before
#      each dispatch, no buffer bound twice) at 1, 4 and 16 rounds per dispatch (dispatches
#      of P · k chunks: 71, 18 and 5 per criteo-s epoch at P = 1,024; reads stale by at most
#      one dispatch, the step scale set for S = P · k · 64 / 1024), beside `default` and
#      `plain-reads`, also at 8 lanes;
#    - with DIAG=1, timing-only switches (`diag=…`, results NOT valid): without Apply, without
#      Aggregate, without the importance cache's copy, without the edge tile, without the
#      bias/loss tail, all of them (`fixed`: the schedule and metadata reads, Loss and the
#      barriers), with only the copies left, and without the storage barrier per chunk;
#    - candidates (each equals the f64 twin's steps in tests/wide_variant.rs): copies with 8
#      loads in flight (copy-ilp), Aggregate's edges before their parameters (agg-ilp),
#      Apply's work items 4 at a time (apply-ilp), the tail off invocation 0 (tail-spread), plain parameter reads (plain-reads), the cache
#      reloaded every 4 / 16 chunks (hot-every), hot segments cut at 16 edges (max-segment),
#      the cache off (cache=0, with atomic or plain reads), an edge tile of 3,072 words
#      (criteo-s chunks hold 64 × 40 = 2,560 edges, the default tile 2,048), and
#      combinations, also at 2 and 8 lanes per sample (workgroups of 128 and 512 on the
#      same chunks).
# 2. `wide train --check` (2 epochs) with the fastest valid LR candidate of step 1, and
#    with `--snapshot-reads` (4 rounds): validation logloss against the f64 twin's replay
#    (check_ok). Then `--snapshot-reads --async-in-flight 64` (3 epochs, no check): the step
#    scale of the default kernel's S with snapshot reads, to tell the scale's effect on the
#    logloss from the staleness's.
# 3. FM k = 10 async, 2 epochs, 1 pass: default, apply-ilp (FM's Apply has 11 work items
#    per segment), plain-reads, snapshot-reads and the combined candidates.
# Time limits per step (gen 75 s, LR sweep 180 s, checks 70 + 60 s, S = 64 run 35 s, FM 80 s, the PyTorch peer 60 s)
# bound it at 560 s (9.3 min) if every step ran to its limit, inside a 600-s device call.
# Summary: $OUT/wide_async_diag.md (per run: median ms per epoch in each pass, µs per
# chunk per workgroup = ms / (chunks / P), dispatches per epoch, S, validation logloss);
# raw lines in $OUT/wide_sweep.jsonl.
# Dry run elsewhere: DRY_RUN=1 skips installing .gl/ into /; SAMPLES / FEATURES shrink the
# data, PEER=0 skips the PyTorch peer, e.g.
#   DRY_RUN=1 SAMPLES=20000 FEATURES=5000 PEER=0 OUT=/tmp/a bash benches/peers/wide_async_diag.sh
# The summary is written even when steps fail (a missing step is named there).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
D=/tmp/wide/criteo_s
mkdir -p /tmp/wide
install_gl --dry-run
use_wgsparse
J="$OUT/wide_sweep.jsonl"
$W info --json > "$OUT/wide_info.json" 2>>"$OUT/log.txt"
log "gen criteo-s"
gen_ok=1
# SAMPLES / FEATURES shrink the data for a dry run elsewhere (the job uses the defaults).
timeout 75 $W gen ctr --samples "${SAMPLES:-5134149}" --features "${FEATURES:-1000000}" \
  --nnz-per-sample 40 --seed 1 --raw --out $D \
  --json >> "$OUT/wide_gen.jsonl" 2>>"$OUT/log.txt" || { log "gen FAILED: no runs"; gen_ok=0; }
ALL=copy-ilp,agg-ilp,apply-ilp,tail-spread,plain-reads
RUNS=(
  default
  plain-reads
  snapshot-rounds=1
  snapshot-reads
  snapshot-rounds=16
  lanes=8,plain-reads
  lanes=8,snapshot-reads
)
[ "${DIAG:-0}" = 1 ] && RUNS+=(
  diag=skip-apply
  diag=skip-aggregate
  diag=no-hot-copy
  diag=no-tile
  diag=skip-tail
  diag=fixed
  diag=skip-apply+skip-aggregate+skip-tail
  diag=no-storage-barrier
)
RUNS+=(
  copy-ilp
  agg-ilp
  apply-ilp
  tail-spread
  hot-every=4
  hot-every=16
  max-segment=16
  cache=0
  cache=0,plain-reads
  tile-words=3072
  copy-ilp,agg-ilp,apply-ilp
  $ALL
  hot-every=16,$ALL
  max-segment=16,$ALL
  cache=0,$ALL
  tile-words=3072,$ALL
  lanes=2,$ALL
  lanes=8,$ALL
)
if [ "$gen_ok" = 1 ]; then
args=()
for r in "${RUNS[@]}"; do args+=(--run "$r"); done
log "sweep lr async (${#RUNS[@]} runs × 2 passes × 3 epochs)"
timeout 180 $W wide sweep --model lr --train $D --holdout 0.1 --batch 1024 --lr 0.5 \
  --epochs 3 --passes 2 "${args[@]}" >> "$J" 2>>"$OUT/log.txt" || log "sweep lr FAILED (exit $?)"
BEST=$(python3 - "$J" <<'PY'
import json, os, statistics, sys
# The fastest run with valid results whose logloss is within 0.003 of the default's.
rs = []
if os.path.exists(sys.argv[1]):
    rs = [json.loads(line) for line in open(sys.argv[1]) if line.startswith("{")]
rs = [r for r in rs if r["model"] == "lr" and not r["diag"] and "error" not in r]
ref = [r["logloss"] for r in rs if r["run"] == "default"]
best = {}
for r in rs:
    if ref and r["logloss"] <= max(ref) + 0.003:
        best.setdefault(r["flags"], []).append(r["epoch_ms_median"])
if best:
    flags = min(best, key=lambda f: statistics.median(best[f]))
    print(flags if flags else "DEFAULT")
PY
)
log "check lr async with the fastest candidate: ${BEST:-none}"
if [ -n "$BEST" ]; then
  [ "$BEST" = DEFAULT ] && BEST=""
  # shellcheck disable=SC2086
  timeout 70 $W wide train --model lr --train $D --holdout 0.1 --no-early-stop --lr 0.5 \
    --epochs 2 --batch 1024 --async --check --json $BEST >> "$OUT/wide_check.jsonl" \
    2>>"$OUT/log.txt" || log "check FAILED (exit $?)"
fi
if [ "$BEST" != "--snapshot-reads" ]; then
  log "check lr async --snapshot-reads"
  timeout 60 $W wide train --model lr --train $D --holdout 0.1 --no-early-stop --lr 0.5 \
    --epochs 2 --batch 1024 --async --check --json --snapshot-reads \
    >> "$OUT/wide_check.jsonl" 2>>"$OUT/log.txt" || log "check snapshot FAILED (exit $?)"
fi
log "lr async --snapshot-reads --async-in-flight 64"
timeout 35 $W wide train --model lr --train $D --holdout 0.1 --no-early-stop --lr 0.5 \
  --epochs 3 --batch 1024 --async --json --snapshot-reads --async-in-flight 64 \
  >> "$OUT/wide_check.jsonl" 2>>"$OUT/log.txt" || log "snapshot S=64 FAILED (exit $?)"
log "sweep fm k=10 async"
timeout 80 $W wide sweep --model fm --k 10 --train $D --holdout 0.1 --batch 1024 --lr 0.5 \
  --epochs 2 --passes 1 --run default --run apply-ilp --run plain-reads --run snapshot-reads \
  --run "$ALL" \
  --run "cache=0,$ALL" --run "cache=0,${ALL/plain-reads/snapshot-reads}" \
  >> "$J" 2>>"$OUT/log.txt" || log "sweep fm FAILED (exit $?)"
if [ "${PEER:-1}" = 1 ]; then
  # The PyTorch peer on the same folder and split (issue 12's bars name it): LR, 2 epochs
  # (≈ 3.4 s each on an H200), the fastest of its two idioms; PEER=0 skips it.
  log "peer torch lr"
  timeout 60 python3 benches/peers/wide_torch.py $D --holdout 0.1 --batch 1024 --lr 0.5 \
    --epochs 2 --models lr >> "$OUT/wide_peer.jsonl" 2>>"$OUT/log.txt" || log "peer FAILED"
fi
fi
rm -rf $D
python3 - "$J" "$OUT/wide_check.jsonl" <<'PY' | tee "$OUT/wide_async_diag.md" | tee -a "$OUT/log.txt"
import json, os, statistics, sys
rows = {}
order = []
if not os.path.exists(sys.argv[1]):
    print(f"sweeps: no {sys.argv[1]} (see log.txt)")
for line in open(sys.argv[1]) if os.path.exists(sys.argv[1]) else []:
    if not line.startswith("{"):
        continue
    r = json.loads(line)
    key = (r["model"], r["run"])
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append(r)
print("| model | run | valid | lanes | hot | dispatches | S | pass medians ms/epoch | ms (median of passes) | µs/chunk/workgroup | logloss |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for key in order:
    rs = rows[key]
    r0 = rs[0]
    ok = [r for r in rs if "error" not in r]
    if not ok:
        print(f"| {key[0]} | {key[1]} | | | | | | error: {r0.get('error')} | | | |")
        continue
    meds = [r["epoch_ms_median"] for r in ok]
    med = statistics.median(meds)
    chunks = -(-r0["n_train"] // r0["chunk"])
    per_wg = chunks / r0["async_groups"] if not r0["sync"] else 1
    us = 1e3 * med / per_wg
    ll = ok[-1].get("logloss")
    ll = "-" if ll is None else f"{ll:.5f}"
    valid = "yes" if r0["valid_result"] else "NO (timing only)"
    passes = " / ".join(f"{m:.2f}" for m in meds)
    print(f"| {key[0]} | {key[1]} | {valid} | {r0['lanes']} | {r0['hot_features']} | "
          f"{r0.get('dispatches', '-')} | {r0['in_flight']:.0f} | {passes} | "
          f"{med:.2f} | {us:.1f} | {ll} |")
print()
seen = set()
for key in order:
    r0 = rows[key][0]
    if r0["model"] not in seen:
        seen.add(r0["model"])
        print(f"{r0['model']}: chunk {r0['chunk']}, P = {r0['async_groups']}, "
              f"S = {r0['in_flight']:.1f}, setup {r0['setup_s']:.1f} s, {r0['device']}")
if os.path.exists(sys.argv[2]):
    for line in open(sys.argv[2]):
        if not line.startswith("{"):
            continue
        c = json.loads(line)
        print(f"train ({c.get('variant')}, S = {c.get('in_flight')}, {c.get('dispatches')} "
              f"dispatches): epoch {c['epoch_ms_median']:.2f} ms, "
              f"logloss {c['logloss']:.5f}, f64 twin {c.get('cpu_logloss')}, "
              f"check_ok {c.get('check_ok')}, variant {c.get('variant')}, lanes {c.get('lanes')}, "
              f"hot features {c.get('hot_features')}")
PY
[ -s "$OUT/wide_peer.jsonl" ] && python3 - "$OUT/wide_peer.jsonl" <<'PY' | tee -a "$OUT/wide_async_diag.md"
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "epoch_ms_median" in r:
        print(f"peer torch: {json.dumps({k: v for k, v in r.items() if k != 'epochs'})}")
PY
log "done"
