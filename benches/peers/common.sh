# The setup the jobs in benches/peers/ share (run on the NVIDIA machine from the repository
# root: ../shared/GPU.md). Each job sources it right after `set -uo pipefail`:
#   . "$(dirname "${BASH_SOURCE[0]}")/common.sh"
# Sourcing sets OUT (default bench-out) and creates it, exports XDG_RUNTIME_DIR=/tmp when it is
# unset (the Vulkan loader warns without it on the device machine) and defines the functions
# below. It installs and exports nothing else: each job calls what it needs, so a job keeps
# its own choices (whether DRY_RUN counts, whether W or BIN names the binary, its cache).
# shellcheck shell=bash

OUT=${OUT:-bench-out}
mkdir -p "$OUT"
export XDG_RUNTIME_DIR=${XDG_RUNTIME_DIR:-/tmp}
# The NVIDIA driver's Vulkan ICD on the device machine (GPU.md: when the loader finds no adapter).
NVIDIA_ICD=/usr/share/vulkan/icd.d/nvidia_icd.json
# log()'s settings, set by a job after sourcing (not read from the environment):
#   LOG_FD     the descriptor log lines go to besides log.txt (default 1, stdout)
#   LOG_SINCE  epoch seconds: when set, each line also shows the seconds since then
LOG_FD=1
LOG_SINCE=

# log MESSAGE…: one timestamped line, appended to $OUT/log.txt and written to $LOG_FD.
log() {
  local t
  t=$(date +%T)
  [ -n "$LOG_SINCE" ] && t="$t +$(($(date +%s) - LOG_SINCE))s"
  echo "[$t] $*" | tee -a "$OUT/log.txt" >&"$LOG_FD"
}

