#!/usr/bin/env bash
# The constant-row fast path and scalar rows on the champion's recipe (issue 10): run on the
# NVIDIA machine
# from the repository root with the release binary in .gpu/, the Vulkan loader packages in
# .gl/ (as gpu_suite.sh) and the Fashion-MNIST training images at $IDX (default
# .gpu/train-images-idx3-ubyte.gz; a .gz is decompressed into /tmp first).
#   NS="1024 4096 16384" L=120 REPS=3 benches/peers/spdnn_constant.sh
# Per N: `auto` (sliced ELL) in each mode of MODES (default "constant scalar"): `off`
# (--constant-rows off), `constant` (--constant-rows on --scalar-rows off), `scalar`
# (--constant-rows on --scalar-rows on, the default), on the network of
# spdnn_suite.sh (32 per row at (r + o_k) mod N, rows and columns permuted, 1/16, the
# challenge's biases; the images resized to √N × √N and thresholded at > 96; 60,000 rows).
# Categories: against .gpu/truth/categories-n{N}-l{L}.tsv where present (TRUTH_DIR), else
# the first mode's run saves its categories and the others are checked against them exactly.
# Writes $OUT/constant.jsonl (one line per run: ms, edges_per_second, fast_tiles, tiles,
# unwritten_tiles and each per layer, carried_rows_per_layer (rows carried as scalars
# through each layer), dispatches and dispatches_per_layer, check, ok), $OUT/log.txt and
# $OUT/constant_table.md (per mode TE/s and ms, the speed-ups, the share of fast tiles and
# of those that wrote no output and the first layer where ≥ 90% of the tiles were fast (the
# constant run), the share of row-layers carried as scalars, the first layer where ≥ 90% of
# the surviving rows were carried and the dispatches per layer (the scalar run), the checks).
# With the test binaries at .gpu/spdnn_constant and .gpu/spdnn_scalar (copied from
# `cargo test --release --test spdnn_constant --test spdnn_scalar --no-run`'s paths) it first
# runs those tests on the device (subgroups of 32, native atomics): $OUT/tests.txt. Budget:
# ~45 s per N and mode at L = 120 (setup, a progress run, a warm-up and REPS timed runs), about
# 4.5 min for the three N and two modes, plus the peer.
# PEER=1: the last mode's run also exports the network and inputs (`--export`) and
# benches/peers/spdnn_torch.py times the torch peer on those files in the same job
# ($OUT/peer.jsonl; PEER_REPS timed runs, default REPS; PEER_LIMIT seconds each, default 150;
# PEER_FORMATS limits the layouts tried, e.g. csr-rowmajor, the fastest at L = 120 and 480,
# where trying all at L = 1,920 would not fit a job);
# the table then gains the peer's TE/s and the ratio of the last mode's run to it.
# Dry run elsewhere (no system setup, small sizes): DRY_RUN=1 skips installing .gl/ into /;
# ROWS (default 60000) input rows, TEST_LIMIT (default 120) seconds for the tests, e.g.
#   DRY_RUN=1 NS="256 1024" L=8 ROWS=2000 REPS=1 OUT=/tmp/c bash benches/peers/spdnn_constant.sh
# The table is written even when runs fail (a missing run reads "missing").
# A mode may name a tiling too, MODE:T:RV[:LANES[:SLICE[:WG]]] (--outputs-per-thread,
# --row-vecs, --ell-lanes, --slice, --wg; the default 8:1:8, the widest slice that fits
# workgroup memory and 1,024 invocations; a field left empty keeps its default), e.g.
# MODES="scalar scalar:8:2 scalar:8:1:8:1536 scalar:4:1:8::512"; `sums` is
# `scalar` with --slice-sums on (each slice's gathers summed in registers, then added);
# `together` is `scalar` with --segments-together on (a slice's T output segments in one loop,
# the default) and `apart` with it off (one segment after another). The default tiling is wg
# 1,024 (capped at the device's limit), T 8, 1 row vec, 8 lanes.
# A mode's kind may carry switches, KIND[+unrollU][+prefetch|+noprefetch] (U in 1..4):
# `+unrollU` adds --stage-unroll U (each invocation stages U input columns a turn, all their
# loads before its stores), `+prefetch` / `+noprefetch` add --prefetch-bounds on / off (the
# next slice's segment bounds loaded before a slice's last barrier, the default; no effect
# without segments together, so with `apart` or `sums`),
# e.g. MODES="scalar together+noprefetch together+unroll4:8:1:8::512".
# LAYER_TIMES=1 (default) also times each layer on its own (--layer-times: layer_ms per run)
# and writes $OUT/layer_table.md: per N, the ms and tiles of layers 1–24 per mode, the rest
# summed, and the sum against the whole run's ms (one submission per layer costs a little).
# A tiling sweep at 16,384 in about 2 minutes (setup and the tests apart):
#   NS=16384 MODES="scalar apart scalar:8:1:8::512 apart:8:1:8::256 sums:8:1:8::1024" PEER=0 REPS=2 \
#     benches/peers/spdnn_constant.sh
# The staging and bounds switches at 16,384 in about 3 minutes (`scalar`, `together` and
# `together+prefetch` are the same run: their difference is the noise):
#   NS=16384 MODES="scalar together together+noprefetch together+unroll2 together+unroll4 \
#     apart apart+unroll4" PEER=0 REPS=2 benches/peers/spdnn_constant.sh
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
NS=${NS:-"1024 4096 16384"}
L=${L:-120}
REPS=${REPS:-3}
MODES=${MODES:-"constant scalar"}
ROWS=${ROWS:-60000}
IDX=${IDX:-.gpu/train-images-idx3-ubyte.gz}
TRUTH_DIR=${TRUTH_DIR:-.gpu/truth}
install_gl --dry-run
use_wgsparse
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
for t in spdnn_constant spdnn_scalar; do
  if [ -x ".gpu/$t" ]; then
    log "tests/$t on the device"
    WGSPARSE_BIN=$W timeout "${TEST_LIMIT:-120}" "./.gpu/$t" >> "$OUT/tests.txt" 2>&1 \
      && log "$t passed" || log "$t FAILED (exit $?; see tests.txt)"
  fi
