#!/usr/bin/env bash
# The column-split variant (`--variant split`: row scales p by CSR rows, then Xᵀp over row
# tiles sorted by column, one add per run of a column in a subgroup) beside `auto` (tuned
# afresh: split is among its candidates) and the launch model's `fused`, at 500k ×
# {1,024, 4,096, 200} (density 1%), patterns full and xty. Split at the model's row tile
# (4,096 rows; the 16-bit layout: 6 bytes per entry in the scatter), with 32-bit keys
# (`--key16 off`, 8 bytes), at 1,024 invocations, and (n = 4,096) without subgroups (32-bit
# keys, one add per run within an invocation's 8 entries); `auto` times the other row tiles
# (2,048 and 16,384) and row-pass settings. Every run `--check`ed against the f64 twin. Run
# on the NVIDIA machine from the repository root with the release binary in .gpu/ and the
# Vulkan loader packages in .gl/ (as fused_hot.sh). Writes one JSON file per run under
# $OUT/runs, a log and $OUT/split_table.md. About 5 minutes of GPU wall time with PEER=1
# (the default), under 4 without.
#   INPUTS="sparse-1024 sparse-4096 sparse-200"   (the bars first)
#   PEER=1          the peer compositions (fused_peer.py) on each input's export, same job
#   REPS=30         timed repetitions (median)
#   STEP_LIMIT=150  seconds any one step may take (a hang shows as "timed out" in the table)
#   SCALE=1         rows (and entries) of the generated inputs scaled by this
# With the test binary .gpu/fused_split (from `cargo test --release --test fused_split
# --no-run`) it first runs it on the device (subgroups of 32, native atomics):
# $OUT/tests_fused_split.txt.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-1024 sparse-4096 sparse-200"}
PEER=${PEER:-1}
REPS=${REPS:-30}
STEP_LIMIT=${STEP_LIMIT:-150}
SCALE=${SCALE:-1}
mkdir -p "$OUT/runs"
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
# A fresh tuning cache: `auto` times its candidates (split among them) in this job.
job_cache --fresh
# run TAG INPUT ARGS…: one checked run of the patterns $PAT (default full), its JSON in
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
if [ -x .gpu/fused_split ]; then
  log "tests/fused_split on the device"
  WGSPARSE_BIN=$W timeout 180 ./.gpu/fused_split > "$OUT/tests_fused_split.txt" 2>&1 \
    && log "tests/fused_split passed" || log "tests/fused_split FAILED (exit $?; see tests_fused_split.txt)"
fi
for g in $INPUTS; do
  if [ "$PEER" = 1 ]; then
    log "peer $g"
    rm -rf "/tmp/fused/$g"
    timeout "$STEP_LIMIT" $W fused --gen "$g" --scale "$SCALE" --pattern full --variant fused \
      --reps 5 --export "/tmp/fused/$g" --json > /dev/null 2>>"$OUT/log.txt"
    timeout 150 python3 benches/peers/fused_peer.py "/tmp/fused/$g" --reps 20 \
      >> "$OUT/split_peer.jsonl" 2>>"$OUT/log.txt" || log "peer $g: exit $?"
    rm -rf "/tmp/fused/$g"
  fi
  # One X for auto (tuned here), split at the model's row tile and the model's fused.
  PAT=full,xty run main "$g" --variant auto,split,fused
  run key32 "$g" --variant split --key16 off
  run wg1024 "$g" --variant split --wg 1024
  [ "$g" = sparse-4096 ] && run nosg "$g" --variant split --no-subgroups
done
python3 - "$OUT" <<'PY' | tee "$OUT/split_table.md"
import glob, json, os, sys
out = sys.argv[1]
peer = {}
try:
    for line in open(os.path.join(out, "split_peer.jsonl")):
        d = json.loads(line)
        if d.get("role") == "fastest":
            peer[d["input"]] = (d["ms"], d["peer"])
except FileNotFoundError:
    pass
print("| input | run | pattern | variant | config | dispatches | µs | adds / entries (chunks) | max rel err | ok | peer µs (which) | peer / ours |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for path in sorted(glob.glob(os.path.join(out, "runs", "*.json"))):
    name = os.path.basename(path)[:-5]
    g, tag = name.rsplit(".", 1)
    rc = open(path[:-5] + ".rc").read().strip() if os.path.exists(path[:-5] + ".rc") else "?"
    try:
        d = json.load(open(path))
    except Exception:
        print(f"| {g} | {tag} | — | — | — | — | {'timed out' if rc == '124' else 'failed'} (rc {rc}) | — | — | no | — | — |")
        continue
    for r in d["results"]:
        m = r.get("measurement")
        if not m:
            print(f"| {g} | {tag} | {r['pattern']} | {r['variant']} | {r.get('error')} | — | — | — | — | no | — | — |")
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
        if c.get("row_tile"):
            desc += f" row-tile={c['row_tile']}"
            desc += " seg" if c["segmented"] else " no-sg"
            desc += " key16" if c.get("key16") else " key32"
        if c["long_row"] != 4294967295:
            desc += f" long>{c['long_row']}"
        sa = r.get("split_adds")
        adds = f"{sa['adds'] / max(sa['entries'], 1):.3f} ({sa['chunks']})" if sa else "—"
        us = m["ms"] * 1e3
        p = peer.get(g) if r["pattern"] == "full" else None
        pc = f"{p[0] * 1e3:.1f} ({p[1]})" if p else "—"
        ratio = f"{p[0] * 1e3 / us:.2f}×" if p else "—"
        ok = "yes" if d["ok"] and rc == "0" else f"no (rc {rc})"
        print(f"| {g} | {tag} | {r['pattern']} | {r['variant']} | {desc} | {r['dispatches']} | {us:.1f} | {adds} | {m['max_rel_error']:.1e} | {ok} | {pc} | {ratio} |")
PY
log "done"
