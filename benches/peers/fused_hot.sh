#!/usr/bin/env bash
# The sparse fused pattern at 500k × {200, 1,024, 4,096} (density 1%): `auto` (tuned afresh,
# fold on), the launch model's `fused` (full and, to split its time, `xty`: the scatter
# without the dot product), its hot copies (`--hot-cols 16|64` with w in workgroup memory),
# entries in registers (`--regs 2|4`), fewer longer-lived workgroups (the model's C × 4), and
# on sparse-4096 the sorted plans that hung before (`--wg 1024 --fold on`, with and without
# folded long rows; `--wg 512`, whose one-dispatch ending fits). Every run `--check`ed
# against the f64 twin. Run on the NVIDIA machine from the repository root with the release
# binary in .gpu/ and the Vulkan loader packages in .gl/ (as fused_fold.sh). Writes one JSON
# file per run under $OUT/runs, a log and $OUT/hot_table.md. About 5 minutes of GPU wall
# time with PEER=1 (the default), under 3 without.
#   INPUTS="sparse-200 sparse-1024 sparse-4096"
#   PEER=1          the peer compositions (fused_peer.py) on each input's export, same job
#   REPS=30         timed repetitions (median)
#   STEP_LIMIT=90   seconds any one step may take (a hang shows as "timed out" in the table)
#   SCALE=1         rows (and entries) of the generated inputs scaled by this
# With the test binaries .gpu/fused_hot_copies, .gpu/fused_regs and .gpu/fused_fold (from `cargo test
# --release --test fused_hot_copies --test fused_regs --test fused_fold --no-run`) it first runs them on the
# device (subgroups of 32, native atomics): $OUT/tests_*.txt.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-200 sparse-1024 sparse-4096"}
PEER=${PEER:-1}
REPS=${REPS:-30}
STEP_LIMIT=${STEP_LIMIT:-90}
SCALE=${SCALE:-1}
mkdir -p "$OUT/runs"
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
# A fresh tuning cache: `auto` times its candidates (hot copies among them) in this job.
job_cache --fresh
# run TAG INPUT ARGS…: one checked run of the pattern $PAT (default full), its JSON in
# runs/INPUT.TAG.json (rc in .rc).
run() {
  local tag=$1 g=$2
  shift 2
  log "$g $tag: $*"
  timeout "$STEP_LIMIT" $W fused --gen "$g" --scale "$SCALE" --pattern "${PAT:-full}" --check \
    --reps "$REPS" --json "$@" > "$OUT/runs/$g.$tag.json" 2>>"$OUT/log.txt"
  local rc=$?
  echo $rc > "$OUT/runs/$g.$tag.rc"
  [ $rc -eq 124 ] && log "$g $tag: timed out after ${STEP_LIMIT}s"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && log "$g $tag: exit $rc"
  return 0
}
for t in fused_hot_copies fused_regs fused_fold; do
  if [ -x ".gpu/$t" ]; then
    log "tests/$t on the device"
    WGSPARSE_BIN=$W timeout 180 "./.gpu/$t" > "$OUT/tests_$t.txt" 2>&1 \
      && log "tests/$t passed" || log "tests/$t FAILED (exit $?; see tests_$t.txt)"
  fi
done
for g in $INPUTS; do
  if [ "$PEER" = 1 ]; then
    log "peer $g"
    rm -rf "/tmp/fused/$g"
    timeout "$STEP_LIMIT" $W fused --gen "$g" --scale "$SCALE" --pattern full --variant fused \
      --reps 5 --export "/tmp/fused/$g" --json > /dev/null 2>>"$OUT/log.txt"
    timeout 150 python3 benches/peers/fused_peer.py "/tmp/fused/$g" --reps 20 \
      >> "$OUT/hot_peer.jsonl" 2>>"$OUT/log.txt" || log "peer $g: exit $?"
    rm -rf "/tmp/fused/$g"
  fi
  run auto "$g" --variant auto
  PAT=full,xty run fused "$g" --variant fused
  run hot16 "$g" --variant fused --hot-cols 16
  run hot64 "$g" --variant fused --hot-cols 64
  run regs2 "$g" --variant fused --regs 2
  run regs4 "$g" --variant fused --regs 4
  # Fewer, longer-lived workgroups: the model's C (rows per vector) quadrupled.
  c=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["results"][0]["measurement"]["config"]["rows_per_vector"])' \
    "$OUT/runs/$g.fused.json" 2>/dev/null)
  [ -n "$c" ] && run c4 "$g" --variant fused --c $((4 * c))
  if [ "$g" = sparse-4096 ]; then
    run hot64regs4 "$g" --variant fused --hot-cols 64 --regs 4
    [ -n "$c" ] && run c4hot64regs4 "$g" --variant fused --c $((4 * c)) --hot-cols 64 --regs 4
    # The plans that never finished before (timed out at 20 s): now the one at 1,024
    # invocations keeps the β·z pre-pass (its 48 KiB leave no room for the ending's flag).
    run sorted1024 "$g" --variant sorted --wg 1024 --fold on
    run sorted1024long "$g" --variant sorted --wg 1024 --fold on --long-row 1024
    run sorted512 "$g" --variant sorted --wg 512 --fold on
    run sorted1024off "$g" --variant sorted --wg 1024 --fold off
  fi
done
python3 - "$OUT" <<'EOF' | tee "$OUT/hot_table.md"
import glob, json, os, sys
out = sys.argv[1]
peer = {}
try:
    for line in open(os.path.join(out, "hot_peer.jsonl")):
        d = json.loads(line)
        if d.get("role") == "fastest":
            peer[d["input"]] = (d["ms"], d["peer"])
except FileNotFoundError:
    pass
print("| input | run | pattern | config | dispatches | µs | max rel err | ok | peer µs (which) | peer / ours |")
print("|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    name = os.path.basename(path)[:-5]
    g, tag = name.rsplit(".", 1)
    rc = open(path[:-5] + ".rc").read().strip() if os.path.exists(path[:-5] + ".rc") else "?"
    try:
        d = json.load(open(path))
    except Exception:
        print(f"| {g} | {tag} | — | — | — | {'timed out' if rc == '124' else 'failed'} (rc {rc}) | — | no | — | — |")
        continue
    base = g.split("@")[0]
    for r in d["results"]:
        m = r.get("measurement")
        if not m:
            print(f"| {g} | {tag} | {r['pattern']} | {r.get('error')} | — | — | — | no | — | — |")
            continue
        c = m["config"]
        desc = f"{c['variant']} vs={c['vs']} wg={c['workgroup']} c={c['rows_per_vector']} g={c['groups']}"
        desc += " wg-w" if c["workgroup_w"] else " global-w"
        if c["hot_cols"]:
            desc += f" hot={c['hot_cols']}"
        if c.get("regs"):
            desc += f" regs={c['regs']}"
        if c["tile"]:
            desc += f" tile={c['tile']}"
        if c["long_row"] != 4294967295:
            desc += f" long>{c['long_row']}"
        us = m["ms"] * 1e3
        p = peer.get(base) if r["pattern"] == "full" else None
        pc = f"{p[0] * 1e3:.1f} ({p[1]})" if p else "—"
        ratio = f"{p[0] * 1e3 / us:.2f}×" if p else "—"
        ok = "yes" if d["ok"] and rc == "0" else f"no (rc {rc})"
        print(f"| {g} | {tag} | {r['pattern']} | {desc} | {r['dispatches']} | {us:.1f} | {m['max_rel_error']:.1e} | {ok} | {pc} | {ratio} |")
EOF
log "done"
