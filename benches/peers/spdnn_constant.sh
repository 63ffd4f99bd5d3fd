#!/usr/bin/env bash
# The constant-row fast path on the champion's recipe (issue 10): run on the NVIDIA machine
# from the repository root with the release binary in .gpu/, the Vulkan loader packages in
# .gl/ (as gpu_suite.sh) and the Fashion-MNIST training images at $IDX (default
# .gpu/train-images-idx3-ubyte.gz; a .gz is decompressed into /tmp first).
#   NS="1024 4096 16384" L=120 REPS=3 benches/peers/spdnn_constant.sh
# Per N: `auto` (sliced ELL) with --constant-rows off, then on, on the network of
# spdnn_suite.sh (32 per row at (r + o_k) mod N, rows and columns permuted, 1/16, the
# challenge's biases; the images resized to √N × √N and thresholded at > 96; 60,000 rows).
# Categories: against .gpu/truth/categories-n{N}-l{L}.tsv where present (TRUTH_DIR), else
# the off run saves its categories and the on run is checked against them exactly.
# Writes $OUT/constant.jsonl (one line per run: ms, edges_per_second, fast_tiles, tiles,
# unwritten_tiles and each per layer, check, ok), $OUT/log.txt and $OUT/constant_table.md
# (TE/s off and on, the speed-up, the share of fast tiles and of those that wrote no output,
# the first layer where ≥ 90% of the tiles were fast, the checks). With the test binary at
# .gpu/spdnn_constant (copied from `cargo test --release --test spdnn_constant --no-run`'s
# path) it first runs those tests on the device (subgroups of 32, native atomics):
# $OUT/tests.txt. Budget: ~1.5 min per N at L = 120 (setup, a progress run, a warm-up and
# REPS timed runs, twice), well under 6 min for the three N.
# PEER=1: the on run also exports the network and inputs (`--export`) and
# benches/peers/spdnn_torch.py times the torch peer on those files in the same job
# ($OUT/peer.jsonl; PEER_REPS timed runs, default REPS; PEER_LIMIT seconds each, default 150);
# the table then gains the peer's TE/s and the ratio of the on run to it.
# Dry run elsewhere (no system setup, small sizes): DRY_RUN=1 skips installing .gl/ into /;
# ROWS (default 60000) input rows, TEST_LIMIT (default 120) seconds for the tests, e.g.
#   DRY_RUN=1 NS="256 1024" L=8 ROWS=2000 REPS=1 OUT=/tmp/c bash benches/peers/spdnn_constant.sh
# The table is written even when runs fail (a missing run reads "missing").
set -uo pipefail
OUT=${OUT:-bench-out}
NS=${NS:-"1024 4096 16384"}
L=${L:-120}
REPS=${REPS:-3}
ROWS=${ROWS:-60000}
IDX=${IDX:-.gpu/train-images-idx3-ubyte.gz}
TRUTH_DIR=${TRUTH_DIR:-.gpu/truth}
mkdir -p "$OUT"
if [ "${DRY_RUN:-0}" != 1 ]; then
  for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done; ldconfig
fi
if ! ./.gpu/wgsparse info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
W=./.gpu/wgsparse
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
status=0
RUN_NS=$NS
if [ ! -f "$IDX" ]; then
  log "no IDX file at $IDX: no runs"; RUN_NS=""; status=2
elif [[ "$IDX" == *.gz ]]; then
  if gunzip -c "$IDX" > /tmp/spdnn-images.idx; then
    IDX=/tmp/spdnn-images.idx
  else
    log "cannot decompress $IDX: no runs"; RUN_NS=""; status=2
  fi
fi
if [ -x .gpu/spdnn_constant ]; then
  log "tests/spdnn_constant on the device"
  WGSPARSE_BIN=$W timeout "${TEST_LIMIT:-120}" ./.gpu/spdnn_constant > "$OUT/tests.txt" 2>&1 \
    && log "tests passed" || log "tests FAILED (exit $?; see tests.txt)"
