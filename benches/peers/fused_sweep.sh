#!/usr/bin/env bash
# The launch model against the configurations around it (issue: the model within 5% of the
# best; the paper's within 2%): `wgsparse fused --variant fused --sweep` per input with the
# default residency (Hopper's figures), then (CALIBRATE=1) `wgsparse calibrate --save`
# (stored in this job's cache) and the model's configuration again, now sized by the
# measured residency. Run on the NVIDIA machine from the repository root with the release
# binary in .gpu/ and the Vulkan loader packages in .gl/ (as fused_suite.sh). Everything goes
# into one archive, $OUT/fused_sweep.tgz, rewritten after each step. On an H100: 0.5–1.5
# minutes of GPU wall time per sparse input, 0.5–2 per dense one (all seven: about 9).
#   INPUTS="sparse-4096 dense-200 sparse-1024 sparse-200 dense-32 dense-1000 dense-2000"
#   STEP_LIMIT=300                 seconds any one step may take
#   REPS=5                         timed repetitions per sweep point
#   DEADLINE=""                    seconds: no input's sweep starts after them (a call's limit)
#   CALIBRATE=0                    1: the calibration and the calibrated model after the sweeps
# Summary: runs.tsv (tag, exit status, JSON: `sweeps` holds every point and the model's
# gap), sweep-INPUT.svg (time against C per VS), summary.md (fused_sweep_summary.py: the
# model, the best and a few alternative rules, read off the points, rewritten after each
# input) and calibrate.json inside the archive.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 dense-200 sparse-1024 sparse-200 dense-32 dense-1000 dense-2000"}
STEP_LIMIT=${STEP_LIMIT:-300}
REPS=${REPS:-5}
DEADLINE=${DEADLINE-}
CALIBRATE=${CALIBRATE:-0}
archive_init fused_sweep
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
summarize() {
  python3 "$(dirname "${BASH_SOURCE[0]}")/fused_sweep_summary.py" "$WORK/runs.tsv" \
    > "$WORK/summary.md" 2>>"$WORK/err.txt"
  pack
}
start=$(date +%s)
for g in $INPUTS; do
  past_deadline "$g" && break
  run_fused "$g sweep, default residency" --gen "$g" --pattern full --variant fused --sweep \
    --reps "$REPS" --plot "$WORK/sweep-$g.svg"
  summarize
done
if [ "$CALIBRATE" = 1 ]; then
  step "$W" calibrate --save --json > "$WORK/calibrate.json" 2>>"$WORK/err.txt"
  log "calibrate done"
  pack
  for g in $INPUTS; do
    run_fused "$g model, calibrated residency" --gen "$g" --pattern full --variant fused --reps 20
  done
  summarize
fi
log "archive: $ARCHIVE"