done
last_mode=${MODES##* }
for N in $RUN_NS; do
  base=(spdnn --neurons "$N" --layers "$L" --rows "$ROWS" --input "$IDX" --reps "$REPS" --json
        --approach auto)
  truth="$TRUTH_DIR/categories-n$N-l$L.tsv"
  saved="$OUT/categories-n$N-l$L.tsv"
  first=1
  for mode in $MODES; do
    IFS=: read -r kind t rv lanes slice wg <<< "$mode"
    # The kind's switches (+unrollU, +prefetch), then the kind itself.
    IFS=+ read -r kind switches <<< "$kind"
    extra=()
    IFS=+ read -ra switches <<< "$switches"
    for sw in "${switches[@]}"; do
      case $sw in
        unroll[1-4]) extra+=(--stage-unroll "${sw#unroll}") ;;
        prefetch) extra+=(--prefetch-bounds on) ;;
        noprefetch) extra+=(--prefetch-bounds off) ;;
        *) extra=(bad); break ;;
      esac
    done
    if [ "${extra[*]}" = bad ]; then log "unknown switch in mode $mode"; status=2; continue; fi
    case $kind in
      off) flags=(--constant-rows off) ;;
      constant) flags=(--constant-rows on --scalar-rows off) ;;
      scalar) flags=(--constant-rows on --scalar-rows on) ;;
      sums) flags=(--constant-rows on --scalar-rows on --slice-sums on) ;;
      together) flags=(--constant-rows on --scalar-rows on --segments-together on) ;;
      apart) flags=(--constant-rows on --scalar-rows on --segments-together off) ;;
      *) log "unknown mode $mode"; status=2; continue ;;
    esac
    [ -n "$t" ] && flags+=(--outputs-per-thread "$t")
    [ -n "$rv" ] && flags+=(--row-vecs "$rv")
    [ -n "$lanes" ] && flags+=(--ell-lanes "$lanes")
    [ -n "$slice" ] && flags+=(--slice "$slice")
    [ -n "$wg" ] && flags+=(--wg "$wg")
    flags+=("${extra[@]}")
    [ "${LAYER_TIMES:-1}" = 1 ] && flags+=(--layer-times)
    if [ -f "$truth" ]; then
      check=(--categories "$truth")
    elif [ "$first" = 1 ]; then
      check=(--save-categories "$saved")
    else
      check=(--categories "$saved")
    fi
    first=0
    export_dir=()
    [ "${PEER:-0}" = 1 ] && [ "$mode" = "$last_mode" ] && export_dir=(--export "/tmp/spdnn-net-$N")
    log "N=$N L=$L $mode ${check[*]}"
    # Each JSON line tagged with its mode (the table's key).
    $W "${base[@]}" "${flags[@]}" "${check[@]}" "${export_dir[@]}" 2>>"$OUT/log.txt" \
      > /tmp/spdnn-run.json || log "N=$N $mode: FAILED or mismatch (exit $?)"
    sed "s/^{/{\"mode\":\"$mode\",/" /tmp/spdnn-run.json >> "$OUT/constant.jsonl"
  done
  if [ "${PEER:-0}" = 1 ]; then
    log "N=$N L=$L torch peer"
    timeout "${PEER_LIMIT:-150}" python3 benches/peers/spdnn_torch.py "/tmp/spdnn-net-$N" \
      --reps "${PEER_REPS:-$REPS}" ${PEER_FORMATS:+--formats "$PEER_FORMATS"} \
      >> "$OUT/peer.jsonl" 2>>"$OUT/log.txt" \
      || log "N=$N peer FAILED (exit $?)"
    rm -rf "/tmp/spdnn-net-$N"
  fi
