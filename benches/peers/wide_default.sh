#!/usr/bin/env bash
# Async wide training's default (issue 12's bars: LR ≤ 2 ms per epoch, FM k = 10 ≤ 10 ms,
# validation logloss within 0.003 of the f64 twin) against the old default, with the
# PyTorch peer in the same job. Run on the NVIDIA machine from the repository root with the
# release binary in .gpu/ and the Vulkan loader packages in .gl/ (as wide_suite.sh):
#   OUT=$OUT bash benches/peers/wide_default.sh
# Data: the criteo-s shape (`gen ctr --samples 5134149 --features 1000000 --nnz-per-sample
# 40 --seed 1`, the last 10% held out), batch 1024, lr 0.5, async, 1,024 persistent
# workgroups.
# 1. LR `wide sweep` (3 epochs per run, 2 interleaved passes; the sweep's base is the new
#    default's, so its divergence guard is on for plain-read runs and its epoch-start copy
#    is timed): `lanes=4` (the old default: atomic reads, 4 lanes), `plain-reads` (the new
#    default: plain reads, 8 lanes), `lanes=4,plain-reads` (plain reads as first measured),
#    `lanes=16,plain-reads` (chunks of 64 × 16 = 1,024 invocations).
# 2. `wide train --async --check` (2 epochs, the new default as users get it): check_ok,
#    redone epochs, reads.
# 3. FM k = 10 `wide sweep` (2 epochs, 1 pass): `lanes=4` (old default: atomic reads, the
#    cost rule's cache), `lanes=4,cache=0,ALL` (the new FM default: plain reads, cache off,
#    every per-chunk variant), `lanes=8,cache=0,ALL`, `lanes=4,cache=0,plain-reads`,
#    `lanes=2,cache=0,ALL`. FM now keeps k + 2 Accums per sample (12 at k = 10, 21 in the
#    sixth measurements' 26.4 / 14.2 ms), so `lanes=4` here is the old default's settings,
#    not its kernel.
# 4. `wide train --model fm --k 10 --async --check` (2 epochs, the new default).
# 5. The PyTorch peer (`wide_torch.py`, EmbeddingBag + sparse SGD, the fastest idiom in
#    the sixth measurements), LR and FM k = 10, 2 epochs; PEER=0 skips it.
# Time limits: gen 75 s, LR sweep 60 s, LR check 70 s, FM sweep 80 s, FM check 120 s, peer
# 75 s: 480 s (8 min) if every step ran to its limit.
# Summary: $OUT/wide_default.md; raw lines in $OUT/wide_default_sweep.jsonl,
# $OUT/wide_default_check.jsonl and $OUT/wide_default_peer.jsonl.
# QUICK=1 (limits 402 s in all; the FM check 120 s: 60 s cut it on the H200): Apply edge
# by edge (`edge-apply`), no fence between a workgroup's chunks (`no-fence`), the guard's
# copy by a dispatch (`kernel-copies`) and plain writes of the cold features
# (`plain-writes`, not measured before) against the current default, where the
# epoch's time goes, and the PyTorch peer in both idioms.
# 1. LR sweep (3 epochs, 2 passes): `plain-reads` (the default), `plain-reads,edge-apply`
#    (segments kept for the cost rule's 232 features), `…,no-fence` (no storage barrier
#    between a workgroup's chunks), `…,edge-apply,no-fence`, `…,kernel-copies` (the
#    guard's epoch-start copy by a dispatch), `…,plain-writes` (Apply's cold features
#    without atomics: on criteo-s features ≈ 102,000.., ≈ 17% of a chunk's segments),
#    `…,plain-writes=187` (≈ the step scale's bound: ≈ 86% of them plain) and
#    `…,plain-writes=4096` (between), `…,edge-apply,no-fence,kernel-copies`,
#    `…,edge-apply,tail-spread` (the chunk's tail sums on the last invocations, which
#    edge-apply leaves without segments, beside feature 0's walk on invocation 0),
#    `…,cache=4096`, `…,edge-apply,cache=4096` (the importance cache past the cost rule's
#    232: a coalesced 16 KB copy per chunk against ≈ 590 gathers),
#    `plain-reads,no-read-guard`, `…,edge-apply,no-read-guard`; where the time goes (the
#    guard off, against `plain-reads,no-read-guard`; timing only, results not valid but
#    `no-tile`): `diag=skip-apply`, `skip-aggregate`, `no-tile`, `skip-tail`,
#    `fixed` (all five: the copies of the tile and cache, Aggregate, Apply and the tail
#    dropped, leaving the chunk loop, the index loads and the Loss) and
#    `edge-apply,diag=skip-apply`.
# 2. `wide train --check` (1 epoch) with the flags of the fastest valid LR run with the
#    guard on.
# 3. FM k = 10 sweep (2 epochs, 1 pass): `lanes=4,cache=0,plain-reads` (the default), with
#    `edge-apply`, `no-fence`, `kernel-copies` (the guard's 44 MB copy by a dispatch),
#    `plain-writes`, `plain-writes=187`, `plain-writes=4096`,
#    `edge-apply,no-fence,kernel-copies`, `edge-apply=1024`, `lanes=8` + `edge-apply`, and
#    the default with `diag=skip-apply` (timing only).
# 4. `wide train --model fm --k 10 --check` (1 epoch) with the fastest valid FM run's flags.
# 5. The PyTorch peer (`wide_torch.py`), LR and FM k = 10, both idioms (EmbeddingBag +
#    sparse SGD, torch.sparse.mm on CSR), 1 epoch each, one process; the script names the
#    fastest idiom per model. PEER=0 skips it.
# LR_RUNS / FM_RUNS (quick mode): the sweeps' runs instead of the lists above, separated by
# spaces (the checks then take the fastest valid of those), e.g.
# LR_RUNS="plain-reads,kernel-copies plain-reads,kernel-copies,apply-ilp".
# LR_LIMIT, LR_CHECK_LIMIT, FM_LIMIT, FM_CHECK_LIMIT (quick mode): those steps' limits in
# seconds instead of the ones below (longer run lists need them).
# Limits: gen 50 s, LR sweep 70 s, LR check 30 s, FM sweep 40 s, FM check 120 s (the f64
# twin's FM epoch on the host), peer 60 s.
# Dry run elsewhere (lavapipe): DRY_RUN=1 skips installing .gl/; SAMPLES / FEATURES shrink
# the data; BIN names the binary, e.g.
#   DRY_RUN=1 SAMPLES=20000 FEATURES=5000 PEER=0 BIN=target/release/wgsparse OUT=/tmp/a \
#     bash benches/peers/wide_default.sh
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
D=/tmp/wide/criteo_s
mkdir -p /tmp/wide
install_gl --dry-run
use_wgsparse BIN
J="$OUT/wide_default_sweep.jsonl"
C="$OUT/wide_default_check.jsonl"
$W info --json > "$OUT/wide_info.json" 2>>"$OUT/log.txt"
ALL=copy-ilp,agg-ilp,apply-ilp,tail-spread,plain-reads
COMMON=(--train $D --holdout 0.1 --batch 1024 --lr 0.5)
log "gen criteo-s"
if [ "${QUICK:-0}" = 1 ]; then GEN_LIMIT=50; else GEN_LIMIT=75; fi
# The flags of the sweep's fastest valid run with the guard on (median over passes) of model $1 (a sweep's
# model name: lr, fm10); none when the sweep wrote nothing.
fastest() {
  python3 - "$J" "$1" <<'PY'
import json, statistics, sys
runs = {}
for l in open(sys.argv[1]):
    if not l.startswith("{"):
        continue
    r = json.loads(l)
    # Candidates for the default: valid results, the divergence guard on.
    if (r["model"] != sys.argv[2] or "error" in r or not r["valid_result"] or r["diag"]
            or "--no-read-guard" in r["flags"]):
        continue
    runs.setdefault(r["run"], []).append(r)
if runs:
    best = min(runs.values(), key=lambda rs: statistics.median(x["epoch_ms_median"] for x in rs))
    print(best[0]["flags"])
PY
}
# `--run R` for each run R given (runs hold no spaces).
runs() {
  for r in "$@"; do printf -- '--run %s ' "$r"; done
}
if timeout $GEN_LIMIT $W gen ctr --samples "${SAMPLES:-5134149}" --features "${FEATURES:-1000000}" \
  --nnz-per-sample 40 --seed 1 --raw --out $D --json >> "$OUT/wide_gen.jsonl" \
  2>>"$OUT/log.txt"; then
 if [ "${QUICK:-0}" = 1 ]; then
  P=plain-reads
  # The breakdown's runs without the divergence guard: a timing-only run's loss may rise,
  # and the guard would train its epochs again.
  N=plain-reads,no-read-guard
  LR_RUNS=${LR_RUNS:-"$P $P,edge-apply $P,no-fence $P,edge-apply,no-fence $P,kernel-copies
    $P,plain-writes $P,plain-writes=187 $P,plain-writes=4096 $P,edge-apply,no-fence,kernel-copies
    $P,edge-apply,tail-spread $P,cache=4096 $P,edge-apply,cache=4096 $P,no-read-guard
    $P,edge-apply,no-read-guard $N,diag=skip-apply $N,diag=skip-aggregate $N,diag=no-tile
    $N,diag=skip-tail $N,diag=fixed $N,edge-apply,diag=skip-apply"}
  log "quick: sweep lr"
  timeout ${LR_LIMIT:-86} $W wide sweep --model lr "${COMMON[@]}" --epochs 3 --passes 2 $(runs $LR_RUNS) \
    >> "$J" 2>>"$OUT/log.txt" || log "sweep lr FAILED (exit $?)"
  F=$(fastest lr)
  log "quick: check lr, fastest valid run's flags: $F"
  timeout ${LR_CHECK_LIMIT:-30} $W wide train --model lr "${COMMON[@]}" --async --no-early-stop --epochs 1 \
    $F --check --json >> "$C" 2>>"$OUT/log.txt" || log "check lr FAILED (exit $?)"
  log "quick: sweep fm k=10"
  Q=lanes=4,cache=0,plain-reads
  FM_RUNS=${FM_RUNS:-"$Q $Q,edge-apply $Q,no-fence $Q,kernel-copies $Q,plain-writes
    $Q,plain-writes=187 $Q,plain-writes=4096 $Q,edge-apply,no-fence,kernel-copies
    $Q,edge-apply=1024 lanes=8,cache=0,plain-reads,edge-apply $Q,diag=skip-apply"}
  timeout ${FM_LIMIT:-56} $W wide sweep --model fm --k 10 "${COMMON[@]}" --epochs 2 --passes 1 \
    $(runs $FM_RUNS) >> "$J" 2>>"$OUT/log.txt" || log "sweep fm FAILED (exit $?)"
  F=$(fastest fm10)
  log "quick: check fm k=10, fastest valid run's flags: $F"
  timeout ${FM_CHECK_LIMIT:-120} $W wide train --model fm --k 10 "${COMMON[@]}" --async --no-early-stop \
    --epochs 1 $F --check --json >> "$C" 2>>"$OUT/log.txt" || log "check fm FAILED (exit $?)"
  if [ "${PEER:-1}" = 1 ]; then
    log "quick: peer torch lr, fm10, both idioms, 1 epoch"
    timeout 60 python3 benches/peers/wide_torch.py $D --holdout 0.1 --batch 1024 --lr 0.5 \
      --epochs 1 --models lr,fm10 --idioms embbag,spmm >> "$OUT/wide_default_peer.jsonl" \
      2>>"$OUT/log.txt" || log "peer FAILED (exit $?)"
  fi
 else
  log "sweep lr"
  timeout 60 $W wide sweep --model lr "${COMMON[@]}" --epochs 3 --passes 2 \
    --run lanes=4 --run plain-reads --run lanes=4,plain-reads --run lanes=16,plain-reads \
    >> "$J" 2>>"$OUT/log.txt" || log "sweep lr FAILED (exit $?)"
  log "check lr (new default)"
  timeout 70 $W wide train --model lr "${COMMON[@]}" --async --no-early-stop --epochs 2 \
    --check --json >> "$C" 2>>"$OUT/log.txt" || log "check lr FAILED (exit $?)"
  log "sweep fm k=10"
  timeout 80 $W wide sweep --model fm --k 10 "${COMMON[@]}" --epochs 2 --passes 1 \
    --run lanes=4 --run "lanes=4,cache=0,$ALL" --run "lanes=8,cache=0,$ALL" \
    --run lanes=4,cache=0,plain-reads --run "lanes=2,cache=0,$ALL" >> "$J" 2>>"$OUT/log.txt" || log "sweep fm FAILED (exit $?)"
  log "check fm k=10 (new default)"
  timeout 120 $W wide train --model fm --k 10 "${COMMON[@]}" --async --no-early-stop \
    --epochs 2 --check --json >> "$C" 2>>"$OUT/log.txt" || log "check fm FAILED (exit $?)"
  if [ "${PEER:-1}" = 1 ]; then
    log "peer torch lr, fm10"
    timeout 75 python3 benches/peers/wide_torch.py $D --holdout 0.1 --batch 1024 --lr 0.5 \
      --epochs 2 --models lr,fm10 --idioms embbag >> "$OUT/wide_default_peer.jsonl" \
      2>>"$OUT/log.txt" || log "peer FAILED (exit $?)"
  fi
 fi
else
  log "gen FAILED: no runs"
fi
rm -rf $D
python3 - "$J" "$C" "$OUT/wide_default_peer.jsonl" <<'PY' | tee "$OUT/wide_default.md" | tee -a "$OUT/log.txt"
import json, os, statistics, sys

def lines(path):
    if not os.path.exists(path):
        print(f"(no {path}: see log.txt)")
        return []
    return [json.loads(l) for l in open(path) if l.startswith("{")]

rows, order = {}, []
for r in lines(sys.argv[1]):
    key = (r["model"], r["run"])
    if key not in rows:
        rows[key] = []
        order.append(key)
    rows[key].append(r)
print("| model | run | lanes | hot | segmented | ms/epoch per pass | median | logloss | redone | setup s |")
print("|---|---|---|---|---|---|---|---|---|---|")
for key in order:
    ok = [r for r in rows[key] if "error" not in r]
    if not ok:
        print(f"| {key[0]} | {key[1]} | | | | error: {rows[key][0].get('error')} | | | | |")
        continue
    meds = [r["epoch_ms_median"] for r in ok]
    r0 = ok[-1]
    valid = "" if r0.get("valid_result", True) else " (timing only)"
    print(f"| {key[0]} | {key[1]}{valid} | {r0['lanes']} | {r0['hot_features']} | "
          + f"{r0.get('segment_features')} | "
          + " / ".join(f"{m:.2f}" for m in meds)
          + f" | {statistics.median(meds):.2f} | {r0['logloss']:.5f} | "
          + f"{sum(r.get('redone_epochs', 0) for r in ok)} | {r0.get('setup_s', 0):.1f} |")
print()
for c in lines(sys.argv[2]):
    print(f"check {c['model']} (reads {c.get('reads')}, variant {c.get('variant')}, lanes "
          f"{c.get('lanes')}, hot {c.get('hot_features')}): epochs "
          + " / ".join(f"{e['epoch_ms']:.2f}" for e in c["epochs"])
          + f" ms, logloss {c['logloss']:.5f}, f64 twin {c.get('cpu_logloss')}, "
          f"check_ok {c.get('check_ok')}, redone epochs {c.get('redone_epochs')}")
for p in lines(sys.argv[3]) if os.path.exists(sys.argv[3]) else []:
    if "epoch_ms_median" in p or "error" in p:
        print(f"peer torch: {json.dumps({k: v for k, v in p.items() if k != 'epochs'})}")
PY
log "done"
