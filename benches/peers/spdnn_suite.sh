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
# The N = 1024 runs are checked against the CPU twin (a row within f32 rounding of the
# threshold may differ and is listed in tie_rows); the others against the auto run's
# categories, and the peer against them too (its JSON line says categories_match).
set -uo pipefail
OUT=${OUT:-bench-out}
NS=${NS:-"1024 4096 16384"}
LAYERS=${LAYERS:-"120"}
IDX=${IDX:-.gpu/train-images-idx3-ubyte.gz}
DENSE_ROWS_MAX=${DENSE_ROWS_MAX:-4096}
SWEEP_NS=${SWEEP_NS:-"4096 16384"}
REPS=${REPS:-3}
mkdir -p "$OUT"
for f in .gl/*.deb; do [ -e "$f" ] && dpkg -x "$f" /; done; ldconfig
if ! ./.gpu/wgsparse info >/dev/null 2>&1; then
  export VK_DRIVER_FILES=/usr/share/vulkan/icd.d/nvidia_icd.json
fi
W=./.gpu/wgsparse
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/log.txt"; }
[ -f "$IDX" ] || { log "no IDX file at $IDX"; exit 2; }
if [[ "$IDX" == *.gz ]]; then
  gunzip -c "$IDX" > /tmp/spdnn-images.idx || { log "cannot decompress $IDX"; exit 2; }
  IDX=/tmp/spdnn-images.idx
fi
for L in $LAYERS; do
  for N in $NS; do
    dir=/tmp/spdnn-n$N-l$L
    base="spdnn --neurons $N --layers $L --rows 60000 --input $IDX --reps $REPS --json"
    check=""
    [ "$N" -le 1024 ] && check="--check"
    # auto (= sliced-ell), and dense-rows in the same process up to DENSE_ROWS_MAX (one twin).
    which=auto
    [ "$N" -le "$DENSE_ROWS_MAX" ] && which=all
    log "N=$N L=$L approach $which (export to $dir) $check"
    $W $base --approach $which $check --export "$dir" >> "$OUT/spdnn.jsonl" \
      2>>"$OUT/log.txt" || log "FAILED (exit $?)"
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
log "done"
