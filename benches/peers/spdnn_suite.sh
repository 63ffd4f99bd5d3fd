#!/usr/bin/env bash
# The sparse DNN benchmark job (issue 10): run on the NVIDIA machine from the repository root
# with the release binary in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh),
# and the Fashion-MNIST training images at $IDX (default .gpu/train-images-idx3-ubyte.gz, as
# the Debian package dataset-fashion-mnist installs it under /usr/share/datasets/fashion-mnist;
# a .gz is decompressed into /tmp first, a plain IDX file is used as is).
# Writes JSON lines and a log into $OUT (default ./bench-out).
#   NS="1024 4096 16384" LAYERS="120" PEER=1 SWEEP=1 benches/peers/spdnn_suite.sh
#   NS      neuron counts (the network of the champion's recipe: 32 per row at (r + o_k) mod N,
#           rows and columns permuted, 1/16, the challenge's biases; the images resized to
#           √N × √N and thresholded at > 96; 60,000 rows)
#   LAYERS  layer counts (120; 480 and 1920 take 4× and 16× the time)
#   PEER=1  also run benches/peers/spdnn_torch.py on the exported network (same files)
#   SWEEP=1 also time other sliced-ELL tilings (outputs per invocation × rows per workgroup,
#           unpacked weights, a smaller workgroup, 32-lane ELL groups, narrower slices) at the
#           N in SWEEP_NS (default 4096 16384)
#   DENSE_ROWS_MAX  largest N at which the dense-rows path runs too (default 4096)
#   THESIS_NS  N at which the thesis's approaches run too (--approach all: CSR·ELL, CSR·CSR,
#           CSC·CSC, each 1D and 2D, one warm-up and THESIS_REPS timed runs each; default
#           "1024 4096"); buffers THESIS_BUFFERS_SMALL at N ≤ 1024 (default 0.1,0.25,0.5,
#           the thesis's sweep) and THESIS_BUFFERS at larger N (default 0.1). That invocation
#           runs under `timeout THESIS_TIMEOUT` (default 180 s; the twin and the fast paths
#           included): its JSON lines are written as each run finishes, every approach at 10%
#           before any at 25%, so a timeout loses the last buffers' runs first. Each thesis
#           run is one warm-up, THESIS_REPS timed runs and one run timing the multiply alone.
#           The table of the thesis's relative findings goes to $OUT/thesis_table.md.
#   VERIFY=1 VERIFY_PART=k  (1..21) instead of all the above: verification only (issue 10's "every
#           approach verified on all 9 configurations"): per configuration one process runs
#           auto (the fast path, one run, no warm-up; its categories are the truth,
#           and at N = 1024, L = 120 it is itself checked against the CPU twin) and then each
#           thesis run once (--thesis-reps 0: no warm-up, no --spmm-time) with the whole list
#           in one batch where a binding allows (--buffer 1; N = 16,384: two bands of 30,000
#           rows), writing one JSON line per run with its verdict to $OUT/verify.jsonl and a
#           table to $OUT/verify_table.md; auto runs once (--reps 0). Parts, with times
#           estimated from the 01:59 H200 figures (thesis runs × 4 per 4× N, linear in L):
#             1: all six thesis runs at 1024 × {120, 480, 1920}, 4096 × 120, 16384 × 120 (~6.5 min)
#             2: all six at 4096 × 480; the three approaches (csr-ell 1d, csr-csr 1d,
#                csc-csc 2d) at 16384 × 480 (~6 min)
#             3: the three approaches at 4096 × 1920 (~4 min)
#             4, 5, 6: csr-csr 1d, csc-csc 2d, csr-ell 1d at 16384 × 1920 (~5.5, 6.5, 8 min)
#             7, 8: the other tilings at 4096 × 1920 and at 16384 × 480 (~5.5 min each)
#             9, 10, 11: csc-csc 1d, csr-csr 2d, csr-ell 2d at 16384 × 1920 (~6, 9, 10 min)
#           16,384 × 1,920 in pieces of input rows (parts 4, 6, 10 and 11 run whole and pass
#           the 560-s budget: part 4 timed out there). Inference times × 4 of the H200's
#           16,384 × 480 runs (60,000 rows: csr-ell 1d 191 s, csr-csr 1d 194, csr-csr 2d 197,
#           csr-ell 2d 136, csc-csc 1d 78, csc-csc 2d 68), halved for a half; each part adds
#           ~1–1.5 min of setup (loader packages, images, the 1,920 layers' generation and
#           upload, and, with no truth file, the auto run over its rows: ~20 s a half):
#            12, 13: csr-ell 1d, rows 0..30000 and 30000..60000 (~380 s + setup each)
#            14, 15: csr-csr 1d, the same halves (~390 s + setup each)
#            16, 17: csr-csr 2d, the same halves (~395 s + setup each)
#            18, 19: csr-ell 2d, the same halves (~270 s + setup each)
#            20, 21: csc-csc 1d and 2d, whole (~310 and ~270 s + setup; as parts 9 and 5)
#           A half is one band of 30,000 rows, as each of the whole run's two bands. No row's
#           result depends on the other rows of its batch, band or tile: each output sums
#           that row's terms alone (in an order the f32 atomics leave open, whole or split
#           alike); tests/spdnn_split.rs checks every path's pieces against the slice of the
#           whole run. So the halves together verify the whole run.
#           or VERIFY_CONFIGS="N:L:RUNS[@S:R] ..." (RUNS: all, or format:tiling pairs joined
#           by +; @S:R: input rows S .. S + R only, `wgsparse spdnn --first-row S --rows R`,
#           judged on the truth's rows in that range; default all 60,000).
#           The auto run's categories go to $OUT/truth/categories-n{N}-l{L}.tsv (a piece's to
#           categories-n{N}-l{L}-r{S}+{R}.tsv, numbered in the whole input: the halves'
#           files concatenated are the whole's); put those of an earlier part in
#           VERIFY_TRUTH_DIR (default .gpu/truth) and later parts at that configuration check
#           against the file (the whole's, else the same piece's) instead of running auto
#           (saves its planning and run: ~1.5 min at 16,384 × 1,920 whole).
#           Each part stops starting runs at VERIFY_BUDGET seconds (default 560; a running
#           process is cut there and a "timeout" line written). VERIFY_ROWS (default 60000):
#           the input rows of a whole run.
#           The table ($OUT/verify_table.md, by spdnn_verify_table.py) lists every line with
#           its input rows, then per configuration and thesis run whether matched pieces
#           cover all 60,000 rows: "verified" only when every piece of every run matched.
#           Over several parts: python3 benches/peers/spdnn_verify_table.py OUT*/verify.jsonl
#   VERIFY=1 VERIFY_PARTS="12 13 14 15"  several parts at once, one process each, sharing the
#           GPU (each in $OUT/part-k, each under VERIFY_BUDGET; the loader packages and images
#           set up once before they start), then one table over all of them in
#           $OUT/verify_table.md. The thesis runs wait on the host between batches, so parts
#           side by side may take little more than one; compare each part's log times with
#           the estimates above to see how much the GPU was shared.
# The N = 1024 runs are checked against the CPU twin (a row within f32 rounding of the
# threshold may differ and is listed in tie_rows); the others against the auto run's
# categories, and the peer against them too (its JSON line says categories_match).
# Dry run elsewhere: DRY_RUN=1 (or SPDNN_SETUP_DONE=1) skips installing .gl/ into /; the
# parts' large configuration shrinks with VERIFY_N (default 16384), VERIFY_L (1920) and
# VERIFY_HALF (30000, a half's rows), e.g. (the truth of an earlier small run in VERIFY_TRUTH_DIR):
#   DRY_RUN=1 VERIFY=1 VERIFY_PARTS="12 13" VERIFY_N=4096 VERIFY_L=4 VERIFY_HALF=1000 \
#     VERIFY_ROWS=2000 OUT=/tmp/v bash benches/peers/spdnn_suite.sh
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
NS=${NS:-"1024 4096 16384"}
LAYERS=${LAYERS:-"120"}
IDX=${IDX:-.gpu/train-images-idx3-ubyte.gz}
DENSE_ROWS_MAX=${DENSE_ROWS_MAX:-4096}
SWEEP_NS=${SWEEP_NS:-"4096 16384"}
REPS=${REPS:-3}
THESIS_NS=${THESIS_NS:-"1024 4096"}
THESIS_REPS=${THESIS_REPS:-1}
THESIS_BUFFERS_SMALL=${THESIS_BUFFERS_SMALL:-0.1,0.25,0.5}
THESIS_BUFFERS=${THESIS_BUFFERS:-0.1}
THESIS_TIMEOUT=${THESIS_TIMEOUT:-180}
# Parts started side by side count from the parent's start (SPDNN_T0).
T0=${SPDNN_T0:-$(date +%s)}
if [ -z "${SPDNN_SETUP_DONE:-}" ]; then install_gl --dry-run; fi
use_wgsparse
# Without images nothing runs; the summary names why.
no_images() {
  log "$1"
  if [ "${VERIFY:-0}" = 1 ]; then
    echo "no runs: $1" > "$OUT/verify_table.md"
  else
    echo "no runs: $1" > "$OUT/thesis_table.md"
  fi
  exit 2
}
[ -f "$IDX" ] || no_images "no IDX file at $IDX"
if [[ "$IDX" == *.gz ]]; then
  gunzip -c "$IDX" > /tmp/spdnn-images.idx || no_images "cannot decompress $IDX"
  IDX=/tmp/spdnn-images.idx
