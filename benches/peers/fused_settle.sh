#!/usr/bin/env bash
# KDD2010: does a plan's first pass run as fast as its later ones, with and without idling
# after the plan is built? The slow first phase of the twenty-third measurements was the
# clocks' plateau after host work, which a 0.5 s warm-up could end in (twenty-sixth
# measurements); warm-ups after idling now last 1.5 s. One export, then the re-indexed
# transpose alternately without and with `--settle S` (S seconds idle: the clocks fall),
# three passes each (no --check: the checked run idles while the host compares). Run on
# the NVIDIA machine from the repository root with the release binary in .gpu/ and the Vulkan
# loader packages in .gl/ (as fused_suite.sh). Everything goes into one archive,
# $OUT/fused_settle.tgz, rewritten after each step. About 5 minutes of GPU wall time.
#   SETTLE=3                       seconds idle after each plan is built
#   ROUNDS=2                       (plain, settled) pairs
#   STEP_LIMIT=200                 seconds any one step may take
#   PEER=0                         1: the peer on the same export afterwards
# Summary: runs.tsv (tag, exit status, JSON with `passes_ms` and `warm_up` per plan).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
SETTLE=${SETTLE:-3}
ROUNDS=${ROUNDS:-2}
STEP_LIMIT=${STEP_LIMIT:-200}
PEER=${PEER:-0}
PEER_REPS=${PEER_REPS:-10}
archive_init fused_settle
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
x=$WORK/x/kdd2010
run_fused "kdd2010 export, transpose" --gen kdd2010 --pattern full --variant transpose --reps 3 \
  --reorder-cols off --export "$x"
common=(--matrix-raw "$x" --pattern xty,full --roofline --reps 10 --passes 3 --variant transpose
  --reorder-cols on)
for i in $(seq "$ROUNDS"); do
  run_fused "kdd2010 plain $i" "${common[@]}"
  run_fused "kdd2010 settle $SETTLE $i" "${common[@]}" --settle "$SETTLE"
done
if [ "$PEER" = 1 ]; then
  run_peer kdd2010 "$x"
fi
rm -rf "$x"
pack
log "archive: $ARCHIVE"