done
touch "$OUT/constant.jsonl" "$OUT/peer.jsonl"
python3 - "$OUT/constant.jsonl" "$NS" "$L" "$OUT/peer.jsonl" "$MODES" > "$OUT/constant_table.md" <<'PY' || log "table FAILED"
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


def mode(d):
    """The run's mode as tagged, else off, constant (constant rows, no scalar rows) or
    scalar."""
    if d.get("mode"):
        return d["mode"]
    if not d.get("constant_rows"):
        return "off"
    return "scalar" if d.get("scalar_rows") else "constant"


runs = {(d["neurons"], d["layers"], mode(d)): d for d in timed(sys.argv[1])}
peers = {(d["neurons"], d["layers"]): d for d in timed(sys.argv[4]) if d.get("fastest")}
modes = sys.argv[5].split()
last = modes[-1]
# Every (N, L) asked for gets a row, so a run that failed or never started shows as missing.
want = {(int(n), int(sys.argv[3])) for n in sys.argv[2].split()}
te = lambda d: d["edges_per_second"] / 1e12 if d else float("nan")
ms = lambda d: d["ms"] if d else float("nan")
ck = lambda d: ("ok" if d["ok"] else "MISMATCH") + f" ({d['check']})" if d else "missing"
head = ["N", "L"] + [f"TE/s {m}" for m in modes] + [f"ms {m}" for m in modes]
if "constant" in modes and "scalar" in modes:
    head.append("scalar / constant")
if "off" in modes and last != "off":
    head.append(f"{last} / off")
head += ["fast tiles (constant)", "first layer ≥ 90% fast", "row-layers carried (scalar)",
         "first layer ≥ 90% carried", "dispatches / layer", "active rows"]
