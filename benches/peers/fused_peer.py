#!/usr/bin/env python3
"""Peer timings for the fused pattern w = α·Xᵀ(v ⊙ (X·y)) + β·z on the exact X, y, v, z, α, β
that `wgsparse fused --gen NAME --export DIR` wrote (with its own result, w_wgsparse.f32).

Every composition the peer libraries offer is timed (CUDA events, median of --reps after a
0.5 s warm-up; with --calls-per-event K, K calls back to back between the events, the time
divided by K) and its output compared with wgsparse's; the fastest correct one is reported
as the peer (`"role": "fastest"`):
  sparse X: CuPy cuSPARSE SpMV with Xᵀ materialized as CSR (the transpose built once, not
            timed, its build time reported); cusparseSpMV with each of its algorithms
            (CSR_ALG1, CSR_ALG2 on CSR; COO_ALG1, COO_ALG2 on COO copies of X and Xᵀ), α and
            β folded into the second call and the work buffers allocated once
            (cusparse_spmv.py), each also with the transpose operation on X instead of Xᵀ
            (where cuSPARSE offers it for the algorithm); CuPy cuSPARSE SpMV with the
            transpose operation (cupyx.cusparse.spmv transa=True), CuPy through the CSC view
            X.T, torch.sparse with Xᵀ materialized as CSR (also replayed as one CUDA graph),
            torch.sparse X.t() per call;
  dense X:  CuPy cuBLAS two gemv (N then T, the β·z folded into the second), torch mv/addmv.
--reorder-cols on (sparse X): the same compositions also on X with its columns re-indexed by
descending entry count (ties: the lower column first), as `wgsparse fused --reorder-cols on`
lays X out, so a gain from that layout is not credited to wgsparse alone. The re-indexed X is
built once on the GPU (not timed, its build time reported as reorder_build_ms; rows sorted by
the new column with cuSPARSE csrsort) and every composition is timed twice more on it:
"+ reindexed cols (y, z gathered, w scattered)" includes the gathers of y and z into the new
order and the scatter of w back (what wgsparse times), "+ reindexed cols (vectors pre-permuted)"
takes y and z already in the new order and leaves w in it (compared with wgsparse's w permuted
the same way). Each record says which in "reorder_cols" ("gathered" or "prepermuted"; absent
on the original X); all are reported and the fastest correct one of all is the peer.
Default off: the original X only.
--cg DIR: linear-regression CG (Listing 1 of Ashari et al.: q = Xᵀ(X·p) + λ·p) in PyTorch on
the dense X in DIR with labels v.f32 (as `wgsparse linreg --gen higgs --export DIR` writes),
for --cg-iters iterations, timed end to end with X resident (no transfer).
Needs python3 with numpy, CuPy and PyTorch on a CUDA GPU; no network. One JSON line per result.
"""
import argparse
import os

import numpy as np

import cusparse_spmv as cs
import peer_common as pc


