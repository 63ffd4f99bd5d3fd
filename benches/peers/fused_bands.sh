#!/usr/bin/env bash
# Sparse X in row bands (X beyond one storage binding) on the NVIDIA machine: what the banded
# path costs against one binding, on the same X in the same job. Run from the repository root
# with the release binary in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh);
# writes JSON lines, a log and summary.txt into $OUT (default ./bench-out).
#   1. sparse-4096 (500k × 4096, 20.5M entries, 82 MB per entry array): every sparse variant,
#      patterns xty and full, checked against the f64 twin, with the adapter's bindings (one
#      band) and with --max-binding-bytes 16 MiB (6 bands).
#   2. kdd2010 (15.0M × 29.9M, 424M entries, 1.7 GB per entry array: one band on the H200's
#      2 GiB bindings): generated and exported once, fused and sorted timed on one band; then
#      the exported X read back and timed at --max-binding-bytes $KDD_BINDINGS (512 MiB: 4
#      bands; add 268435456 for 7).
#   STEP_LIMIT=90    seconds each sparse-4096 step may take;  KDD_LIMIT=300 the kdd2010 export
#   step;  KDD_BAND_LIMIT=110 each banded kdd2010 step
#   SPARSE= (empty) skips part 1;  KDD=0 skips part 2
# Two jobs of under 8 minutes each (worst case, every step at its limit: 3 and 7 minutes):
#   KDD=0 bash benches/peers/fused_bands.sh
#   SPARSE= bash benches/peers/fused_bands.sh
#   SPARSE=sparse-4096 SPARSE_BINDING=16777216 KDD_GEN=kdd2010: the inputs (a smoke test on a
#   small device: SPARSE="demo --scale 0.1" SPARSE_BINDING=16384 KDD_GEN="demo --scale 0.2"
#   KDD_BINDINGS="32768 16384" W=target/release/wgsparse)
# DRY_RUN=1 skips installing .gl/ into / (a dry run elsewhere). The summary is written even
# when steps fail (a step that wrote nothing is named there).
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
STEP_LIMIT=${STEP_LIMIT:-90}
KDD=${KDD:-1}
KDD_BINDINGS=${KDD_BINDINGS:-536870912}
SPARSE=${SPARSE-sparse-4096}
SPARSE_BINDING=${SPARSE_BINDING:-16777216}
KDD_GEN=${KDD_GEN:-kdd2010}
install_gl --dry-run --if-present
use_wgsparse W
job_cache
J="$OUT/fused_bands.jsonl"
# fd 3: the script's stdout, so step()'s messages reach the console and log.txt, not the
# JSON lines its command's stdout is appended to.
exec 3>&1
LOG_FD=3
$W info > "$OUT/info.txt" 2>&1
for B in ${SPARSE:+"" "$SPARSE_BINDING"}; do
  log "$SPARSE all variants --check ${B:+--max-binding-bytes $B}"
  # $SPARSE may carry --scale: split on purpose.
  # shellcheck disable=SC2086
  step $W fused --gen $SPARSE --pattern xty,full --variant fused,sorted,two-pass,unfused \
    --check --reps 20 --json ${B:+--max-binding-bytes $B} >> "$J" 2>>"$OUT/log.txt"
done
if [ "$KDD" = 1 ]; then
  rm -rf /tmp/fused/kdd2010
  log "$KDD_GEN generate + export, fused and sorted on one binding (limit ${KDD_LIMIT:-300}s)"
  # shellcheck disable=SC2086
  STEP_LIMIT=${KDD_LIMIT:-300} step $W fused --gen $KDD_GEN --pattern full --variant fused,sorted --reps 10 \
    --export /tmp/fused/kdd2010 --json >> "$J" 2>>"$OUT/log.txt"
  for B in $KDD_BINDINGS; do
    log "$KDD_GEN (exported) fused and sorted --max-binding-bytes $B"
    STEP_LIMIT=${KDD_BAND_LIMIT:-110} step $W fused --matrix-raw /tmp/fused/kdd2010 --pattern full --variant fused,sorted --reps 10 \
      --max-binding-bytes "$B" --json >> "$J" 2>>"$OUT/log.txt"
  done
  rm -rf /tmp/fused/kdd2010
fi
touch "$J"
python3 - "$J" > "$OUT/summary.txt" <<'EOF' || log "summary FAILED"
import json, sys
if not any(l.startswith("{") for l in open(sys.argv[1])):
    print(f"no result lines in {sys.argv[1]}: every step failed or was skipped (see log.txt)")
print(f"{'input':<22}{'pattern':<8}{'variant':<10}{'bands':>6}{'ms':>10}{'GB/s':>8}{'max rel err':>13}  config / error")
for line in open(sys.argv[1]):
    line = line.strip()
    if not line.startswith("{"):
        continue
    j = json.loads(line)
    name = j["input"]["name"]
    for r in j["results"]:
        m = r.get("measurement")
        if m:
            err = m.get("max_rel_error")
            c = m["config"]
            desc = (f"vs={c['vs']} wg={c['workgroup']} c={c['rows_per_vector']} g={c['groups']} "
                    f"wg-w={c['workgroup_w']} hot={c['hot_cols']} long>{c['long_row']} tile={c['tile']}")
            e = "—" if err is None else f"{err:.1e}"
            print(f"{name:<22}{r['pattern']:<8}{r['variant']:<10}{r.get('bands') or 0:>6}{m['ms']:>10.4f}"
                  f"{m['gbps']:>8.1f}{e:>13}  {desc}")
        else:
            print(f"{name:<22}{r['pattern']:<8}{r['variant']:<10}{'':>6}{'':>10}{'':>8}{'':>13}  {r['error']}")
EOF
cat "$OUT/summary.txt"
log "done"
