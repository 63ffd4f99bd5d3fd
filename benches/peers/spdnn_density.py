#!/usr/bin/env python3
"""What the early layers' inputs look like (issue 10): per layer, on the host in f64, of a
network and inputs written by `wgsparse spdnn --export DIR`: the rows alive, the share of
nonzero activations, the rows that are one value, the columns where a tile's 4 consecutive
active rows are all zero (a vec4 of `spdnn.sliced`'s staging), the (4 rows × slice) blocks
all zero (a staged slice whose gathers could be skipped), and the distinct values.

    wgsparse spdnn --neurons 16384 --layers 12 --rows 256 --input IDX --reps 0 --json \\
        --export /tmp/net16k
    python3 benches/peers/spdnn_density.py /tmp/net16k [--slice 3059]
"""
import argparse
import json
import os

import numpy as np
import scipy.sparse as sp


def csr(folder):
    """A raw CSR folder (`io::write_csr_binary`) as a scipy matrix of f64."""
    meta = json.load(open(os.path.join(folder, "meta.json")))
    words = lambda name, t: np.fromfile(os.path.join(folder, name), t)
    rp, ci = words("row_ptr.u32", np.uint32), words("col_idx.u32", np.uint32)
    v = words("values.f32", np.float32).astype(np.float64)
    return sp.csr_matrix((v, ci, rp), shape=(meta["nrows"], meta["ncols"]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--slice", type=int, default=3059, help="columns per staged slice")
    a = ap.parse_args()
    meta = json.load(open(os.path.join(a.dir, "meta.json")))
    n, bias, s = meta["neurons"], meta["bias"], a.slice
    y = csr(os.path.join(a.dir, "inputs")).toarray()
    print("| layer | rows alive | nonzero | constant rows | zero 4-row columns "
          "| zero 4-row × slice blocks | distinct values |")
    print("|---|---|---|---|---|---|---|")
    for k in range(1, meta["layers"] + 1):
        w = csr(os.path.join(a.dir, f"l{k}"))
        act = y[(y != 0).any(axis=1)]
        const = np.mean([(r == r[0]).all() for r in act]) if len(act) else 0.0
        g = len(act) // 4 * 4
        quad = (act[:g] != 0).reshape(-1, 4, n).any(axis=1)
        slices = range(0, n, s)
        blocks = [not quad[i, c:c + s].any() for i in range(quad.shape[0]) for c in slices]
        print(f"| {k} | {len(act)} | {(act != 0).mean():.3f} | {const:.2f} "
              f"| {1 - quad.mean():.3f} | {np.mean(blocks) if blocks else 0:.3f} "
              f"| {len(np.unique(act))} |")
        z = (sp.csr_matrix(y) @ w).toarray()
        y = np.where(z != 0, np.clip(z + bias, 0, 32), 0)


if __name__ == "__main__":
    main()