head += [f"check {m}" for m in modes] + ["torch TE/s", f"{last} / torch"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for (n, l) in sorted(want | {(k[0], k[1]) for k in runs}):
    got = {m: runs.get((n, l, m)) for m in modes}
    row = [str(n), str(l)] + [f"{te(got[m]):.3f}" for m in modes] + [f"{ms(got[m]):.1f}" for m in modes]
    ratio = lambda a, b: f"{te(a) / te(b):.2f}" if a and b else "-"
    if "constant" in modes and "scalar" in modes:
        row.append(ratio(got["scalar"], got["constant"]))
    if "off" in modes and last != "off":
        row.append(ratio(got[last], got["off"]))
    share, first = "-", "-"
    c = got.get("constant") or runs.get((n, l, "constant"))
    if c and c.get("tiles"):
        share = f"{c['fast_tiles']} / {c['tiles']} ({100 * c['fast_tiles'] / c['tiles']:.1f}%)"
        for k, (f, t) in enumerate(zip(c.get("fast_tiles_per_layer") or [], c.get("tiles_per_layer") or [])):
            if t and f >= 0.9 * t:
                first = str(k + 1)
                break
    carried, cfirst, disp = "-", "-", "-"
    sc = got.get("scalar") or runs.get((n, l, "scalar"))
    if sc and sc.get("carried_rows_per_layer"):
        per = sc["carried_rows_per_layer"]
        carried = f"{100 * sum(per) / (sc['rows'] * l):.1f}%"
        # Rows alive at the end stand for the rows a layer can carry (dead rows are neither).
        alive = max(sc["active_rows"], 1)
        cfirst = next((str(k + 1) for k, c_ in enumerate(per) if c_ >= 0.9 * alive), "-")
    for m in modes:
        d = got[m]
        if d and d.get("dispatches_per_layer") is not None:
            disp = (disp + " / " if disp != "-" else "") + f"{m} {d['dispatches_per_layer']:.2f}"
    anyrun = next((d for d in got.values() if d), None)
    active = anyrun["active_rows"] if anyrun else "-"
    peer = peers.get((n, l))
    peer_te = peer["edges_per_second"] / 1e12 if peer else float("nan")
    row += [share, first, carried, cfirst, disp, str(active)] + [ck(got[m]) for m in modes]
    row += [f"{peer_te:.3f}", f"{te(got[last]) / peer_te:.2f}"]
    print("| " + " | ".join(row) + " |")
PY
python3 - "$OUT/constant.jsonl" "$MODES" > "$OUT/layer_table.md" <<'PY' || log "layer table FAILED"
import json, sys

runs = {}
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("layer_ms"):
        runs[(d["neurons"], d["mode"])] = d
modes = sys.argv[2].split()
SHOWN = 24
for n in sorted({k[0] for k in runs}):
    got = [(m, runs.get((n, m))) for m in modes]
    got = [(m, d) for m, d in got if d]
    print(f"\nN = {n}: ms per layer (one submission each; tiles run in brackets)\n")
    print("| layer | " + " | ".join(m for m, _ in got) + " |")
    print("|" + "---|" * (len(got) + 1))
    L = max(len(d["layer_ms"]) for _, d in got)
    def cell(d, k):
        ms, tiles = d["layer_ms"], d.get("tiles_per_layer") or []
        t = f" ({tiles[k]})" if k < len(tiles) else ""
        return f"{ms[k]:.2f}{t}" if k < len(ms) else "-"
    for k in range(min(L, SHOWN)):
        print(f"| {k + 1} | " + " | ".join(cell(d, k) for _, d in got) + " |")
    if L > SHOWN:
        print(f"| {SHOWN + 1}–{L} | " + " | ".join(f"{sum(d['layer_ms'][SHOWN:]):.2f}" for _, d in got) + " |")
    print("| sum | " + " | ".join(f"{sum(d['layer_ms']):.1f}" for _, d in got) + " |")
    print("| whole run | " + " | ".join(f"{d['ms']:.1f}" for _, d in got) + " |")
    print("| tiling | " + " | ".join(d.get("tiling", "-") for _, d in got) + " |")
PY
cat "$OUT/constant_table.md" "$OUT/layer_table.md"
log "done"
exit "$status"
