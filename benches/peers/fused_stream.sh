#!/usr/bin/env bash
# The stream variant (`wgsparse fused --variant stream`: row tiles in CSR order, w in
# workgroup memory) on the three sparse inputs, with and without `--prefetch` (the next
# tile's entries and row factors loaded at the top of the tile before), the streaming alone
# (`--diag skip-wg-adds`), `auto` tuned afresh and the peer on the same exported X in the same
# job. Run on the NVIDIA machine from the repository root with the release binary in .gpu/
# and the Vulkan loader packages in .gl/ (as fused_suite.sh). Everything goes into one
# archive, $OUT/fused_stream.tgz, rewritten after each step. About 11 minutes of GPU wall time
# (INPUTS in two calls where a call is limited to 10).
#   INPUTS="sparse-4096 sparse-1024 sparse-200"
#   STEP_LIMIT=200                 seconds any one step may take
#   AUTO=1                         0: no `auto` run
#   PEER=1                         0: no peer run
#   PEER_REPS=20                   the peer's timed repetitions per option
#   GRIDS="132 264 396"            grids (--groups) the first configuration is also timed at
#                                  (the default is one workgroup per resident slot by the
#                                  device model, which counts no registers)
#   ROW_TILES="128 256"            caps on a tile's rows (--row-tile) every configuration is
#                                  also timed at (less workgroup memory a workgroup)
# `wgsparse roofline` first (copy and read-only stream); then per input pattern full,xty at
# three (workgroup size, entries per invocation), each with and without --prefetch, the first
# of them also --check'ed, timed again, with --diag skip-wg-adds and at the GRIDS grids,
# and each at the ROW_TILES caps;
# `auto`; fused_peer.py --reorder-cols on. Summary: runs.tsv (tag, exit status, JSON) inside
# the archive.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200"}
STEP_LIMIT=${STEP_LIMIT:-200}
AUTO=${AUTO:-1}
PEER=${PEER:-1}
PEER_REPS=${PEER_REPS:-20}
GRIDS=${GRIDS-"132 264 396"}
ROW_TILES=${ROW_TILES-"128 256"}
archive_init fused_stream
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
step "$W" roofline --json > "$WORK/roofline.json" 2>>"$WORK/err.txt"
for g in $INPUTS; do
  x=$WORK/x/$g
  # The tuner's picks on an H200 and an H100 first (BENCHMARKS.md), then two neighbours.
  case $g in
    sparse-4096) configs="512:4 256:8 1024:4" ;;
    sparse-1024) configs="256:4 512:4 128:8" ;;
    *) configs="128:8 128:4 256:4" ;;
  esac
  run_fused "$g export" --gen "$g" --pattern full --variant stream --reps 3 --export "$x"
  base=(--matrix-raw "$x" --pattern full,xty --roofline --reps 50)
  first=1
  for c in $configs; do
    s=(--variant stream --reorder-cols on --wg "${c%%:*}" --epl "${c##*:}")
    for p in "" --prefetch; do
      # $p unquoted on purpose: no argument when empty.
      # shellcheck disable=SC2086
      tag="$g stream ${c/:/ × }${p:+ prefetch}"
      if [ $first = 1 ]; then
        run_fused "$tag, checked" "${base[@]}" "${s[@]}" $p --check
        run_fused "$tag, again" "${base[@]}" "${s[@]}" $p
        run_fused "$tag, skip-wg-adds" "${base[@]}" "${s[@]}" $p --diag skip-wg-adds
        for gr in $GRIDS; do
          run_fused "$tag, $gr groups" "${base[@]}" "${s[@]}" $p --groups "$gr"
        done
      else
        run_fused "$tag" "${base[@]}" "${s[@]}" $p
      fi
    done
    for rt in $ROW_TILES; do
      run_fused "$g stream ${c/:/ × }, at most $rt rows a tile" "${base[@]}" "${s[@]}" --row-tile "$rt"
    done
    first=0
  done
  input_done "$g" "$x" "${base[@]}"
done
pack
log "archive: $ARCHIVE"