def sparse_compositions(x, y, v, z, alpha, beta):
    """(name, fn, events, extra) of every sparse composition on the CuPy CSR matrix x and the
    CuPy vectors y, v, z; the transposes are built here (once, not timed)."""
    import cupy
    import cupyx.cusparse as cusparse
    import torch

    m, n = x.shape
    ev = cupy.cuda.Event
    t0, t1 = ev(), ev()
    t0.record()
    xt = x.T.tocsr()
    t1.record()
    t1.synchronize()
    transpose_ms = cupy.cuda.get_elapsed_time(t0, t1)
    xt_csc = x.T

    def materialized():
        p = x @ y
        p *= v
        return alpha * (xt @ p) + beta * z

    def transpose_op():
        p = cusparse.spmv(x, y)
        p *= v
        w = z.copy()
        return cusparse.spmv(x, p, y=w, alpha=alpha, beta=beta, transa=True)

    def csc_view():
        p = x @ y
        p *= v
        return alpha * (xt_csc @ p) + beta * z

    dev = torch.device("cuda")
    tx = torch.sparse_csr_tensor(
        torch.as_tensor(x.indptr, device=dev).long(), torch.as_tensor(x.indices, device=dev).long(),
        torch.as_tensor(x.data, device=dev), size=(m, n))
    txt = tx.t().to_sparse_csr()
    ty, tv, tz = (torch.as_tensor(a, device=dev) for a in (y, v, z))

    def torch_materialized():
        p = torch.mv(tx, ty) * tv
        return torch.addmv(tz, txt, p, beta=beta, alpha=alpha)

    def torch_transpose():
        p = torch.mv(tx, ty) * tv
        return torch.addmv(tz, tx.t(), p, beta=beta, alpha=alpha)

    yield "cupy.cusparse spmv + Xᵀ materialized (csr)", materialized, pc.cupy_events(), {"transpose_build_ms": transpose_ms}
    # cusparseSpMV with each algorithm, α and β folded into the second product, on CSR and
    # on COO copies of X and Xᵀ (the COO copies built here, once, not timed).
    layouts = [("csr", x, xt, (cs.CSR_ALG1, cs.CSR_ALG2))]
    try:
        layouts.append(("coo", x.tocoo(), xt.tocoo(), (cs.COO_ALG1, cs.COO_ALG2)))
    except Exception as e:  # reported as a composition that failed (e.g. out of memory)

        def failed(e=e):
            raise e

        yield "cusparseSpMV on COO (building the copies)", failed, pc.cupy_events(), {}
    for fmt, a, at, algs in layouts:
        for alg in algs:
            yield (f"cusparseSpMV {cs.ALG_NAMES[alg]}, α β folded + Xᵀ materialized ({fmt})",
                   spmv_folded(a, at, alg, (y, v, z), (alpha, beta)), pc.cupy_events(),
                   {"transpose_build_ms": transpose_ms, "spmv_alg": cs.ALG_NAMES[alg]})
            # The same with the transpose operation on X itself (no copy of Xᵀ); cuSPARSE
            # refuses an algorithm that lacks it at the binding, reported as an error.
            yield (f"cusparseSpMV {cs.ALG_NAMES[alg]}, α β folded + transpose op ({fmt})",
                   spmv_folded(a, None, alg, (y, v, z), (alpha, beta)), pc.cupy_events(),
                   {"spmv_alg": cs.ALG_NAMES[alg]})
    # torch.sparse replayed as one CUDA graph: no host work between its launches, which at
    # the small inputs is a large share of the composition's time. (CuPy refuses cuSPARSE
    # calls during a stream capture, so its compositions are not graphed.)
    yield ("torch.sparse mv + Xᵀ materialized (csr), CUDA graph", torch_graphed(torch_materialized),
           pc.torch_events(), {"cuda_graph": True})
    yield "cupy.cusparse spmv transa=True", transpose_op, pc.cupy_events(), {}
    yield "cupy X.T (csc view) @ p", csc_view, pc.cupy_events(), {}
    yield "torch.sparse mv + Xᵀ materialized (csr)", torch_materialized, pc.torch_events(), {}
    yield "torch.sparse mv + X.t() per call", torch_transpose, pc.torch_events(), {}


def spmv_folded(a, at, alg, vectors, scalars):
    """w = α·Aᵀ(v ⊙ (A·y)) + β·z by two cusparseSpMV calls with algorithm `alg`, A·y into p,
    then p scaled by v, then w = β·z (a copy; none where β = 0: z is not read) and
    w += α·At·p inside the second call. `at` is Aᵀ materialized, or None for cuSPARSE's
    transpose operation on A itself. The SpMV bindings and the
    buffers are made on the first call (untimed: the peer's first run is its check); p and
    w are reused, so the function returns the same w each call."""
    import cupy

    y, v, z = vectors
    alpha, beta = scalars
    state = {}

    def fn():
        if not state:
            state["x"] = cs.SpMV(a, alg)
            state["xt"] = cs.SpMV(a, alg, transpose=True) if at is None else cs.SpMV(at, alg)
            state["p"] = cupy.empty(a.shape[0], dtype=cupy.float32)
            state["w"] = cupy.empty(a.shape[1], dtype=cupy.float32)
        p, w = state["p"], state["w"]
        state["x"](y, p)
        p *= v
        if beta != 0:
            cupy.copyto(w, z)
        return state["xt"](p, w, alpha, beta)

    return fn


def torch_graphed(fn):
    """`fn` (PyTorch work) captured once into a CUDA graph and replayed on each call, which
    returns the graph's own output tensor. The first call warms `fn` up on a side stream (as
    PyTorch's graph capture asks) before capturing it; replays run on the current stream, so
    events there time them."""
    import torch

    state = {}

    def run():
        if not state:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(3):
                    fn()
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                out = fn()
            state.update(graph=graph, out=out)
        state["graph"].replay()
        return state["out"]

    return run


