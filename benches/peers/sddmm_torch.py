#!/usr/bin/env python3
"""Peer timings for SDDMM: torch.sparse.sampled_addmm (cuSPARSE) on the exact S that
`wgsparse sddmm --export DIR` (or `wgsparse gen suite NAME --raw --out DIR`) wrote.

A and B are drawn here (their values do not change the work); S's pattern and values are
the exported ones. GPU time from CUDA events, median of --reps after warm-up.
Also measures the device-to-device copy bandwidth (the roofline denominator) with --copy.

Prints one JSON object per line.
"""
import argparse
import json
import os

import torch

import peer_common
from peer_common import load_csr


def cuda_time(fn, reps):
    return peer_common.cuda_time(fn, reps, peer_common.torch_events())


def sddmm(folder, ks, reps):
    meta, row_ptr, col_idx, values = load_csr(folder)
    dev = torch.device("cuda")
    s = torch.sparse_csr_tensor(
        torch.from_numpy(row_ptr).to(dev),
        torch.from_numpy(col_idx).to(dev),
        torch.from_numpy(values).to(dev),
        size=(meta["nrows"], meta["ncols"]),
    )
    for k in ks:
        gen = torch.Generator(device=dev).manual_seed(k)
        a = torch.rand(meta["nrows"], k, device=dev, generator=gen) * 2 - 1
        bt = (torch.rand(meta["ncols"], k, device=dev, generator=gen) * 2 - 1).t().contiguous()
        ms = cuda_time(lambda: torch.sparse.sampled_addmm(s, a, bt, beta=0.0, alpha=1.0), reps)
        flops = 2.0 * k * meta["nnz"]
        print(json.dumps({
            "peer": "torch.sparse.sampled_addmm", "matrix": os.path.basename(folder.rstrip("/")),
            "nrows": meta["nrows"], "ncols": meta["ncols"], "nnz": meta["nnz"], "k": k,
            "ms": ms, "gflops": flops / ms / 1e6, "device": torch.cuda.get_device_name(),
            "torch": torch.__version__,
        }), flush=True)
        del a, bt
        torch.cuda.empty_cache()


def copy_bandwidth(mib, reps):
    n = (mib << 20) // 4
    src = torch.ones(n, device="cuda")
    dst = torch.empty_like(src)
    ms = cuda_time(lambda: dst.copy_(src), reps)
    print(json.dumps({
        "peer": "torch copy_", "bytes_moved": 2 * 4 * n, "ms": ms,
        "gbps": 2 * 4 * n / ms / 1e6, "device": torch.cuda.get_device_name(),
    }), flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("folders", nargs="*", help="raw CSR folders")
    p.add_argument("--k", default="32,128,512")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--copy", type=int, default=0, help="also time a copy of this many MiB")
    args = p.parse_args()
    if args.copy:
        copy_bandwidth(args.copy, args.reps)
    ks = [int(k) for k in args.k.split(",")]
    for folder in args.folders:
        sddmm(folder, ks, args.reps)


if __name__ == "__main__":
    main()
