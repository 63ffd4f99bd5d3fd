"""Sparse DNN peer (GraphChallenge): PyTorch cuSPARSE SpMM per layer on dense activations, on
the network and inputs `wgsparse spdnn --export DIR` wrote (same files, same job).

Per layer: Zᵀ = W_lᵀ · Yᵀ (sparse × dense through cuSPARSE), the bias added where Z ≠ 0,
clamped to [0, 32] (the challenge's reference semantics). Every layout and format torch
offers without a copy in the timed loop is tried and checked; the fastest is the peer:
  csr-rowmajor  W_lᵀ in CSR, Yᵀ row-major (N × rows; cuSPARSE's output is row-major too,
                so no layer copies anything)
  coo-rowmajor  W_lᵀ in COO, Yᵀ row-major
  dense-csr     Y · W_l, Y row-major with W_l in CSR on the right (torch.mm(dense, csr))
(A column-major Yᵀ, the view of row-major Y, would need a transpose copy per layer, since
torch.sparse.mm returns row-major.)
Categories (rows with a nonzero sum at the end) are compared with DIR/categories.tsv.

  python3 spdnn_torch.py DIR [--reps 3] [--formats csr-rowmajor,coo-rowmajor,...]
Prints one JSON line per format and one `peer` line with the fastest that matched.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_common import cuda_time, emit, load_csr, load_meta, torch_events  # noqa: E402

YMAX = 32.0
FORMATS = ["csr-rowmajor", "coo-rowmajor", "dense-csr"]


def load(folder, dev):
    meta = load_meta(folder)
    _, rp, ci, v = load_csr(os.path.join(folder, "inputs"))
    rows, n = meta["rows"], meta["neurons"]
    y = torch.sparse_csr_tensor(
        torch.from_numpy(rp).to(dev), torch.from_numpy(ci).to(dev),
        torch.from_numpy(v).to(dev), size=(rows, n)).to_dense()
    layers = []
    for k in range(1, meta["layers"] + 1):
        _, rp, ci, v = load_csr(os.path.join(folder, f"l{k}"))
        w = torch.sparse_csr_tensor(
            torch.from_numpy(rp), torch.from_numpy(ci), torch.from_numpy(v), size=(n, n)
        )
        layers.append(w)
    return meta, y, layers


def categories_file(folder, rows):
    p = os.path.join(folder, "categories.tsv")
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return sorted(int(t) - 1 for t in f.read().split() if t.strip())


def build(fmt, layers, dev):
    """The per-layer operands of `fmt`, on the device (transposed there: on the host, 1,920
    layers of 16,384 took minutes)."""
    out = []
    for w in layers:
        w = w.to(dev)
        if fmt == "dense-csr":
            out.append(w)
        else:
            wt = w.to_sparse_coo().t().coalesce()
            out.append(wt.to_sparse_csr() if fmt.startswith("csr") else wt)
    return out


def runner(fmt, ws, y0, bias):
    """A function running all layers once; returns the final activations as rows × N."""

    # In place: at N = 65,536 a dense Z is 15.7 GB, and the out-of-place
    # `torch.where(z != 0, z + bias, z).clamp_(0, 32)` made two more of them per layer and
    # moved about twice the memory. With a negative bias (every challenge network's) the mask
    # is not needed: where z == 0, z + bias < 0 and the clamp makes it 0, as the challenge's
    # reference does; so two in-place passes give the same values.
    if bias < 0:

        def act(z):
            return z.add_(bias).clamp_(0.0, YMAX)

    else:

        def act(z):
            zero = z == 0
            z.add_(bias).masked_fill_(zero, 0.0)
            return z.clamp_(0.0, YMAX)

    if fmt == "dense-csr":

        def run():
            y = y0
            for w in ws:
                y = act(torch.mm(y, w))
            return y

    else:
        yt0 = y0.t().contiguous()

        def run():
            yt = yt0
            for w in ws:
                yt = act(torch.sparse.mm(w, yt))
            return yt.t()

    return run


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--formats", default=",".join(FORMATS))
    a = ap.parse_args()
    dev = torch.device("cuda")
    meta, y0, layers = load(a.dir, dev)
    rows, n, bias = meta["rows"], meta["neurons"], meta["bias"]
    want = categories_file(a.dir, rows)
    best = None
    for fmt in a.formats.split(","):
        rec = {"peer": "torch", "format": fmt, "neurons": n, "layers": meta["layers"],
               "rows": rows, "device": torch.cuda.get_device_name()}
        try:
            ws = build(fmt, layers, dev)
            run = runner(fmt, ws, y0, bias)
            y = run()
            got = torch.nonzero(y.sum(dim=1) != 0).flatten().cpu().tolist()
            # The categories' run above is the first run (at 16,384 × 1,920 one takes ~49 s).
            ms = cuda_time(run, a.reps, torch_events(), primed=True)
            eps = rows * meta["edges"] / (ms / 1e3)
            match = None if want is None else (got == want)
            rec.update(ms=ms, edges_per_second=eps, tera_edges=eps / 1e12,
                       active_rows=len(got), categories_match=match)
            if match is False:
                w, g = set(want), set(got)
                rec["missing"] = len(w - g)
                rec["extra"] = len(g - w)
            if match is not False and (best is None or ms < best["ms"]):
                best = dict(rec)
            del ws, run, y
        except Exception as e:  # a format torch does not offer here is reported, not fatal
            rec["error"] = f"{type(e).__name__}: {e}"[:300]
        torch.cuda.empty_cache()
        emit(rec)
    if best is not None:
        best["fastest"] = True
        emit(best)


if __name__ == "__main__":
    main()
