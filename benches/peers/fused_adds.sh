#!/usr/bin/env bash
# The workgroup adds in flight (`wgsparse fused --adds-in-flight on|off`) against one
# compare-exchange loop after another, then `auto` tuned afresh (which times them) against the
# peer in the same job. Run on the NVIDIA machine from the repository root with the release
# binary in .gpu/ and the Vulkan loader packages in .gl/ (as fused_suite.sh). Everything it
# writes goes into one archive, $OUT/fused_adds.tgz (the device call returns at most 8 files),
# rewritten after each input so a call cut at its limit still returns what ran. About 4
# minutes of GPU wall time with the defaults.
#   INPUTS="sparse-4096 sparse-1024 sparse-200"
#   REPS=50                        timed repetitions (median)
#   PEER=1                         0: no peer compositions (fused_peer.py)
#   STEP_LIMIT=150                 seconds any one step may take
# Per input, `full,xty` with --check --roofline: stream at the configuration `auto` picked on
# an H200 (wg 512 × 4 at n = 4,096, 256 × 4 at 1,024, 128 × 8 at 200), sorted and fused with
# registers (regs 2), each with the adds in flight on and off, and the stream pair once more
# (the run-to-run spread); then `auto` tuned afresh in the process and again from its cache in
# a new one. Summary: runs.tsv (tag, exit status, JSON) inside the archive.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200"}
REPS=${REPS:-50}
PEER=${PEER:-1}
STEP_LIMIT=${STEP_LIMIT:-150}
ARCHIVE=$OUT/fused_adds.tgz
WORK=$(mktemp -d)
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
export WGSPARSE_CACHE_DIR=$WORK/cache
mkdir -p "$WGSPARSE_CACHE_DIR"
pack() {
  cp "$OUT/log.txt" "$WORK/log.txt" 2>/dev/null
  tar czf "$ARCHIVE" -C "$WORK" .
}
# run TAG ARGS…: one line of runs.tsv per run.
run() {
  local tag=$1
  shift
  local out
  out=$(timeout "$STEP_LIMIT" "$W" fused "$@" --json 2>>"$WORK/err.txt")
  local rc=$?
  printf '%s\t%s\t%s\n' "$tag" "$rc" "$(echo "$out" | tr -d '\n')" >> "$WORK/runs.tsv"
  log "$tag: exit $rc"
}
for g in $INPUTS; do
  x=$WORK/x/$g
  step "$W" fused --gen "$g" --pattern full --variant fused --reps 3 --reorder-cols off \
    --export "$x" --json > /dev/null 2>>"$WORK/err.txt"
  case $g in
    sparse-4096) stream="--wg 512 --epl 4" ;;
    sparse-1024) stream="--wg 256 --epl 4" ;;
    *) stream="--wg 128 --epl 8" ;;
  esac
  common=(--matrix-raw "$x" --pattern full,xty --check --roofline --reps "$REPS")
  for a in on off on; do
    # shellcheck disable=SC2086  # the workgroup and entry flags split on purpose
    run "$g stream adds $a" "${common[@]}" --variant stream $stream --adds-in-flight $a
  done
  for a in on off; do
    run "$g sorted adds $a" "${common[@]}" --variant sorted --adds-in-flight $a
    run "$g fused regs 2 adds $a" "${common[@]}" --variant fused --regs 2 --adds-in-flight $a
  done
  run "$g auto tuned" "${common[@]}" --variant auto
  run "$g auto cached" "${common[@]}" --variant auto
  if [ "$PEER" = 1 ]; then
    step python3 benches/peers/fused_peer.py "$x" --reps 30 --reorder-cols on \
      > "$WORK/peer_$g.jsonl" 2>>"$WORK/err.txt"
    log "peer $g done"
  fi
  rm -rf "$x"
  pack
done
pack
log "archive: $ARCHIVE"
