#!/usr/bin/env bash
# The folded sequence against the separate passes (`wgsparse fused --fold on|off`): run on the
# NVIDIA machine from the repository root with the release binary in .gpu/ and the Vulkan
# loader packages in .gl/ (as fused_suite.sh). Writes JSON lines, a log and a table into $OUT
# (default ./bench-out). Under 3 minutes of GPU wall time with the defaults.
#   INPUTS="sparse-200 sparse-1024 sparse-4096"
#   PATTERNS="full,xty"
#   VARIANTS="auto,fused,sorted"   auto is tuned once (fold on) and cached; the fold-off run
#                                  reads the same cached configuration, so the two differ only
#                                  in the sequence
#   REPS=50                        timed repetitions (median)
#   PEER=0                         1: also time the peer compositions on each input's export
#                                  (fused_peer.py; about a minute more per input)
#   STEP_LIMIT=150                 seconds any one step may take
#   SCALE=1                        rows (and entries) of the generated inputs scaled by this
# Every run is checked against the f64 twin (--check: the first run and the last timed one);
# `dispatches` is the count each plan records, so the table shows which inputs the fold
# changed. With the test binary at .gpu/fused_fold (copied from `cargo test --release --test
# fused_fold --no-run`'s path) it first runs those tests on the device (subgroups of 32,
# native atomics, the one-dispatch ending's last-workgroup count on a real GPU):
# $OUT/fold_tests.txt.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-200 sparse-1024 sparse-4096"}
PATTERNS=${PATTERNS:-"full,xty"}
VARIANTS=${VARIANTS:-"auto,fused,sorted"}
REPS=${REPS:-50}
PEER=${PEER:-0}
STEP_LIMIT=${STEP_LIMIT:-150}
SCALE=${SCALE:-1}
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
job_cache
if [ -x .gpu/fused_fold ]; then
  log "tests/fused_fold on the device"
  WGSPARSE_BIN=$W timeout 120 ./.gpu/fused_fold > "$OUT/fold_tests.txt" 2>&1 \
    && log "tests passed" || log "tests FAILED (exit $?; see fold_tests.txt)"
fi
for g in $INPUTS; do
  if [ "$PEER" = 1 ]; then
    log "peer $g"
    rm -rf "/tmp/fused/$g"
    step $W fused --gen "$g" --scale "$SCALE" --pattern full --variant fused --reps 5 --export "/tmp/fused/$g" \
      --json >> "$OUT/fold_export.jsonl" 2>>"$OUT/log.txt"
    step python3 benches/peers/fused_peer.py "/tmp/fused/$g" --reps 20 \
      >> "$OUT/fold_peer.jsonl" 2>>"$OUT/log.txt"
    rm -rf "/tmp/fused/$g"
  fi
  for F in on off; do
    log "fused $g --fold $F"
    step $W fused --gen "$g" --scale "$SCALE" --pattern "$PATTERNS" --variant "$VARIANTS" \
      --fold "$F" --check --reps "$REPS" --json >> "$OUT/fold.jsonl" 2>>"$OUT/log.txt"
  done
done
python3 - "$OUT/fold.jsonl" <<'EOF' | tee "$OUT/fold_table.md"
import json, sys
rows = {}
for line in open(sys.argv[1]):
    line = line.strip()
    if not line:
        continue
    d = json.loads(line)
    name = d["input"]["name"]
    for r in d["results"]:
        m = r.get("measurement")
        if not m:
            print(f"{name} {r['pattern']} {r['variant']}: {r.get('error')}")
            continue
        fold = "on" if m["config"]["fold"] else "off"
        rows.setdefault((name, r["pattern"], r["variant"]), {})[fold] = (
            m["ms"] * 1e3, r["dispatches"], m["max_rel_error"], m["config"])
print("| input | pattern | variant | config | fold on µs (dispatches) | fold off µs (dispatches) | off / on | max rel err |")
print("|---|---|---|---|---|---|---|---|")
for (name, p, v), f in rows.items():
    on, off = f.get("on"), f.get("off")
    cfg = (on or off)[3]
    desc = f"{cfg['variant']} wg={cfg['workgroup']} vs={cfg['vs']}" + (
        f" long>{cfg['long_row']}" if cfg["long_row"] != 4294967295 else "")
    cell = lambda x: f"{x[0]:.1f} ({x[1]})" if x else "—"
    ratio = f"{off[0] / on[0]:.2f}×" if on and off else "—"
    err = max(x[2] for x in (on, off) if x)
    print(f"| {name} | {p} | {v} | {desc} | {cell(on)} | {cell(off)} | {ratio} | {err:.1e} |")
EOF
log "done"
