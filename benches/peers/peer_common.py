"""Helpers shared by the peer scripts: loading the raw arrays wgsparse exports, CUDA-event
timing after a clock warm-up, output comparison, and reporting the fastest option."""
import json
import os
import statistics
import time

import numpy as np

# As `wgsparse::gpu::median_warm`: GPUs clock down when idle; keep the device busy this long
# (seconds) before timing.
WARM_UP_SECONDS = 0.5


def load_meta(folder):
    with open(os.path.join(folder, "meta.json")) as f:
        return json.load(f)


def load_csr(folder):
    meta = load_meta(folder)
    row_ptr = np.fromfile(os.path.join(folder, "row_ptr.u32"), dtype="<u4").astype(np.int64)
    col_idx = np.fromfile(os.path.join(folder, "col_idx.u32"), dtype="<u4").astype(np.int64)
    values = np.fromfile(os.path.join(folder, "values.f32"), dtype="<f4")
    assert row_ptr.size == meta["nrows"] + 1 and col_idx.size == meta["nnz"] == values.size
    return meta, row_ptr, col_idx, values


def load_f32(folder, name, count=None):
    a = np.fromfile(os.path.join(folder, name), dtype="<f4")
    assert count is None or a.size == count, f"{name}: {a.size} values, expected {count}"
    return a


def cuda_time(fn, reps, events, primed=False, calls=1):
    """Median milliseconds of `fn` over `reps` runs, after running it for WARM_UP_SECONDS.
    `events` is a factory of CUDA events with `record()`, and `elapsed(start, end)` and
    `sync()` attributes: see TORCH_EVENTS and CUPY_EVENTS. `primed`: the caller has just
    run `fn` once (its first, compiling run), so it is not run again before the warm-up.
    `calls`: `fn` called this many times between one pair of events (its time divided by
    them), so the host queues launches while the GPU works (as `wgsparse fused
    --runs-per-submit` does)."""
    new_event, elapsed, sync = events
    if not primed:
        fn()
    sync()
    start = time.perf_counter()
    while time.perf_counter() - start < WARM_UP_SECONDS:
        fn()
        sync()
    times = []
    for _ in range(reps):
        a, b = new_event(), new_event()
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        b.synchronize()
        times.append(elapsed(a, b) / calls)
    return statistics.median(times)


def torch_events():
    import torch

    return (
        lambda: torch.cuda.Event(enable_timing=True),
        lambda a, b: a.elapsed_time(b),
        torch.cuda.synchronize,
    )


def cupy_events():
    import cupy

    return (
        cupy.cuda.Event,
        lambda a, b: cupy.cuda.get_elapsed_time(a, b),
        cupy.cuda.Device().synchronize,
    )


def agree(got, want, rtol=1e-3):
    """Normwise agreement: max |got − want| ≤ rtol · max |want|. Returns (ok, relative diff)."""
    got = np.asarray(got, dtype=np.float64)
    want = np.asarray(want, dtype=np.float64)
    scale = max(np.abs(want).max(initial=0.0), 1e-30)
    diff = float(np.abs(got - want).max(initial=0.0) / scale)
    return bool(np.isfinite(got).all() and diff <= rtol), diff


def emit(record):
    print(json.dumps(record), flush=True)
