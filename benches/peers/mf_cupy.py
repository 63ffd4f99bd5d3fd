#!/usr/bin/env python3
"""Peer for `wgsparse mf train`: cuMF_SGD's batch-Hogwild! kernel written in CUDA and run
through CuPy on the same 12-byte binary rating files (`wgsparse gen ratings --binary`).

The kernel follows cuMF_SGD's published design (k = 128, one warp per worker, each lane
holding 4 features of p_u and q_v, warp-shuffle dot product, f32 arithmetic, f16 or f32
storage, `--batch` consecutive samples from random starts, lr = alpha / (1 + beta t^1.5))
with the same preprocessing as wgsparse (ratings and lambda divided by their standard
deviation, features uniform in [0, sqrt(1/k)), samples shuffled once, model rescaled for the
test RMSE). Each worker's starts come from its own PCG stream, as in wgsparse. Epochs are
timed with CUDA events; updates/s = epochs * nnz / time. One JSON line per configuration:

  python3 benches/peers/mf_cupy.py TRAIN.bin TEST.bin --workers 6864,13728 --precision f16,f32
"""
import argparse
import json
import math

import cupy as cp
import numpy as np

SOURCE = r"""
#include <cuda_fp16.h>

__device__ __forceinline__ unsigned pcg_hash(unsigned v) {
    unsigned s = v * 747796405u + 2891336453u;
    unsigned w = ((s >> ((s >> 28u) + 4u)) ^ s) * 277803737u;
    return (w >> 22u) ^ w;
}

#define BODY(LOAD, STORE)                                                                   \
    int lane = threadIdx.x & 31;                                                            \
    int worker = (blockIdx.x * blockDim.x + threadIdx.x) >> 5;                              \
    if (worker >= workers) return;                                                          \
    unsigned state = rng[worker];                                                           \
    for (int b = 0; b < batches; b++) {                                                     \
        unsigned start = pcg_hash(state) % nnz;                                             \
        state = state * 747796405u + 2891336453u;                                           \
        for (int j = 0; j < f; j++) {                                                       \
            unsigned s = (start + j) % nnz;                                                 \
            int u = __ldg(R + 3 * (long long)s);                                            \
            int v = __ldg(R + 3 * (long long)s + 1);                                        \
            float r = __int_as_float(__ldg(R + 3 * (long long)s + 2));                      \
            long long pb = (long long)u * 64, qb = (long long)v * 64;                       \
            float2 p0 = LOAD(P, pb + lane), p1 = LOAD(P, pb + lane + 32);                   \
            float2 q0 = LOAD(Q, qb + lane), q1 = LOAD(Q, qb + lane + 32);                   \
            float d = p0.x * q0.x + p0.y * q0.y + p1.x * q1.x + p1.y * q1.y;                \
            for (int o = 16; o > 0; o >>= 1) d += __shfl_xor_sync(0xffffffffu, d, o);      \
            float e = r - d;                                                                \
            STORE(P, pb + lane, p0.x + lr * (e * q0.x - lambda * p0.x),                     \
                  p0.y + lr * (e * q0.y - lambda * p0.y));                                  \
            STORE(P, pb + lane + 32, p1.x + lr * (e * q1.x - lambda * p1.x),                \
                  p1.y + lr * (e * q1.y - lambda * p1.y));                                  \
            STORE(Q, qb + lane, q0.x + lr * (e * p0.x - lambda * q0.x),                     \
                  q0.y + lr * (e * p0.y - lambda * q0.y));                                  \
            STORE(Q, qb + lane + 32, q1.x + lr * (e * p1.x - lambda * q1.x),                \
                  q1.y + lr * (e * p1.y - lambda * q1.y));                                  \
        }                                                                                   \
    }                                                                                       \
    if (lane == 0) rng[worker] = state;

#define LOAD_H(A, i) __half22float2(A[i])
#define STORE_H(A, i, x, y) A[i] = __floats2half2_rn(x, y)
#define LOAD_F(A, i) A[i]
#define STORE_F(A, i, x, y) A[i] = make_float2(x, y)

extern "C" __global__ void sgd_k128_f16(const int* __restrict__ R, unsigned nnz, __half2* P,
        __half2* Q, unsigned* rng, int workers, int batches, int f, float lr, float lambda) {
    BODY(LOAD_H, STORE_H)
}

extern "C" __global__ void sgd_k128_f32(const int* __restrict__ R, unsigned nnz, float2* P,
        float2* Q, unsigned* rng, int workers, int batches, int f, float lr, float lambda) {
    BODY(LOAD_F, STORE_F)
}
"""