# install_gl [--dry-run] [--if-present] [--quiet]: unpacks the Vulkan loader and GL dispatch
# packages of .gl/ into / and runs ldconfig (GPU.md, step 3).
#   --dry-run     nothing when DRY_RUN=1 (a dry run elsewhere, no system setup)
#   --if-present  nothing, ldconfig included, when there is no .gl/ folder
#   --quiet       ldconfig's complaints dropped
# shellcheck disable=SC2120  # called without arguments too
install_gl() {
  local dry=0 present=0 quiet=0 f
  for f in "$@"; do
    case $f in
      --dry-run) dry=1 ;;
      --if-present) present=1 ;;
      --quiet) quiet=1 ;;
      *) echo "install_gl: unknown option $f" >&2; return 2 ;;
    esac
  done
  if [ "$dry" = 1 ] && [ "${DRY_RUN:-0}" = 1 ]; then return 0; fi
  if [ "$present" = 1 ] && [ ! -d .gl ]; then return 0; fi
  for f in .gl/*.deb; do
    if [ -e "$f" ]; then dpkg -x "$f" /; fi
  done
  if [ "$quiet" = 1 ]; then ldconfig 2>/dev/null; else ldconfig; fi
}

# use_wgsparse [W|BIN]: sets W to the wgsparse binary: ./.gpu/wgsparse or, where the job lets
# the caller choose, the value of the variable named (when set and not empty). Then, when
# `$W info` fails (the loader found no adapter), exports VK_DRIVER_FILES=$NVIDIA_ICD. Call it
# after install_gl: the probe needs the loader.
# shellcheck disable=SC2120  # called without arguments too
use_wgsparse() {
  local chosen=
  if [ -n "${1:-}" ]; then chosen=${!1:-}; fi
  W=${chosen:-./.gpu/wgsparse}
  # $W unquoted, as the jobs run it.
  # shellcheck disable=SC2086
  if ! $W info >/dev/null 2>&1; then
    export VK_DRIVER_FILES=$NVIDIA_ICD
  fi
}

# job_cache [--fresh]: the tuning cache in $OUT/cache (exports WGSPARSE_CACHE_DIR), so the
# configurations tuned in a job stay with its outputs; --fresh empties it first (every plan
# tuned afresh in this job).
# shellcheck disable=SC2120  # called without arguments too
job_cache() {
  export WGSPARSE_CACHE_DIR="$OUT/cache"
  if [ "${1:-}" = --fresh ]; then rm -rf "$WGSPARSE_CACHE_DIR"; fi
}

# step COMMAND…: runs COMMAND under `timeout "$STEP_LIMIT"` (the job sets STEP_LIMIT; one step
# may take another: `STEP_LIMIT=S step …`). A step past its limit or failing is logged and the
# job goes on: step returns 0.
step() {
  timeout "$STEP_LIMIT" "$@"
  local rc=$?
  [ $rc -eq 124 ] && log "step timed out after ${STEP_LIMIT}s: $*"
  [ $rc -ne 0 ] && [ $rc -ne 124 ] && log "step exit $rc: $*"
  return 0
}

# archive_init NAME: a fresh work folder WORK whose contents `pack` archives into
# $OUT/NAME.tgz (a device call returns at most 8 files: everything goes into one archive),
# its x/ (exported inputs) left out; the tuning cache in WORK/cache (exports
# WGSPARSE_CACHE_DIR: every plan tuned afresh in the job, the cache kept with its outputs).
archive_init() {
  WORK=$(mktemp -d)
  ARCHIVE=$OUT/$1.tgz
  export WGSPARSE_CACHE_DIR=$WORK/cache
  mkdir -p "$WGSPARSE_CACHE_DIR"
}

# pack: (re)writes $ARCHIVE from $WORK and the job's log; after every step, so a call cut
# at its limit still returns what ran.
pack() {
  cp "$OUT/log.txt" "$WORK/log.txt" 2>/dev/null
  tar czf "$ARCHIVE" --exclude=./x -C "$WORK" .
}

# run_fused TAG ARGS…: `$W fused ARGS… --json` under `timeout "$STEP_LIMIT"`, one line of
# $WORK/runs.tsv (tag, exit status, JSON), then pack.
run_fused() {
  local tag=$1
  shift
  local out
  out=$(timeout "$STEP_LIMIT" "$W" fused "$@" --json 2>>"$WORK/err.txt")
  local rc=$?
  printf '%s\t%s\t%s\n' "$tag" "$rc" "$(echo "$out" | tr -d '\n')" >> "$WORK/runs.tsv"
  log "$tag: exit $rc"
  pack
}

# run_peer NAME DIR: benches/peers/fused_peer.py on the export in DIR (--reps $PEER_REPS,
# --reorder-cols on, --calls-per-event $PEER_CALLS, default 1) into $WORK/peer_NAME.jsonl,
# under `step`, then pack.
run_peer() {
  step python3 benches/peers/fused_peer.py "$2" --reps "$PEER_REPS" --reorder-cols on \
    --calls-per-event "${PEER_CALLS:-1}" > "$WORK/peer_$1.jsonl" 2>>"$WORK/err.txt"
  log "peer $1 done"
  pack
}

# device_tests NAME SECONDS ARGS…: where the test binary .gpu/NAME was shipped (from `cargo
# test --release --test NAME --no-run`), runs it with ARGS against the job's binary into
# $WORK/tests_NAME.txt and logs whether it passed.
device_tests() {
  local name=$1 limit=$2
  shift 2
  [ -x ".gpu/$name" ] || return 0
  WGSPARSE_BIN=$W timeout "$limit" "./.gpu/$name" --test-threads 1 "$@" \
    > "$WORK/tests_$name.txt" 2>&1 && log "$name tests passed" \
    || log "$name tests FAILED (exit $?)"
}

# past_deadline NAME: true (and logged) once $DEADLINE seconds have passed since $start, so
# input NAME is not started.
past_deadline() {
  if [ -n "${DEADLINE:-}" ] && [ $(($(date +%s) - start)) -ge "$DEADLINE" ]; then
    log "deadline: $1 not started"
    return 0
  fi
  return 1
}

# input_done NAME DIR ARGS…: an input's last steps, `auto` tuned afresh on ARGS (the job's
# AUTO=1) and the peer on the export in DIR (PEER=1), then DIR removed and the archive packed.
input_done() {
  local name=$1 dir=$2
  shift 2
  if [ "${AUTO:-1}" = 1 ]; then
    run_fused "$name auto tuned" "$@" --variant auto
  fi
  if [ "${PEER:-1}" = 1 ]; then
    run_peer "$name" "$dir"
  fi
  rm -rf "$dir"
  pack
}