def reindexed(x):
    """X with its columns re-indexed by descending entry count (ties: the lower column first),
    rows sorted by the new column, and order[new] = old (CuPy), with the build time in ms."""
    import cupy
    import cupyx.scipy.sparse as cps

    m, n = x.shape
    ev = cupy.cuda.Event
    t0, t1 = ev(), ev()
    t0.record()
    deg = cupy.bincount(x.indices, minlength=n).astype(cupy.int64)
    # One unique key per column: the count descending, then the column ascending.
    order = cupy.argsort((deg.max() - deg) * n + cupy.arange(n, dtype=cupy.int64))
    new_of = cupy.empty(n, dtype=cupy.int32)
    new_of[order] = cupy.arange(n, dtype=cupy.int32)
    xr = cps.csr_matrix((x.data.copy(), new_of[x.indices], x.indptr.copy()), shape=(m, n))
    xr.has_sorted_indices = False
    xr.sort_indices()
    t1.record()
    t1.synchronize()
    return xr, order, cupy.cuda.get_elapsed_time(t0, t1)


def sparse_options(folder, meta, ops, reorder=False):
    """(name, fn, events, extra, order) of every sparse composition: `order` is None when fn
    returns w in X's own column order, else the permutation (order[new] = old) its w is in."""
    import cupy
    import cupyx.scipy.sparse as cps
    import torch

    _, row_ptr, col_idx, values = pc.load_csr(folder)
    m, n = meta["nrows"], meta["ncols"]
    alpha, beta = ops["alpha"], ops["beta"]
    y = cupy.asarray(pc.load_f32(folder, "y.f32", n))
    v = cupy.asarray(pc.load_f32(folder, "v.f32", m))
    z = cupy.asarray(pc.load_f32(folder, "z.f32", n))
    x = cps.csr_matrix(
        (cupy.asarray(values), cupy.asarray(col_idx.astype(np.int32)), cupy.asarray(row_ptr.astype(np.int32))),
        shape=(m, n),
    )
    del row_ptr, col_idx, values
    for name, fn, events, extra in sparse_compositions(x, y, v, z, alpha, beta):
        yield name, fn, events, extra, None
    if not reorder:
        return
    try:
        xr, order, build_ms = reindexed(x)
    except Exception as e:  # reported as a composition that failed (e.g. out of memory)

        def failed(e=e):
            raise e

        yield "reindexed cols (building the layout)", failed, pc.cupy_events(), {}, None
        return
    yr, zr = y[order], z[order]
    order_host = cupy.asnumpy(order)
    torch_order = torch.as_tensor(order, device="cuda").long()
    for name, fn, events, extra in sparse_compositions(xr, yr, v, zr, alpha, beta):
        extra = {**extra, "reorder_build_ms": build_ms}

        def gathered(fn=fn):
            # y and z into the new order (the buffers fn reads), then w back into X's order.
            cupy.take(y, order, out=yr)
            cupy.take(z, order, out=zr)
            wr = fn()
            if isinstance(wr, cupy.ndarray):
                w = cupy.empty_like(wr)
                w[order] = wr
            else:
                w = torch.empty_like(wr)
                w[torch_order] = wr
            return w

        yield (f"{name} + reindexed cols (y, z gathered, w scattered)", gathered, events,
               {**extra, "reorder_cols": "gathered"}, None)
        yield (f"{name} + reindexed cols (vectors pre-permuted)", fn, events,
               {**extra, "reorder_cols": "prepermuted"}, order_host)


def dense_options(folder, meta, ops):
    import cupy
    import cupy.cublas
    import torch

    m, n = meta["nrows"], meta["ncols"]
    alpha, beta = ops["alpha"], ops["beta"]
    x = cupy.asarray(pc.load_f32(folder, "dense.f32", m * n).reshape(m, n))
    y = cupy.asarray(pc.load_f32(folder, "y.f32", n))
    v = cupy.asarray(pc.load_f32(folder, "v.f32", m))
    z = cupy.asarray(pc.load_f32(folder, "z.f32", n))

    p_buf = cupy.empty(m, dtype=cupy.float32)

    def two_gemv():
        # y ← α·op(A)·x + β·y in place (cupy.cublas.gemv handles the row-major layout).
        cupy.cublas.gemv("N", 1.0, x, y, 0.0, p_buf)
        p_buf[...] *= v
        w = z.copy()
        cupy.cublas.gemv("T", float(alpha), x, p_buf, float(beta), w)
        return w

    def cupy_matmul():
        p = (x @ y) * v
        return alpha * (x.T @ p) + beta * z

    tx = torch.as_tensor(x, device="cuda")
    ty, tv, tz = (torch.as_tensor(a, device="cuda") for a in (y, v, z))

    def torch_mv():
        p = torch.mv(tx, ty) * tv
        return torch.addmv(tz, tx.t(), p, beta=beta, alpha=alpha)

    yield "cupy.cublas two gemv (N, T)", two_gemv, pc.cupy_events(), {}, None
    yield "cupy matmul x @ y, x.T @ p", cupy_matmul, pc.cupy_events(), {}, None
    yield "torch mv + addmv(X.t())", torch_mv, pc.torch_events(), {}, None


