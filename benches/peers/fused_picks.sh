#!/usr/bin/env bash
# Our tuned picks fixed against the peer on the same exported X in the same job, with the GPU
# kept busy or not on each side: ours at each of RUNS runs per timed submission
# (`--runs-per-submit`), the peer at each of CALLS calls per pair of CUDA events
# (`fused_peer.py --calls-per-event`). A timing that leaves one side's GPU idle between runs
# while the other's stays busy would favour one of them; this shows whether the ratio holds
# both ways. Run on the NVIDIA machine from the repository root with the release binary in
# .gpu/ and the Vulkan loader packages in .gl/ (as fused_suite.sh). Everything goes into one
# archive, $OUT/fused_picks.tgz, rewritten after each step: runs.tsv (tag, exit status, JSON)
# and peer_INPUT_callsK.jsonl.
#   INPUTS="sparse-200 sparse-1024 sparse-4096"
#   RUNS="1 8"        our runs per submission, each timed (the first also checked)
#   CALLS="1 8"       the peer's calls per event pair, each timed
#   PEER_REPS=20      the peer's timed repetitions per option
#   STEP_LIMIT=100    seconds any one step may take
#   PICK_200, PICK_1024, PICK_4096: our configuration per input (`wgsparse fused` arguments
#   after --variant stream; defaults: the H100 picks of the thirty-seventh measurements)
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-200 sparse-1024 sparse-4096"}
RUNS=${RUNS-"1 8"}
CALLS=${CALLS-"1 8"}
PEER_REPS=${PEER_REPS:-20}
STEP_LIMIT=${STEP_LIMIT:-100}
PICK_200=${PICK_200-"--wg 256 --vs 4 --epl 4 --groups 528 --wg-copies 4 --wg-atomics cas"}
PICK_1024=${PICK_1024-"--wg 128 --epl 8 --groups 792 --unit-tiles on --key16 on"}
PICK_4096=${PICK_4096-"--wg 1024 --vs 32 --epl 4 --groups 264 --row-tile 160"}
archive_init fused_picks
install_gl --dry-run --if-present --quiet
use_wgsparse W
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv > "$WORK/gpu.txt" 2>&1
for g in $INPUTS; do
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  pick_var="PICK_${g#sparse-}"
  read -ra pick <<< "${!pick_var-}"
  check=(--check)
  for r in $RUNS; do
    run_fused "$g pick runs $r" --matrix-raw "$x" --pattern full,xty --roofline --reps 50 \
      --variant stream "${pick[@]}" --runs-per-submit "$r" "${check[@]}"
    check=()
  done
  for c in $CALLS; do
    PEER_CALLS=$c run_peer "${g}_calls$c" "$x"
  done
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
