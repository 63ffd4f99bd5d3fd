#!/usr/bin/env python3
"""Peer timings for SDDMM: torch.sparse.sampled_addmm (cuSPARSE) on the exact S that
`wgsparse sddmm --export DIR` (or `wgsparse gen suite NAME --raw --out DIR`) wrote.

The peer runs in its best configuration: every layout of A and B that `sampled_addmm`
accepts without a copy inside the timed region is timed — A row-major (M×K) or column-major
(a transposed view of K×M) and B as the transpose view of a row-major N×K matrix (the layout
wgsparse reads) or as a row-major K×N matrix — and, where CUDA supports them, f16 and bf16
operands in the fastest f32 layout (the peer for reduced-precision modes). Every layout's output is checked against the f32 reference layout and, when the
folder holds wgsparse's own operands and sampled output for that K (`sddmm --export`
writes `a-kK.f32`, `b-kK.f32`, `p-kK.f32`, `p-kK.json`), against wgsparse's P on the same
inputs. The fastest f32 layout that agrees is "the peer"; every layout is reported.
`sampled_addmm` samples A·Bᵀ at S's pattern but does not multiply by S's values as P does:
that product is applied before comparing and left out of the peer's time.

GPU time from CUDA events, median of --reps after warm-up. --copy also measures the
device-to-device copy bandwidth (the roofline denominator).

Prints one JSON object per line: one per (matrix, K, layout) with "layout", and one summary
per (matrix, K) with "peer": "torch.sparse.sampled_addmm" and the fastest layout's time.
"""
import argparse
import json
import os

import torch

import peer_common
from peer_common import load_csr


def cuda_time(fn, reps):
    return peer_common.cuda_time(fn, reps, peer_common.torch_events())


def operands(folder, meta, k, dev):
    """wgsparse's own A and B for this K when exported, else seeded uniform ±1 ones, and
    wgsparse's sampled P (indices, values) when exported."""
    a_path = os.path.join(folder, f"a-k{k}.f32")
    if os.path.exists(a_path):
        a = torch.from_numpy(np.fromfile(a_path, dtype="<f4")).view(meta["nrows"], k)
        b = torch.from_numpy(np.fromfile(os.path.join(folder, f"b-k{k}.f32"), dtype="<f4"))
        b = b.view(meta["ncols"], k)
        with open(os.path.join(folder, f"p-k{k}.json")) as f:
            step = json.load(f)["step"]
        ours = torch.from_numpy(np.fromfile(os.path.join(folder, f"p-k{k}.f32"), dtype="<f4"))
        return a.to(dev), b.to(dev), (step, ours.to(dev))
    gen = torch.Generator(device=dev).manual_seed(k)
    a = torch.rand(meta["nrows"], k, device=dev, generator=gen) * 2 - 1
    b = torch.rand(meta["ncols"], k, device=dev, generator=gen) * 2 - 1
    return a, b, None


def layouts(a, b, dtype):
    """(name, mat1, mat2) for every operand layout sampled_addmm takes; the copies that make
    the column-major and row-major variants are made here, outside the timed region."""
    a = a.to(dtype)
    b = b.to(dtype)
    a_cm = a.t().contiguous().t()  # M×K, column-major
    b_kn = b.t().contiguous()  # K×N, row-major
    return [
        ("A row-major, B = (N×K row-major).t()", a, b.t()),
        ("A row-major, B = K×N row-major", a, b_kn),
        ("A column-major, B = (N×K row-major).t()", a_cm, b.t()),
        ("A column-major, B = K×N row-major", a_cm, b_kn),
    ]


def sddmm(folder, ks, reps, half):
    meta, row_ptr, col_idx, values = load_csr(folder)
    name = os.path.basename(folder.rstrip("/"))
    dev = torch.device("cuda")
    crow = torch.from_numpy(row_ptr).to(dev)
    col = torch.from_numpy(col_idx).to(dev)
    vals = torch.from_numpy(values).to(dev)
    size = (meta["nrows"], meta["ncols"])
    base = {
        "matrix": name, "nrows": meta["nrows"], "ncols": meta["ncols"], "nnz": meta["nnz"],
        "device": torch.cuda.get_device_name(), "torch": torch.__version__,
    }
    dtypes = [torch.float32] + ([torch.float16, torch.bfloat16] if half else [])
    for k in ks:
        a, b, ours = operands(folder, meta, k, dev)
        flops = 2.0 * k * meta["nnz"]
        reference = None
        best = {}
        for dtype in dtypes:
            s = torch.sparse_csr_tensor(crow, col, vals.to(dtype), size=size)
            for label, m1, m2 in layouts(a, b, dtype):
                if dtype != torch.float32 and torch.float32 in best and \
                        label != best[torch.float32]["layout"]:
                    continue
                row = dict(base, k=k, dtype=str(dtype).replace("torch.", ""), layout=label)
                try:
                    out = torch.sparse.sampled_addmm(s, m1, m2, beta=0.0, alpha=1.0)
                    # sampled_addmm samples A·Bᵀ at S's pattern without S's values; P scales
                    # by them (an elementwise product outside the timed region, which spares
                    # the peer that pass).
                    got = out.values().float() * vals
                except RuntimeError as e:
                    print(json.dumps(dict(row, error=str(e).splitlines()[0])), flush=True)
                    continue
                if reference is None:
                    reference = got
                # f32 layouts must agree to rounding; reduced precision to its own epsilon.
                scale = reference.abs().max().item() + 1e-30
                err = (got - reference).abs().max().item() / scale
                row["max_rel_diff_vs_first_layout"] = err
                tol = 1e-5 if dtype == torch.float32 else 2e-2
                if ours is not None:
                    step, p = ours
                    diff = (got[::step][: p.numel()] - p).abs().max().item() / scale
                    row["max_rel_diff_vs_wgsparse"] = diff
                    ok = err <= tol and diff <= max(tol, 1e-5)
                else:
                    ok = err <= tol
                row["agrees"] = ok
                del out, got
                ms = cuda_time(lambda: torch.sparse.sampled_addmm(s, m1, m2, beta=0.0,
                                                                  alpha=1.0), reps)
                row.update(ms=ms, gflops=flops / ms / 1e6)
                print(json.dumps(row), flush=True)
                if ok and (dtype not in best or ms < best[dtype]["ms"]):
                    best[dtype] = row
            del s
            torch.cuda.empty_cache()
        for dtype, row in best.items():
            summary = dict(base, k=k, peer="torch.sparse.sampled_addmm", dtype=row["dtype"],
                           layout=row["layout"], ms=row["ms"], gflops=row["gflops"],
                           checked_against_wgsparse=ours is not None)
            print(json.dumps(summary), flush=True)
        del a, b, ours
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
    p.add_argument("--no-half", action="store_true", help="skip the f16/bf16 attempts")
    p.add_argument("--copy", type=int, default=0, help="also time a copy of this many MiB")
    args = p.parse_args()
    if args.copy:
        copy_bandwidth(args.copy, args.reps)
    ks = [int(k) for k in args.k.split(",")]
    for folder in args.folders:
        sddmm(folder, ks, args.reps, not args.no_half)


if __name__ == "__main__":
    main()
