"""How fast f32 adds into workgroup (shared) memory run on an NVIDIA GPU, by kind: the
compare-exchange loop the WGSL kernels use (naga accepts `atomic<f32>` only in storage
buffers), the native f32 atomic add (what SPV_EXT_shader_atomic_float's shared form would
give), the integer atomic add (same traffic, wrong sums: a floor) and plain load + store
(racing, wrong sums). A CUDA probe, not a peer: it asked whether the native shared-memory
path (`--wg-atomics native`) was worth building. On an H100 under the default power law it
ran 11–13× the loop's rate, while `wgsparse roofline`'s uniform random adds over 16 KiB ran at
half the loop's rate (BENCHMARKS.md, twenty-seventh measurements); `--alpha 0` draws the
columns uniformly.

Each block of THREADS invocations zeroes a shared copy of w (n columns), makes ADDS adds per
invocation at columns drawn from a power law (hot columns first, as the stream kernel's
re-indexed columns), then flushes its copy into global w by native atomics. The columns are
read coalesced from a precomputed array, so every mode streams the same bytes.

    python3 benches/peers/shared_atomics_probe.py [--n 200,1024,4096] [--blocks 528]
        [--threads 512] [--adds 64] [--reps 50] [--alpha 1.1]

Prints one JSON line per (n, mode): ms (median after the clock warm-up), G adds/s, and for
the exact modes whether the sums match the float64 reference (relative error).
"""
import argparse
import json

import cupy as cp
import numpy as np

from peer_common import cuda_time, cupy_events

SOURCE = r"""
extern "C" __global__ void probe(const unsigned* cols, const float* vals, float* w,
                                 int n, int adds, int mode) {
    extern __shared__ float wg[];
    for (int c = threadIdx.x; c < n; c += blockDim.x) wg[c] = 0.0f;
    __syncthreads();
    size_t base = (size_t)blockIdx.x * blockDim.x * adds + threadIdx.x;
    for (int k = 0; k < adds; ++k) {
        size_t e = base + (size_t)k * blockDim.x;
        unsigned c = cols[e];
        float x = vals[e];
        if (mode == 0) {
            unsigned* p = (unsigned*)&wg[c];
            unsigned old = *(volatile unsigned*)p;
            while (true) {
                unsigned seen = atomicCAS(p, old, __float_as_uint(__uint_as_float(old) + x));
                if (seen == old) break;
                old = seen;
            }
        } else if (mode == 1) {
            atomicAdd(&wg[c], x);
        } else if (mode == 2) {
            atomicAdd((unsigned*)&wg[c], __float_as_uint(x));
        } else {
            volatile float* p = &wg[c];
            *p = *p + x;
        }
    }
    __syncthreads();
    for (int c = threadIdx.x; c < n; c += blockDim.x) atomicAdd(&w[c], wg[c]);
}
"""
MODES = ["compare-exchange loop", "native f32 add", "integer add (floor)", "plain load+store"]
EXACT = {0, 1}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", default="200,1024,4096")
    ap.add_argument("--blocks", type=int, default=528)
    ap.add_argument("--threads", type=int, default=512)
    ap.add_argument("--adds", type=int, default=64)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--alpha", type=float, default=1.1, help="power-law exponent of columns")
    a = ap.parse_args()
    kernel = cp.RawKernel(SOURCE, "probe")
    rng = np.random.default_rng(7)
    total = a.blocks * a.threads * a.adds
    for n in map(int, a.n.split(",")):
        weights = 1.0 / np.arange(1, n + 1) ** a.alpha
        cols = rng.choice(n, size=total, p=weights / weights.sum()).astype(np.uint32)
        vals = rng.uniform(0.5, 1.5, size=total).astype(np.float32)
        ref = np.bincount(cols, weights=vals.astype(np.float64), minlength=n)
        d_cols, d_vals = cp.asarray(cols), cp.asarray(vals)
        w = cp.zeros(n, dtype=cp.float32)
        for mode, name in enumerate(MODES):
            args = (d_cols, d_vals, w, np.int32(n), np.int32(a.adds), np.int32(mode))

            def run():
                kernel((a.blocks,), (a.threads,), args, shared_mem=4 * n)

            w.fill(0)
            run()
            got = cp.asnumpy(w).astype(np.float64)
            err = float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))
            ms = cuda_time(run, a.reps, cupy_events(), primed=True)
            row = {
                "device": cp.cuda.runtime.getDeviceProperties(0)["name"].decode(),
                "n": n, "mode": name, "ms": ms, "gadds_per_s": total / ms / 1e6,
                "blocks": a.blocks, "threads": a.threads, "adds": total,
            }
            if mode in EXACT:
                row["rel_error"] = err
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
