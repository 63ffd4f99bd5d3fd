#!/usr/bin/env bash
# The wide benchmark job (issue 12, cuWide): run on the NVIDIA machine from the repository root
# with the release binary in .gpu/ and the Vulkan loader packages in .gl/ (as gpu_suite.sh).
# Writes JSON lines and a log into $OUT (default ./bench-out).
#   EPOCHS=3 PEER_EPOCHS=3 PEER=1 benches/peers/wide_suite.sh
# Data: the criteo-s shape, `wgsparse gen ctr --samples 5134149 --features 1000000
# --nnz-per-sample 40` (raw CSR + labels), the last 10% held out for validation (90% train:
# 4,620,734 samples, 184.8M nonzeros). Runs, each `wide train --json` (epoch_ms from
# timestamp queries around the epoch's one submission; logloss/auc of the validation set):
#   LR  batch 1024: sync, async          (the issue's bar: ≤ 2 ms per epoch; async is one
#       dispatch per epoch of 1024 persistent workgroups with the per-feature step scale;
#       benches/peers/wide_diag.sh sweeps the workgroups and the scale on a smaller set)
#   LR  batch 1024 async with chunks of 128 samples (fewer duplicate features per chunk), with
#       4096 persistent workgroups asked (capped at 144,398 chunks / 64 = 2,256: S = 70.5 assumed,
#       more than the H200 holds at once, so the scale is conservative there), without
#       the step scale (expected to diverge, as the whole-epoch dispatch did), and with 16
#       lanes per sample (chunks of 16)
#   FM  k = 10, batch 1024: sync, async (2 epochs, --check)  (bar: ≤ 10 ms per epoch)
#   FM  k = 3, batch 1024: async
#   LR and FM k = 10, batch 1024, --mode stage (the baseline: 4 dispatches per mini-batch,
#       Accums and dℓ/dŷ through global memory, one atomic per edge; bar: flow ≥ 10× faster)
#   LR  batch 512 / 16384: sync          (sync pays 2 dispatches per mini-batch)
# --check (LR sync and async, FM sync over 2 epochs) replays each epoch's mini-batches with the
# f64 CPU twin and compares validation logloss (cpu_logloss, check_ok; ± 0.003); it costs
# host time (single-threaded: estimated ≈ 5 s per LR epoch, ≈ 25 s per FM k = 10 epoch).
# KDDB=1 (a second job: ≈ 4 minutes more): the kddb shape, `gen ctr --samples 19264097
# --features 29890095 --nnz-per-sample 30` (578M nonzeros: the training data is cut into parts
# that each fit one 2 GiB binding, all resident), LR sync and async, 2 epochs each, and async
# through the staging ring (--ring: two device slots, parts copied in every epoch; wall clock).
# CRITEO=0 skips the criteo-s runs (e.g. KDDB=1 CRITEO=0 PEER=0 for the kddb job alone).
# PEER=1: benches/peers/wide_torch.py, LR and FM k = 10 on the same folder, same split,
# batch 1024, lr 0.5, PEER_EPOCHS epochs, EmbeddingBag and torch.sparse.mm idioms.
set -uo pipefail
# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
EPOCHS=${EPOCHS:-3}
PEER_EPOCHS=${PEER_EPOCHS:-3}
D=/tmp/wide/criteo_s
mkdir -p /tmp/wide
install_gl
use_wgsparse
$W info --json > "$OUT/wide_info.json" 2>>"$OUT/log.txt"
train() {
  log "wide $*"
  $W wide train --train $D --holdout 0.1 --no-early-stop --lr 0.5 --json "$@" \
    >> "$OUT/wide.jsonl" 2>>"$OUT/log.txt" || log "FAILED (exit $?): $*"
}
if [ "${CRITEO:-1}" = 1 ]; then
log "gen criteo-s"
$W gen ctr --samples 5134149 --features 1000000 --nnz-per-sample 40 --seed 1 --raw --out $D \
  --json >> "$OUT/wide_gen.jsonl" 2>>"$OUT/log.txt" || { log "gen FAILED"; exit 1; }
E="--epochs $EPOCHS"
# The runs the issue's bars need first, then the peer, then the variants.
train $E --model lr --batch 1024 --async --check
train $E --model lr --batch 1024 --sync --check
train --epochs 2 --model fm --k 10 --batch 1024 --sync --check
train --epochs 2 --model fm --k 10 --batch 1024 --async --check
train $E --model lr --batch 1024 --sync --mode stage
train $E --model fm --k 10 --batch 1024 --sync --mode stage
if [ "${PEER:-1}" = 1 ]; then
  log "peer torch"
  python3 benches/peers/wide_torch.py $D --holdout 0.1 --batch 1024 --lr 0.5 \
    --epochs "$PEER_EPOCHS" --models lr,fm10 >> "$OUT/wide_peer.jsonl" 2>>"$OUT/log.txt" \
    || log "peer FAILED"
fi
train $E --model lr --batch 1024 --async --max-chunk 128
train $E --model lr --batch 1024 --async --async-groups 4096
train $E --model lr --batch 1024 --async --no-async-scale
train $E --model lr --batch 1024 --async --lanes 16 --max-chunk 16
train $E --model fm --k 3 --batch 1024 --async
for b in 512 16384; do train $E --model lr --batch $b --sync; done
rm -rf $D
fi
if [ "${KDDB:-0}" = 1 ]; then
  log "gen kddb"
  $W gen ctr --samples 19264097 --features 29890095 --nnz-per-sample 30 --seed 1 --raw \
    --out $D --json >> "$OUT/wide_gen.jsonl" 2>>"$OUT/log.txt" || { log "gen FAILED"; exit 1; }
  train --epochs 2 --model lr --batch 1024 --async
  train --epochs 2 --model lr --batch 1024 --async --ring
  train --epochs 2 --model lr --batch 1024 --sync
  rm -rf $D
fi
log "done"