K = 128
RECORD = np.dtype([("u", "<i4"), ("v", "<i4"), ("r", "<f4")])


def load(path):
    return np.fromfile(path, dtype=RECORD)


def rmse(test, P, Q, scale, chunk=1 << 20):
    sse = 0.0
    for a in range(0, len(test["r"]), chunk):
        u = test["u"][a:a + chunk]
        v = test["v"][a:a + chunk]
        r = test["r"][a:a + chunk]
        pred = cp.sum(P[u].astype(cp.float32) * Q[v].astype(cp.float32), axis=1) * scale
        sse += float(cp.sum((r - pred) ** 2))
    return math.sqrt(sse / len(test["r"]))


def run(module, train_dev, nnz, m, n, test, sigma, args, workers, precision):
    rng = np.random.default_rng(args.seed)
    hi = math.sqrt(1.0 / K)
    dt = np.float16 if precision == "f16" else np.float32
    P = cp.asarray((rng.random((m, K), dtype=np.float32) * hi).astype(dt))
    Q = cp.asarray((rng.random((n, K), dtype=np.float32) * hi).astype(dt))
    seeds = np.arange(workers, dtype=np.uint32) ^ np.uint32(args.seed * 0x9E3779B9 & 0xFFFFFFFF)
    states = cp.asarray(seeds)
    kernel = module.get_function("sgd_k128_" + precision)
    batches = -(-nnz // (workers * args.batch))
    block = 128
    grid = -(-workers * 32 // block)
    lam = np.float32(args.lam / sigma)
    scale = math.sqrt(sigma)
    epochs, total = [], 0.0
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for t in range(args.epochs):
        lr = np.float32(args.alpha / (1.0 + args.beta * t ** 1.5))
        start.record()
        kernel((grid,), (block,), (train_dev, np.uint32(nnz), P, Q, states, np.int32(workers),
                                   np.int32(batches), np.int32(args.batch), lr, lam))
        stop.record()
        stop.synchronize()
        sec = cp.cuda.get_elapsed_time(start, stop) / 1e3
        total += sec
        err = rmse(test, P * dt(scale), Q * dt(scale), 1.0) if test is not None else None
        if err is not None and not math.isfinite(err):
            raise SystemExit(f"diverged after epoch {t + 1}")
        epochs.append({"epoch": t + 1, "seconds": sec, "rmse": err})
    return {
        "peer": "cuda-cupy batch-hogwild (cuMF_SGD design)",
        "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
        "precision": precision, "workers": workers, "batch": args.batch, "k": K,
        "nnz": nnz, "m": m, "n": n, "epochs": epochs,
        "rmse": [e["rmse"] for e in epochs], "final_rmse": epochs[-1]["rmse"],
        "train_seconds": total, "updates_per_s": args.epochs * nnz / total,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("train")
    ap.add_argument("test", nargs="?")
    ap.add_argument("--workers", default="6864")
    ap.add_argument("--precision", default="f16,f32")
    ap.add_argument("--epochs", type=int, default=20)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lambda", dest="lam", type=float, default=0.05)
    ap.add_argument("--alpha", type=float, default=0.08)
    ap.add_argument("--beta", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    tr = load(args.train)
    m, n = int(tr["u"].max()) + 1, int(tr["v"].max()) + 1
    vals = tr["r"].astype(np.float64)
    sigma = max(1e-4, float(vals.std()))
    order = np.random.default_rng(args.seed).permutation(len(tr))
    words = np.empty((len(tr), 3), dtype=np.int32)
    words[:, 0] = tr["u"][order]
    words[:, 1] = tr["v"][order]
    words[:, 2] = (tr["r"][order] / np.float32(sigma)).astype(np.float32).view(np.int32)
    train_dev = cp.asarray(words.reshape(-1))
    del words, order
    test = None
    if args.test:
        te = load(args.test)
        keep = (te["u"] < m) & (te["v"] < n)
        test = {key: cp.asarray(te[key][keep]) for key in ("u", "v", "r")}
    module = cp.RawModule(code=SOURCE, options=("-std=c++14",))
    for precision in args.precision.split(","):
        for workers in [int(w) for w in args.workers.split(",")]:
            print(json.dumps(run(module, train_dev, len(tr), m, n, test, sigma, args, workers, precision)),
                  flush=True)


if __name__ == "__main__":
    main()
