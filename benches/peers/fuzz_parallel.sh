#!/usr/bin/env bash
# Runs the reader fuzzer (tests/fuzz_readers.rs, its ignored long run) as several processes at
# once, one reader and one seed each, on CPU cores the job leaves idle, at the lowest priority:
#   READERS="libsvm ratings" SEEDS="21 22" SECONDS_EACH=480 CORES=8-15 \
#     benches/peers/fuzz_parallel.sh [&]
# needs .gpu/fuzz-readers (cargo test --release --test fuzz_readers --no-run; the path it prints,
# target/release/deps/fuzz_readers-HASH, copied). One line per process in $OUT/fuzz/summary.txt
# ("fuzz READER SECONDS s: INPUTS inputs, … CRASHES crashes, slowest …"); crashing and slow
# inputs are saved under $OUT/fuzz/found.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
READERS=${READERS:-"matrix-market libsvm ratings ratings-binary tsv idx-images idx-labels raw-csr mf-model mf-libmf"}
SEEDS=${SEEDS:-"21"}
SECONDS_EACH=${SECONDS_EACH:-300}
CORES=${CORES:-}
BIN=.gpu/fuzz-readers
mkdir -p "$OUT/fuzz/found"
[ -x "$BIN" ] || { echo "fuzz_parallel: $BIN missing" >&2; exit 2; }
pin() { if [ -n "$CORES" ]; then taskset -c "$CORES" "$@"; else "$@"; fi; }
pids=()
for r in $READERS; do
  for s in $SEEDS; do
    WGSPARSE_FUZZ_SECONDS=$SECONDS_EACH WGSPARSE_FUZZ_READER=$r WGSPARSE_FUZZ_SEED=$s \
      WGSPARSE_FUZZ_OUT="$OUT/fuzz/found" \
      pin nice -n 19 "$BIN" --ignored --nocapture --test-threads 1 \
      every_reader_survives_a_long_mutation_run >"$OUT/fuzz/$r-$s.log" 2>&1 &
    pids+=($!)
  done
done
fails=0
for p in "${pids[@]}"; do wait "$p" || fails=$((fails + 1)); done
grep -ho "fuzz [a-z-]* .*crashes.*" "$OUT"/fuzz/*.log | sort >"$OUT/fuzz/summary.txt"
echo "fuzz_parallel: ${#pids[@]} processes, $fails failed" >>"$OUT/fuzz/summary.txt"
