#!/usr/bin/env bash
# SDDMM on several GPUs (issue 14 point 2): the NYTimes shape and dense75k at K = 128, S cut by
# rows and by columns (cuSDDMM) over every GPU, against one GPU of the same machine. Run from
# the repository root on the two-GPU machine with the Vulkan loader packages in .gl/ (as
# gpu_suite.sh) and the release binary in .gpu/wgsparse (cargo build --release --bin wgsparse).
# Writes JSON lines and a log into $OUT (default ./bench-out); ends with a summary table.
#   OUT=$OUT benches/peers/sddmm_multi_suite.sh                        (2 GPUs, a few minutes)
#   WGSPARSE_SHARE_ADAPTERS=1 GPUS=2 SCALE=0.3 OUT=$OUT benches/peers/sddmm_multi_suite.sh
#       (one GPU opened as two devices: the path end to end; its figures share one GPU)
# Environment: GPUS (default all), INPUTS (default "nytimes dense75k"), K (default 128),
# SCALE (suite scale, default 1), VARIANT (default auto: each GPU tunes its own part),
# OVERLAP=1 (--overlap-write: A and B written in pieces, each piece's device copy queued as it
# is laid out; compare with a run without it), OVERLAP_READ=1 (--overlap-read: P read back in
# pieces of rows through two read buffers in rotation, the next piece's device copy under the
# host's copy of this one; row cut and its one-GPU baseline only, the column cut reads whole).
# Every run is checked against the f64 twin (sampled) and exits non-zero on a mismatch.
# What to look for (issue 14: ≥ 1.8× one GPU end to end per iteration, plans reused):
# one_gpu_end_to_end_ms / end_to_end_ms per cut (P read back in CSR order), the same for the
# iteration with P left on the GPUs (resident_ms), the kernel ratio beside them, and in the
# second table where each iteration's time goes (write A/B = layout + copy, run, readback =
# copy + map, gather; host share = end to end less the kernel). docs/multi-gpu.md says what an
# iteration includes.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
GPUS=${GPUS:-all}
INPUTS=${INPUTS:-"nytimes dense75k"}
K=${K:-128}
SCALE=${SCALE:-1}
VARIANT=${VARIANT:-auto}
OVERLAP_FLAG=""
[ "${OVERLAP:-0}" = 1 ] && OVERLAP_FLAG="--overlap-write"
[ "${OVERLAP_READ:-0}" = 1 ] && OVERLAP_FLAG="$OVERLAP_FLAG --overlap-read"
install_gl --quiet
use_wgsparse
job_cache
J="$OUT/sddmm_multi.jsonl"
$W info >> "$OUT/log.txt" 2>&1
for input in $INPUTS; do
  log "sddmm --gen $input --scale $SCALE --k $K --gpus $GPUS --cut both $OVERLAP_FLAG"
  $W sddmm --gen "$input" --scale "$SCALE" --k "$K" --variant "$VARIANT" --gpus "$GPUS" \
    --cut both --check --json $OVERLAP_FLAG >> "$J" 2>>"$OUT/log.txt" \
    || log "FAILED (exit $?): $input"
done
python3 - "$J" <<'PY' | tee "$OUT/summary.txt"
import json, sys
print(f'{"matrix":>12} {"cut":>8} {"variant":>10} {"GPUs":>4} {"kernel ms":>10} {"1 GPU":>8} '
      f'{"e2e ms":>8} {"1 GPU":>8} {"e2e x":>6} {"max rel err":>12}')
for line in open(sys.argv[1]):
    r = json.loads(line)
    for x in r["results"]:
        print(f'{r["matrix"]["name"]:>12} {x["cut"]:>8} {x["variant"]:>10} {len(r["gpus"]):>4} '
              f'{x["kernel_ms"]:>10.3f} {x["one_gpu_kernel_ms"]:>8.3f} {x["end_to_end_ms"]:>8.3f} '
              f'{x["one_gpu_end_to_end_ms"]:>8.3f} '
              f'{x["one_gpu_end_to_end_ms"] / x["end_to_end_ms"]:>6.2f} {x["max_rel_error"]!s:>12}')
print()
# write = layout + copy, readback = copy + map (older files lack the parts: shown as "-").
# A pieced read-back's readback runs to its last piece mapped (earlier pieces' host copies
# hidden in it); its gather is the last piece's host copy, the part not hidden.
print(f'{"matrix":>12} {"cut":>8} {"write mode":>10} {"read":>6} {"GPUs":>4} {"P on GPUs ms":>12} '
      f'{"x 1 GPU":>7} {"host share ms":>13} {"write":>8} {"layout":>8} {"copy":>8} {"run":>8} '
      f'{"readback":>8} {"copy":>8} {"map":>8} {"gather":>8}')
part = lambda b, k: f'{b[k]:>8.2f}' if k in b else f'{"-":>8}'
for line in open(sys.argv[1]):
    r = json.loads(line)
    for x in r["results"]:
        for pre, n in (("", len(r["gpus"])), ("one_gpu_", 1)):
            b = x[pre + "breakdown_ms"]
            host = x[pre + "end_to_end_ms"] - x[pre + "kernel_ms"]
            ratio = f'{x["one_gpu_resident_ms"] / x["resident_ms"]:.2f}' if not pre else ""
            print(f'{r["matrix"]["name"]:>12} {x["cut"]:>8} {x.get("write_mode", "staged"):>10} '
                  f'{x.get("read_mode", "whole"):>6} {n:>4} {x[pre + "resident_ms"]:>12.2f} '
                  f'{ratio:>7} {host:>13.2f} '
                  f'{b["write"]:>8.2f} {part(b, "write_layout")} {part(b, "write_copy")} '
                  f'{b["run"]:>8.2f} {b["readback"]:>8.2f} {part(b, "readback_copy")} '
                  f'{part(b, "readback_map")} {b["gather"]:>8.2f}')
PY
log "done"