def pattern(folder, reps, reorder=False, calls=1):
    import cupy
    import torch

    meta = pc.load_meta(folder)
    with open(os.path.join(folder, "operands.json")) as f:
        ops = __import__("json").load(f)
    want = pc.load_f32(folder, "w_wgsparse.f32", meta["ncols"])
    if meta.get("dense"):
        options = dense_options(folder, meta, ops)
    else:
        options = sparse_options(folder, meta, ops, reorder)
    base = {
        "input": os.path.basename(folder.rstrip("/")), "m": meta["nrows"], "n": meta["ncols"],
        "nnz": meta.get("nnz", meta["nrows"] * meta["ncols"]), "pattern": ops["pattern"],
        "device": torch.cuda.get_device_name(), "torch": torch.__version__, "cupy": cupy.__version__,
        "calls_per_event": calls,
    }
    best = None
    for name, fn, events, extra, order in options:
        try:
            got = fn()
            got = got.get() if hasattr(got, "get") else got.cpu().numpy()
            # A w left in the re-indexed order is compared with wgsparse's permuted alike.
            ok, diff = pc.agree(got, want if order is None else want[order])
            ms = pc.cuda_time(fn, reps, events, calls=calls)
        except Exception as e:  # a composition the library refuses is reported, not fatal
            pc.emit({**base, "peer": name, "error": repr(e)})
            continue
        rec = {**base, "peer": name, "ms": ms, "agrees_with_wgsparse": ok, "rel_diff": diff, **extra}
        pc.emit(rec)
        if ok and (best is None or ms < best["ms"]):
            best = rec
    if best is not None:
        pc.emit({**best, "role": "fastest"})


def cg(folder, iters, lam, reps):
    import torch

    meta = pc.load_meta(folder)
    m, n = meta["nrows"], meta["ncols"]
    dev = torch.device("cuda")
    x = torch.from_numpy(pc.load_f32(folder, "dense.f32", m * n).reshape(m, n)).to(dev)
    b = torch.from_numpy(pc.load_f32(folder, "v.f32", m)).to(dev)

    def solve():
        # Listing 1: r = −Xᵀb, p = −r, then `iters` CG steps (only the scalars on the host).
        w = torch.zeros(n, device=dev)
        r = -(x.t() @ b)
        p = -r
        nr2 = torch.dot(r, r)
        for _ in range(iters):
            q = x.t() @ (x @ p) + lam * p
            a = nr2 / torch.dot(p, q)
            w += a * p
            r += a * q
            old = nr2
            nr2 = torch.dot(r, r)
            p = -r + (nr2 / old) * p
        return w

    ms = pc.cuda_time(solve, reps, pc.torch_events())
    pc.emit({"peer": "torch CG (Listing 1)", "input": os.path.basename(folder.rstrip("/")),
             "m": m, "n": n, "iterations": iters, "lambda": lam, "ms": ms,
             "device": torch.cuda.get_device_name(), "torch": torch.__version__})


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="*", help="folders written by `wgsparse fused --export`")
    p.add_argument("--reps", type=int, default=20)
    p.add_argument("--reorder-cols", choices=["off", "on"], default="off",
                   help="sparse X: also time every composition on X with its columns re-indexed by entry count")
    p.add_argument("--calls-per-event", dest="calls", type=int, default=1,
                   help="compositions called back to back between one pair of CUDA events, the time "
                        "divided by them (as `wgsparse fused --runs-per-submit`)")
    p.add_argument("--cg", help="folder with a dense X and labels for the CG comparison")
    p.add_argument("--cg-iters", type=int, default=32)
    p.add_argument("--lambda", dest="lam", type=float, default=0.001)
    args = p.parse_args()
    for folder in args.folders:
        pattern(folder, args.reps, args.reorder_cols == "on", max(1, args.calls))
    if args.cg:
        cg(args.cg, args.cg_iters, args.lam, max(3, args.reps // 4))


if __name__ == "__main__":
    main()
