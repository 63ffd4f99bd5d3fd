#!/usr/bin/env bash
# `wgsparse fused --variant auto` against the fastest peer on the same exported X in the same
# job: per input the export, `auto` tuned afresh (checked against the twin), `auto` again from
# the job's cache, then fused_peer.py on the export. Run on the NVIDIA machine from the
# repository root with the release binary in .gpu/ and the Vulkan loader packages in .gl/ (as
# fused_suite.sh). A dense X is generated again for `auto` (--matrix-raw reads CSR only).
# Everything goes into one archive, $OUT/fused_auto.tgz, rewritten after each step. On an
# H100: about 2 minutes per sparse input (most of it tuning), half a minute per dense one.
#   INPUTS="sparse-4096 sparse-1024 sparse-200 dense-200"
#   STEP_LIMIT=200                 seconds any one step may take
#   PEER_REPS=20                   the peer's timed repetitions per option
#   DEADLINE=""                    seconds: no input starts after them (a call's limit)
#   AB=""                          more `wgsparse fused` arguments (e.g. "--unit-tiles on")
#                                  timed against none before `auto`: the stream kernel at each
#                                  configuration of CFGS_4096, CFGS_1024, CFGS_200
#                                  ("WGxEPLxGRID ..."), both ways, checked, plus
#                                  `--diag skip-wg-adds` both ways (X streamed with no adds)
# `wgsparse roofline` first (copy and read-only stream). Summary: runs.tsv (tag, exit status,
# JSON) and peer_INPUT.jsonl inside the archive.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
INPUTS=${INPUTS-"sparse-4096 sparse-1024 sparse-200 dense-200"}
STEP_LIMIT=${STEP_LIMIT:-200}
PEER_REPS=${PEER_REPS:-20}
DEADLINE=${DEADLINE-}
read -ra ab <<< "${AB-}"
archive_init fused_auto
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere).
install_gl --dry-run --if-present
use_wgsparse W
step "$W" roofline --json > "$WORK/roofline.json" 2>>"$WORK/err.txt"
start=$(date +%s)
for g in $INPUTS; do
  past_deadline "$g" && break
  x=$WORK/x/$g
  run_fused "$g export" --gen "$g" --pattern full --variant fused --reps 3 --export "$x"
  # --matrix-raw reads CSR only: a dense X is generated again (same seed, same values).
  case $g in
    dense-*|higgs) source=(--gen "$g") ;;
    *) source=(--matrix-raw "$x") ;;
  esac
  if [ ${#ab[@]} -gt 0 ]; then
    cfgs_var="CFGS_${g#sparse-}"
    read -ra cfgs <<< "${!cfgs_var-}"
    for c in "${cfgs[@]}"; do
      IFS=x read -r wg epl gr <<< "$c"
      fixed=("${source[@]}" --pattern full,xty --roofline --reps 50 --variant stream
        --wg "$wg" --epl "$epl" --groups "$gr")
      run_fused "$g stream $c" "${fixed[@]}" --check
      run_fused "$g stream $c $AB" "${fixed[@]}" "${ab[@]}" --check
      run_fused "$g stream $c diag skip-wg-adds" "${fixed[@]}" --diag skip-wg-adds
      run_fused "$g stream $c $AB diag skip-wg-adds" "${fixed[@]}" "${ab[@]}" --diag skip-wg-adds
    done
  fi
  base=("${source[@]}" --pattern full,xty --roofline --reps 50 --variant auto)
  run_fused "$g auto tuned, checked" "${base[@]}" --check
  run_fused "$g auto cached" "${base[@]}"
  run_peer "$g" "$x"
  rm -rf "$x"
  pack
done
log "archive: $ARCHIVE"