fi
if [ "${VERIFY:-0}" = 1 ] && [ -n "${VERIFY_PARTS:-}" ]; then
  for k in $VERIFY_PARTS; do
    VERIFY_PARTS="" VERIFY_PART=$k OUT="$OUT/part-$k" IDX="$IDX" SPDNN_SETUP_DONE=1 \
      SPDNN_T0=$T0 bash "$0" &
  done
  wait
  python3 benches/peers/spdnn_verify_table.py --total "${VERIFY_ROWS:-60000}" \
    "$OUT"/part-*/verify.jsonl > "$OUT/verify_table.md" || log "verify table FAILED"
  log "verify parts $VERIFY_PARTS done"
  exit 0
fi
if [ "${VERIFY:-0}" = 1 ]; then
  BEST="csr-ell:1d+csr-csr:1d+csc-csc:2d"
  REST="csr-ell:2d+csr-csr:2d+csc-csc:1d"
  # The large configuration of parts 4–6 and 9–21 and its halves (smaller in a dry run).
  BN=${VERIFY_N:-16384}; BL=${VERIFY_L:-1920}; H=${VERIFY_HALF:-30000}
  case "${VERIFY_PART:-1}" in
    1) parts="1024:120:all 1024:480:all 1024:1920:all 4096:120:all 16384:120:all" ;;
    2) parts="4096:480:all 16384:480:$BEST" ;;
    3) parts="4096:1920:$BEST" ;;
    4) parts="$BN:$BL:csr-csr:1d" ;;
    5) parts="$BN:$BL:csc-csc:2d" ;;
    6) parts="$BN:$BL:csr-ell:1d" ;;
    7) parts="4096:1920:$REST" ;;
    8) parts="16384:480:$REST" ;;
    9) parts="$BN:$BL:csc-csc:1d" ;;
    10) parts="$BN:$BL:csr-csr:2d" ;;
    11) parts="$BN:$BL:csr-ell:2d" ;;
    12) parts="$BN:$BL:csr-ell:1d@0:$H" ;;
    13) parts="$BN:$BL:csr-ell:1d@$H:$H" ;;
    14) parts="$BN:$BL:csr-csr:1d@0:$H" ;;
    15) parts="$BN:$BL:csr-csr:1d@$H:$H" ;;
    16) parts="$BN:$BL:csr-csr:2d@0:$H" ;;
    17) parts="$BN:$BL:csr-csr:2d@$H:$H" ;;
    18) parts="$BN:$BL:csr-ell:2d@0:$H" ;;
    19) parts="$BN:$BL:csr-ell:2d@$H:$H" ;;
    20) parts="$BN:$BL:csc-csc:1d" ;;
    21) parts="$BN:$BL:csc-csc:2d" ;;
    *) log "VERIFY_PART is 1..21"; exit 2 ;;
  esac
  parts=${VERIFY_CONFIGS:-$parts}
  # From the script start: the loader packages and the images count too.
  deadline=$(( T0 + ${VERIFY_BUDGET:-560} ))
  for c in $parts; do
    # N:L:RUNS[@S:R]: input rows S .. S + R (default all VERIFY_ROWS, 60,000).
    first=0; prows=${VERIFY_ROWS:-60000}; piece=""
    if [[ "$c" == *@* ]]; then
      piece=${c#*@}; c=${c%@*}; first=${piece%%:*}; prows=${piece#*:}; piece="-r$first+$prows"
    fi
    N=${c%%:*}; rest=${c#*:}; L=${rest%%:*}; runs=${rest#*:}
    where="\"neurons\":$N,\"layers\":$L,\"first_row\":$first,\"rows\":$prows"
    left=$(( deadline - $(date +%s) ))
    if [ "$left" -le 5 ]; then
      log "N=$N L=$L rows $first..$((first + prows)) verify: skipped (part budget spent)"
      echo "{$where,\"verify\":\"skipped\",\"runs\":\"$runs\"}" >> "$OUT/verify.jsonl"
      continue
    fi
    sel=(--approach auto-thesis)
    [ "$runs" = all ] || sel+=(--thesis-runs "${runs//+/,}")
    check=""
    [ "$N" -le 1024 ] && [ "$L" -le 120 ] && check="--check"
    # The auto run's categories are kept in $OUT/truth; a file of an earlier part put in
    # $VERIFY_TRUTH_DIR replaces the auto run (same seed, same network and inputs): the
    # whole run's (the CLI judges a piece on its rows) or else this piece's.
    mkdir -p "$OUT/truth"
    tdir=${VERIFY_TRUTH_DIR:-.gpu/truth}
    truth_file="$tdir/categories-n$N-l$L.tsv"
    [ -f "$truth_file" ] || truth_file="$tdir/categories-n$N-l$L$piece.tsv"
    if [ -z "$check" ] && [ -f "$truth_file" ]; then
      sel[1]=thesis
      check="--categories $truth_file"
    else
      sel+=(--save-categories "$OUT/truth/categories-n$N-l$L$piece.tsv")
    fi
    log "N=$N L=$L rows $first..$((first + prows)) verify $runs $check (${left} s left)"
    timeout "$left" $W spdnn --neurons "$N" --layers "$L" --rows "$prows" --first-row "$first" \
      --input "$IDX" --json --reps 0 --thesis-reps 0 --buffer 1 "${sel[@]}" $check \
      >> "$OUT/verify.jsonl" 2>>"$OUT/log.txt"
    rc=$?
    if [ "$rc" = 124 ]; then
      log "N=$N L=$L rows $first..$((first + prows)) verify: timed out"
      echo "{$where,\"verify\":\"timeout\",\"runs\":\"$runs\"}" >> "$OUT/verify.jsonl"
    elif [ "$rc" = 1 ]; then
      log "N=$N L=$L rows $first..$((first + prows)) verify: a mismatch (see its JSON line)"
    elif [ "$rc" != 0 ]; then
      log "N=$N L=$L rows $first..$((first + prows)) verify: FAILED (exit $rc; the error is in log.txt)"
      echo "{$where,\"verify\":\"failed (exit $rc)\",\"runs\":\"$runs\"}" >> "$OUT/verify.jsonl"
    fi
  done
  python3 benches/peers/spdnn_verify_table.py --total "${VERIFY_ROWS:-60000}" \
    "$OUT/verify.jsonl" > "$OUT/verify_table.md" \
    || log "verify table FAILED"
  log "verify part ${VERIFY_PART:-1} done"
  exit 0
fi
for L in $LAYERS; do
  for N in $NS; do
    dir=/tmp/spdnn-n$N-l$L
    base="spdnn --neurons $N --layers $L --rows 60000 --input $IDX --reps $REPS --json"
    check=""
    [ "$N" -le 1024 ] && check="--check"
    # auto (= sliced-ell), and dense-rows in the same process up to DENSE_ROWS_MAX (one twin).
    which=auto
    [ "$N" -le "$DENSE_ROWS_MAX" ] && which=sliced-ell,dense-rows
    if [[ " $THESIS_NS " == *" $N "* ]]; then
      # Every path in one process (one generation, one twin): the fast paths first (dense-rows
      # only up to DENSE_ROWS_MAX), then the thesis's approaches.
      bufs=$THESIS_BUFFERS
      [ "$N" -le 1024 ] && bufs=$THESIS_BUFFERS_SMALL
      fast=all
      [ "$N" -le "$DENSE_ROWS_MAX" ] || fast=auto
      log "N=$N L=$L approach all, thesis buffers $bufs (export to $dir) $check"
      if [ "$fast" = all ]; then
        timeout "$THESIS_TIMEOUT" $W $base --approach all --thesis-reps "$THESIS_REPS" --spmm-time \
          --buffer "$bufs" $check --export "$dir" >> "$OUT/spdnn.jsonl" \
          2>>"$OUT/log.txt" || log "FAILED or timed out (exit $?)"
      else
        $W $base --approach auto $check --export "$dir" >> "$OUT/spdnn.jsonl" \
          2>>"$OUT/log.txt" || log "FAILED (exit $?)"
        timeout "$THESIS_TIMEOUT" $W $base --approach thesis --thesis-reps "$THESIS_REPS" --spmm-time \
          --buffer "$bufs" ${check:-"--categories $dir/categories.tsv"} >> "$OUT/spdnn.jsonl" \
          2>>"$OUT/log.txt" || log "FAILED or timed out (exit $?)"
      fi
    else
      for a in ${which//,/ }; do
        log "N=$N L=$L approach $a (export to $dir) $check"
        $W $base --approach $a $check --export "$dir" >> "$OUT/spdnn.jsonl" \
          2>>"$OUT/log.txt" || log "FAILED (exit $?)"
      done
    fi
    # Against the CPU twin where it runs (rows within f32 rounding of the threshold are
    # told apart there), else against the first run's categories, exactly.
    truth=${check:-"--categories $dir/categories.tsv"}
    if [ "${SWEEP:-0}" = 1 ] && [[ " $SWEEP_NS " == *" $N "* ]]; then
      for tile in "8 2" "2 2" "4 1" "4 3" "2 4" "4 2" "4 2 --no-pack" "4 2 --wg 128" "4 2 --ell-lanes 32" "4 2 --slice 768"; do
        set -- $tile
        log "N=$N L=$L sliced-ell T=$1 RV=$2 ${*:3}"
        $W $base --approach sliced-ell --outputs-per-thread "$1" --row-vecs "$2" "${@:3}" \
          $truth >> "$OUT/spdnn.jsonl" 2>>"$OUT/log.txt" \
          || log "FAILED (exit $?)"
      done
    fi
    if [ "${PEER:-0}" = 1 ]; then
      log "N=$N L=$L torch peer"
      python3 benches/peers/spdnn_torch.py "$dir" --reps "$REPS" \
        >> "$OUT/spdnn_peer.jsonl" 2>>"$OUT/log.txt" || log "peer FAILED"
    fi
    rm -rf "$dir"
  done
done
python3 - "$OUT/spdnn.jsonl" > "$OUT/thesis_table.md" <<'PY' || log "table FAILED"
# The thesis's relative findings from the runs above: every thesis run, then the ratios it
# reports (ELL vs CSR vs CSC at one tiling and 10%, 2D vs 1D, the buffer sweep).
import json, sys
runs = []
for line in open(sys.argv[1]):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("approach") in ("csr-ell", "csr-csr", "csc-csc") and "ms" in d:
        runs.append(d)
    elif "error" in d:
        print(f"- error: {d['approach']}: {d['error']}")
print("| N | L | approach | tiling | buffer | total ms | multiply ms | TE/s | batches | peak MB | dense 2× MB | check |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
for d in runs:
    print(f"| {d['neurons']} | {d['layers']} | {d['approach']} | {d['tiling']} | {d['buffer']} | "
          f"{d['ms']:.1f} | {d.get('multiply_ms') or float('nan'):.1f} | {d['edges_per_second'] / 1e12:.3f} | {d['batches']} | "
          f"{d['peak_feature_bytes'] / 1e6:.1f} | {d['dense_double_buffer_bytes'] / 1e6:.1f} | "
          f"{'ok' if d['ok'] else 'MISMATCH'} |")
t = {(d['neurons'], d['layers'], d['approach'], d['tiling'], d['buffer']): d['ms'] for d in runs}
print()
print("| N | L | finding | ratio (time / time) |")
print("|---|---|---|---|")
for (n, l) in sorted({(k[0], k[1]) for k in t}):
    def r(a, b, what):
        if a in t and b in t:
            print(f"| {n} | {l} | {what} | {t[a] / t[b]:.2f} |")
    for ti in ("1d", "2d"):
        r((n, l, "csr-csr", ti, 0.1), (n, l, "csr-ell", ti, 0.1), f"CSR·CSR / CSR·ELL, {ti}, 10%")
        r((n, l, "csc-csc", ti, 0.1), (n, l, "csr-ell", ti, 0.1), f"CSC·CSC / CSR·ELL, {ti}, 10%")
        r((n, l, "csc-csc", ti, 0.1), (n, l, "csr-csr", ti, 0.1), f"CSC·CSC / CSR·CSR, {ti}, 10%")
    for ap in ("csr-ell", "csr-csr", "csc-csc"):
        r((n, l, ap, "1d", 0.1), (n, l, ap, "2d", 0.1), f"{ap} 1D / 2D, 10%")
        for ti in ("1d", "2d"):
            r((n, l, ap, ti, 0.1), (n, l, ap, ti, 0.5), f"{ap} {ti} buffer 10% / 50%")
            r((n, l, ap, ti, 0.1), (n, l, ap, ti, 0.25), f"{ap} {ti} buffer 10% / 25%")
PY
log "done"
