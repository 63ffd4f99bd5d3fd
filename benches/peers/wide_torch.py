"""PyTorch peer of `wgsparse wide train`: the same LR / FM mini-batch SGD on the same data
(a raw CSR folder with labels.f32 from `wgsparse gen ctr --raw`), the same holdout split,
batch, lr and epochs, in two idioms, reporting each and the fastest:

  embbag  nn.EmbeddingBag(mode="sum", sparse=True) with per_sample_weights = x (w·x and
          v_f·x), the FM square term from an nn.Embedding(sparse=True) lookup and index_add_;
          torch.optim.SGD on sparse gradients
  spmm    the mini-batch as a CSR tensor, torch.sparse.mm(X_b, W) with dense parameters and
          dense SGD

Each epoch: mini-batches of consecutive samples in a shuffled batch order, loss
log(1 + e^{−yŷ}) averaged over the mini-batch, θ −= lr·∇. Epoch time from CUDA events
around the epoch (data resident on the GPU); validation logloss and AUC after each epoch.
One JSON line per (model, idiom), then one per model naming the fastest idiom.

  python3 wide_torch.py FOLDER --holdout 0.1 --batch 1024 --lr 0.5 --epochs 3 --models lr,fm10
"""
import argparse
import os
import statistics
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import emit, load_csr, load_f32  # noqa: E402