fi
for N in $RUN_NS; do
  base=(spdnn --neurons "$N" --layers "$L" --rows "$ROWS" --input "$IDX" --reps "$REPS" --json
        --approach auto)
  truth="$TRUTH_DIR/categories-n$N-l$L.tsv"
  saved="$OUT/categories-n$N-l$L-off.tsv"
  if [ -f "$truth" ]; then
    off_check=(--categories "$truth"); on_check=(--categories "$truth")
  else
    off_check=(--save-categories "$saved"); on_check=(--categories "$saved")
  fi
  log "N=$N L=$L constant rows off ${off_check[*]}"
  $W "${base[@]}" --constant-rows off "${off_check[@]}" >> "$OUT/constant.jsonl" \
    2>>"$OUT/log.txt" || log "N=$N off: FAILED or mismatch (exit $?)"
  log "N=$N L=$L constant rows on ${on_check[*]}"
  export_dir=()
  [ "${PEER:-0}" = 1 ] && export_dir=(--export "/tmp/spdnn-net-$N")
  $W "${base[@]}" --constant-rows on "${on_check[@]}" "${export_dir[@]}" \
    >> "$OUT/constant.jsonl" 2>>"$OUT/log.txt" || log "N=$N on: FAILED or mismatch (exit $?)"
  if [ "${PEER:-0}" = 1 ]; then
    log "N=$N L=$L torch peer"
    timeout "${PEER_LIMIT:-150}" python3 benches/peers/spdnn_torch.py "/tmp/spdnn-net-$N" \
      --reps "${PEER_REPS:-$REPS}" >> "$OUT/peer.jsonl" 2>>"$OUT/log.txt" \
      || log "N=$N peer FAILED (exit $?)"
    rm -rf "/tmp/spdnn-net-$N"
  fi
done
touch "$OUT/constant.jsonl" "$OUT/peer.jsonl"
python3 - "$OUT/constant.jsonl" "$NS" "$L" "$OUT/peer.jsonl" > "$OUT/constant_table.md" <<'PY' || log "table FAILED"
import json, sys


def timed(path):
    """The JSON lines of `path` that carry a time (others, and stray log text, skipped)."""
    for line in open(path):
        try:
            d = json.loads(line)
        except ValueError:
            continue
        if "ms" in d:
            yield d


runs = {(d["neurons"], d["layers"], bool(d.get("constant_rows"))): d for d in timed(sys.argv[1])}
peers = {(d["neurons"], d["layers"]): d for d in timed(sys.argv[4]) if d.get("fastest")}
# Every (N, L) asked for gets a row, so a run that failed or never started shows as missing.
want = {(int(n), int(sys.argv[3])) for n in sys.argv[2].split()}
print("| N | L | TE/s off | TE/s on | on / off | ms off | ms on | fast tiles | unwritten | first layer ≥ 90% fast | active rows | check off | check on | torch TE/s | on / torch |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (n, l) in sorted(want | {(k[0], k[1]) for k in runs}):
    off, on = runs.get((n, l, False)), runs.get((n, l, True))
    te = lambda d: d["edges_per_second"] / 1e12 if d else float("nan")
    ms = lambda d: d["ms"] if d else float("nan")
    share, first, unwritten = "-", "-", "-"
    if on and on.get("tiles"):
        share = f"{on['fast_tiles']} / {on['tiles']} ({100 * on['fast_tiles'] / on['tiles']:.1f}%)"
        unwritten = str(on.get("unwritten_tiles"))
        for k, (f, t) in enumerate(zip(on.get("fast_tiles_per_layer") or [], on.get("tiles_per_layer") or [])):
            if t and f >= 0.9 * t:
                first = str(k + 1)
                break
    ck = lambda d: ("ok" if d["ok"] else "MISMATCH") + f" ({d['check']})" if d else "missing"
    ratio = te(on) / te(off) if on and off else float("nan")
    peer = peers.get((n, l))
    peer_te = peer["edges_per_second"] / 1e12 if peer else float("nan")
    active = on["active_rows"] if on else (off["active_rows"] if off else "-")
    print(f"| {n} | {l} | {te(off):.3f} | {te(on):.3f} | {ratio:.2f} | {ms(off):.1f} | {ms(on):.1f} | "
          f"{share} | {unwritten} | {first} | {active} | {ck(off)} | {ck(on)} | "
          f"{peer_te:.3f} | {te(on) / peer_te:.2f} |")
PY
cat "$OUT/constant_table.md"
log "done"
exit "$status"
