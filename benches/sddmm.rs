//! Criterion benchmark of the SDDMM variants (Naive, Warp, SM-L2, SM-SM) on a power-law S,
//! K ∈ {32, 128}.
//!
//! Criterion measures host-observed latency of `plan.run` (record + submit + wait for the
//! device), which includes driver and submission overhead. GPU-only kernel times come from
//! `wgsparse sddmm` (timestamp queries around the compute pass, see `Plan::time`).
//!
//! Size: `WGSPARSE_BENCH_SCALE` multiplies the default S (5_000 × 4_000, 100_000 nnz,
//! small enough for lavapipe), e.g. `WGSPARSE_BENCH_SCALE=0.1` for a smoke test or `20` on a
//! real GPU. With no adapter the bench prints a note and measures nothing.

mod common;

use std::time::Duration;

use common::scale;
use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use wgsparse::gpu::GpuBuffer;
use wgsparse::sddmm::{Options, Plan, Variant};
use wgsparse::sparse::GpuDense;
use wgsparse::{gen, Gpu};

fn bench_sddmm(c: &mut Criterion) {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("sddmm bench skipped: no GPU adapter ({e})");
            return;
        }
    };
    let f = scale();
    let dim = |x: f64| ((x * f.sqrt()) as usize).max(8);
    let (m, n) = (dim(5_000.0), dim(4_000.0));
    let nnz = ((100_000.0 * f) as usize).clamp(1, m * n);
    let s = match gen::power_law(m, n, nnz, 1.1, 7) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sddmm bench skipped: cannot generate S ({e})");
            return;
        }
    };
    eprintln!(
        "sddmm bench on {}: S {m}×{n}, {nnz} nnz",
        gpu.caps.adapter_name
    );

    let mut group = c.benchmark_group("sddmm");
    group
        .sample_size(10)
        // Flat sampling: every sample runs the same number of iterations, which keeps the
        // slow variants (tens of ms per run on lavapipe) inside the measurement time.
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(1));
    for k in [32usize, 128] {
        let a = GpuDense::upload(&gpu, &gen::dense_uniform(m, k, 1)).expect("upload A");
        let b = GpuDense::upload(&gpu, &gen::dense_uniform(n, k, 2)).expect("upload B");
        let out = GpuBuffer::<f32>::zeroed(&gpu, "sddmm.out", nnz).expect("output buffer");
        // Elements = multiply-adds (K per nonzero), so criterion's elem/s is half the flop rate.
        group.throughput(Throughput::Elements((nnz * k) as u64));
        for variant in Variant::CONCRETE {
            let options = Options {
                variant,
                ..Options::default()
            };
            // A variant that does not fit this adapter (e.g. tiles too large for its
            // workgroup memory) is skipped, not fatal.
            let plan = match Plan::new(&gpu, &s, k, options) {
                Ok(p) => p,
                Err(e) => {
                    eprintln!("{} K={k} skipped: {e}", variant.name());
                    continue;
                }
            };
            let id = BenchmarkId::new(variant.name(), format!("k{k}"));
            group.bench_with_input(id, &plan, |bench, plan| {
                bench.iter(|| plan.run(&gpu, &a, &b, &out).expect("sddmm run"));
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_sddmm);
criterion_main!(benches);