def auc(scores, labels):
    """Exact AUC, ties counted half (labels > 0 positive)."""
    s = scores.double()
    order = torch.argsort(s)
    s = s[order]
    pos = (labels[order] > 0).double()
    # Average ranks over ties.
    uniq, inverse, counts = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    ends = torch.cumsum(counts, 0).double()
    starts = ends - counts.double() + 1
    ranks = ((starts + ends) / 2)[inverse]
    n_pos = pos.sum()
    n_neg = pos.numel() - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    return float(((ranks * pos).sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


class Data:
    """CSR arrays on the GPU and the rows of each mini-batch."""

    def __init__(self, row_ptr, col, val, y, dev):
        self.row_ptr = torch.from_numpy(row_ptr).to(dev)
        self.row_ptr_host = row_ptr
        self.col = torch.from_numpy(col).to(dev)
        self.val = torch.from_numpy(val).to(dev)
        self.y = torch.from_numpy(y).to(dev)
        self.n = y.size
        nnz_per_row = np.diff(row_ptr)
        self.row_of = torch.from_numpy(np.repeat(np.arange(self.n), nnz_per_row)).to(dev)

    def batch(self, b0, b1):
        """(cols, values, offsets relative to the batch, row ids relative, labels)."""
        e0, e1 = int(self.row_ptr_host[b0]), int(self.row_ptr_host[b1])
        offsets = self.row_ptr[b0:b1] - e0
        return (
            self.col[e0:e1],
            self.val[e0:e1],
            offsets,
            self.row_of[e0:e1] - b0,
            self.y[b0:b1],
            self.row_ptr[b0 : b1 + 1] - e0,
        )


def logloss(yhat, y):
    return torch.nn.functional.softplus(-y * yhat).mean()


class EmbBag(torch.nn.Module):
    def __init__(self, m, k, dev):
        super().__init__()
        self.k = k
        self.w = torch.nn.EmbeddingBag(m, 1, mode="sum", sparse=True).to(dev)
        torch.nn.init.zeros_(self.w.weight)
        self.b = torch.nn.Parameter(torch.zeros(1, device=dev))
        if k:
            self.v = torch.nn.Embedding(m, k, sparse=True).to(dev)
            torch.nn.init.normal_(self.v.weight, 0.0, 0.01)

    def forward(self, cols, vals, offsets, rows, nrows):
        yhat = self.w(cols, offsets, per_sample_weights=vals).squeeze(1) + self.b
        if self.k:
            e = self.v(cols) * vals[:, None]
            s = torch.zeros(nrows, self.k, device=e.device).index_add_(0, rows, e)
            s2 = torch.zeros(nrows, self.k, device=e.device).index_add_(0, rows, e * e)
            yhat = yhat + 0.5 * (s * s - s2).sum(1)
        return yhat

    def optimizer(self, lr):
        sparse = [self.w.weight] + ([self.v.weight] if self.k else [])
        return [torch.optim.SGD(sparse, lr=lr), torch.optim.SGD([self.b], lr=lr)]


class SpMM(torch.nn.Module):
    def __init__(self, m, k, dev):
        super().__init__()
        self.k = k
        self.m = m
        self.w = torch.nn.Parameter(torch.zeros(m, 1 + k, device=dev))
        if k:
            with torch.no_grad():
                self.w[:, 1:].normal_(0.0, 0.01)
        self.b = torch.nn.Parameter(torch.zeros(1, device=dev))

    def forward(self, cols, vals, crow, nrows):
        x = torch.sparse_csr_tensor(crow, cols, vals, size=(nrows, self.m))
        if not self.k:
            return torch.sparse.mm(x, self.w).squeeze(1) + self.b
        x2 = torch.sparse_csr_tensor(crow, cols, vals * vals, size=(nrows, self.m))
        a = torch.sparse.mm(x, self.w)
        s = a[:, 1:]
        s2 = torch.sparse.mm(x2, self.w[:, 1:] * self.w[:, 1:])
        return a[:, 0] + self.b + 0.5 * (s * s - s2).sum(1)

    def optimizer(self, lr):
        return [torch.optim.SGD(self.parameters(), lr=lr)]


def run(idiom, k, train, valid, m, args, dev):
    torch.manual_seed(args.seed)
    model = (EmbBag if idiom == "embbag" else SpMM)(m, k, dev)
    opts = model.optimizer(args.lr)
    n_batches = (train.n + args.batch - 1) // args.batch
    gen = torch.Generator().manual_seed(args.seed)

    def step(b0, b1):
        cols, vals, offsets, rows, y, crow = train.batch(b0, b1)
        yhat = (
            model(cols, vals, offsets, rows, b1 - b0)
            if idiom == "embbag"
            else model(cols, vals, crow, b1 - b0)
        )
        loss = logloss(yhat, y)
        for o in opts:
            o.zero_grad(set_to_none=True)
        loss.backward()
        for o in opts:
            o.step()

    @torch.no_grad()
    def evaluate():
        out = []
        for b0 in range(0, valid.n, 65536):
            b1 = min(valid.n, b0 + 65536)
            cols, vals, offsets, rows, y, crow = valid.batch(b0, b1)
            out.append(
                model(cols, vals, offsets, rows, b1 - b0)
                if idiom == "embbag"
                else model(cols, vals, crow, b1 - b0)
            )
        yhat = torch.cat(out)
        return float(logloss(yhat, valid.y)), auc(yhat, valid.y)

    epochs = []
    for epoch in range(args.epochs):
        order = torch.randperm(n_batches, generator=gen).tolist()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        start.record()
        for b in order:
            step(b * args.batch, min(train.n, (b + 1) * args.batch))
        end.record()
        end.synchronize()
        ll, a = evaluate()
        epochs.append({"epoch": epoch + 1, "epoch_ms": start.elapsed_time(end), "logloss": ll, "auc": a})
        print(f"{idiom} k={k} epoch {epoch + 1}: {epochs[-1]}", file=sys.stderr, flush=True)
    return epochs


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder")
    p.add_argument("--holdout", type=float, default=0.1)
    p.add_argument("--batch", type=int, default=1024)
    p.add_argument("--lr", type=float, default=0.5)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--models", default="lr,fm10")
    p.add_argument("--idioms", default="embbag,spmm")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    dev = torch.device("cuda")
    meta, row_ptr, col, val = load_csr(args.folder)
    y01 = load_f32(args.folder, "labels.f32", meta["nrows"])
    y = np.where(y01 > 0, 1.0, -1.0).astype(np.float32)
    n = meta["nrows"]
    # As `wide train --holdout`: the last round(n·holdout) samples validate.
    split = n - int(round(n * args.holdout))
    e_split = int(row_ptr[split])
    train = Data(row_ptr[: split + 1], col[:e_split], val[:e_split], y[:split], dev)
    valid = Data(row_ptr[split:] - e_split, col[e_split:], val[e_split:], y[split:], dev)
    m = meta["ncols"]
    for name in args.models.split(","):
        k = 0 if name == "lr" else int(name[2:])
        results = {}
        for idiom in args.idioms.split(","):
            try:
                epochs = run(idiom, k, train, valid, m, args, dev)
            except Exception as e:  # report and go on with the next idiom
                emit({"peer": "torch", "model": name, "idiom": idiom, "error": repr(e)})
                continue
            ms = statistics.median(e["epoch_ms"] for e in epochs)
            rec = {
                "peer": "torch",
                "torch": torch.__version__,
                "device": torch.cuda.get_device_name(),
                "model": name,
                "idiom": idiom,
                "batch": args.batch,
                "lr": args.lr,
                "n_train": train.n,
                "n_valid": valid.n,
                "nnz_train": int(e_split),
                "epoch_ms_median": ms,
                "logloss": epochs[-1]["logloss"],
                "auc": epochs[-1]["auc"],
                "epochs": epochs,
            }
            results[idiom] = rec
            emit(rec)
        if results:
            best = min(results.values(), key=lambda r: r["epoch_ms_median"])
            emit({"peer": "torch", "model": name, "fastest": best["idiom"],
                  "epoch_ms_median": best["epoch_ms_median"], "logloss": best["logloss"],
                  "auc": best["auc"]})


if __name__ == "__main__":
    main()
