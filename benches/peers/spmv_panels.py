#!/usr/bin/env python3
"""Would column panels speed the gathers of the fused pattern at the KDD2010 shape?

At 15M × 29.9M with 424M entries both products of the pattern (p = X·y and w = Xᵀ·p) are
gather-bound: y is 120 MB and p 60 MB, beyond the L2, so most gathers are a 32-byte sector
from memory. Cutting X into P column panels (each y slice a fraction of the L2) and summing
the panels' products trades P passes over the output for gathers that hit the L2. This script
measures that trade with cuSPARSE SpMV (CuPy) on a synthetic X of the same shape: columns drawn
Zipf(1.1) in re-indexed order (column 0 the hottest, as `--reorder-cols on` lays X out), rows
uniform (Poisson degrees around 28); or, with --matrix-raw DIR, on the X that
`wgsparse fused --gen kdd2010 --export DIR` wrote, re-indexed as fused_peer.py does. For P in
PANELS it times
  X·y    as Σ_k X[:, panel k] · y[panel k]     (panels of equal column width),
  Xᵀ·p   as Σ_b X[band b, :]ᵀ · p[band b]     (Xᵀ materialized per band of X's rows),
each summed by cuSPARSE's beta = 1 into one output, checked against P = 1. One JSON line per
result: {"product", "panels", "ms", "slice_mb", "rel_diff"}. Needs CuPy on a CUDA GPU.
  --rows 15009374 --cols 29890095 --nnz 423865484 --panels 1,2,4,8 --reps 20 --seed 7
  [--matrix-raw DIR]
"""
import argparse

import numpy as np

import peer_common as pc


def synthetic(m, n, nnz, seed):
    """A CSR X (CuPy) of m × n with about nnz entries: Zipf(1.1) columns, uniform rows,
    duplicates merged, values uniform in [−1, 1]."""
    import cupy
    import cupyx.scipy.sparse as sp

    rng = cupy.random.default_rng(seed)
    s = 1.1
    u = rng.random(nnz, dtype=cupy.float64)
    # The inverse of the continuous Zipf CDF on [1, n + 1): column 0 the hottest.
    top = (n + 1.0) ** (1.0 - s)
    cols = cupy.floor((1.0 + u * (top - 1.0)) ** (1.0 / (1.0 - s))).astype(cupy.int64) - 1
    cols = cupy.clip(cols, 0, n - 1)
    del u
    rows = rng.integers(0, m, nnz, dtype=cupy.int64)
    keys = cupy.unique(rows * n + cols)
    del rows, cols
    rows = (keys // n).astype(cupy.int32)
    cols = (keys % n).astype(cupy.int32)
    del keys
    vals = rng.random(rows.size, dtype=cupy.float32) * 2 - 1
    indptr = cupy.zeros(m + 1, dtype=cupy.int32)
    indptr[1:] = cupy.cumsum(cupy.bincount(rows, minlength=m)).astype(cupy.int32)
    return sp.csr_matrix((vals, cols, indptr), shape=(m, n)), rows


def exported(folder):
    """The exported X (CuPy CSR) with its columns re-indexed, and each entry's row."""
    import cupy
    import cupyx.scipy.sparse as sp

    from fused_peer import reindexed

    meta, row_ptr, col_idx, values = pc.load_csr(folder)
    m, n = meta["nrows"], meta["ncols"]
    x = sp.csr_matrix(
        (cupy.asarray(values), cupy.asarray(col_idx.astype(np.int32)),
         cupy.asarray(row_ptr.astype(np.int32))), shape=(m, n))
    del row_ptr, col_idx, values
    x, _, _ = reindexed(x)
    rows = cupy.repeat(cupy.arange(m, dtype=cupy.int32), cupy.diff(x.indptr).astype(cupy.int64))
    return x, rows


def column_panels(x, rows, panels):
    """X cut into `panels` CSR matrices of equal column width: [(lo, hi, X[:, lo:hi])]."""
    import cupy
    import cupyx.scipy.sparse as sp

    m, n = x.shape
    out = []
    for k in range(panels):
        lo, hi = n * k // panels, n * (k + 1) // panels
        keep = (x.indices >= lo) & (x.indices < hi)
        indptr = cupy.zeros(m + 1, dtype=cupy.int32)
        indptr[1:] = cupy.cumsum(cupy.bincount(rows[keep], minlength=m)).astype(cupy.int32)
        part = sp.csr_matrix((x.data[keep], x.indices[keep] - lo, indptr), shape=(m, hi - lo))
        out.append((lo, hi, part))
    return out


def row_bands_transposed(x, bands):
    """Xᵀ per band of X's rows: [(lo, hi, X[lo:hi, :]ᵀ as CSR)]."""
    m, _ = x.shape
    out = []
    for b in range(bands):
        lo, hi = m * b // bands, m * (b + 1) // bands
        out.append((lo, hi, x[lo:hi, :].T.tocsr()))
    return out


def summed(parts, vec, out_len):
    """fn() computing Σ parts[k] · vec[lo:hi] into one output by cuSPARSE's beta = 1."""
    import cupy
    import cupyx.cusparse as cusparse

    slices = [(part, vec[lo:hi]) for lo, hi, part in parts]

    def run():
        acc = cupy.zeros(out_len, dtype=cupy.float32)
        for part, piece in slices:
            cusparse.spmv(part, piece, y=acc, alpha=1.0, beta=1.0)
        return acc

    return run


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=15_009_374)
    ap.add_argument("--cols", type=int, default=29_890_095)
    ap.add_argument("--nnz", type=int, default=423_865_484)
    ap.add_argument("--panels", default="1,2,4,8")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--matrix-raw", metavar="DIR", help="an exported X instead of the synthetic one")
    args = ap.parse_args()
    import cupy

    counts = [int(p) for p in args.panels.split(",")]
    if args.matrix_raw:
        x, rows = exported(args.matrix_raw)
    else:
        x, rows = synthetic(args.rows, args.cols, args.nnz, args.seed)
    m, n = x.shape
    rng = cupy.random.default_rng(args.seed + 1)
    y = rng.random(n, dtype=cupy.float32) * 2 - 1
    p = rng.random(m, dtype=cupy.float32) * 2 - 1
    pc.emit({"matrix": [m, n], "nnz": int(x.nnz), "device": cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()})
    events = pc.cupy_events()
    for product, vec, out_len, cut in (
        ("X·y", y, m, lambda k: column_panels(x, rows, k)),
        ("Xᵀ·p", p, n, lambda k: row_bands_transposed(x, k)),
    ):
        want = None
        for k in counts:
            parts = cut(k)
            fn = summed(parts, vec, out_len)
            got = cupy.asnumpy(fn())
            if want is None:
                want = got
            ok, diff = pc.agree(got, want, rtol=1e-4)
            ms = pc.cuda_time(fn, args.reps, events, primed=True)
            slice_mb = max(hi - lo for lo, hi, _ in parts) * 4 / 1e6
            pc.emit({"product": product, "panels": k, "ms": ms, "slice_mb": slice_mb,
                     "agrees": ok, "rel_diff": diff})
            del parts, fn
            cupy.get_default_memory_pool().free_all_blocks()
    del rows
    pc.emit({"done": True, "mean_row": float(np.float64(x.nnz) / m)})


if __name__ == "__main__":
    main()
