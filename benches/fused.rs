//! Criterion benchmark of the fused pattern's variants (fused, two-pass, unfused) on the full
//! pattern, sparse (power-law) and dense X.
//!
//! Criterion measures host-observed latency of `plan.run` (record + submit + wait), which
//! includes driver and submission overhead. GPU-only kernel times come from `wgsparse fused`
//! (timestamp queries after warm-up, see `Plan::time`).
//!
//! Size: `WGSPARSE_BENCH_SCALE` multiplies the default rows (20,000 × 500 sparse at 1%,
//! 20,000 × 200 dense: small enough for lavapipe), e.g. `25` on a real GPU. With no adapter the
//! bench prints a note and measures nothing.

mod common;

use std::time::Duration;

use common::scale;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use wgsparse::fused::bench::{Input, Operands};
use wgsparse::fused::{Options, Pattern, Plan, Variant};
use wgsparse::{gen, Gpu};

fn bench_fused(c: &mut Criterion) {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("fused bench skipped: no GPU adapter ({e})");
            return;
        }
    };
    let m = ((20_000.0 * scale()) as usize).max(1);
    let inputs = match gen::power_law(m, 500, m * 5, 1.1, 7) {
        Ok(s) => [
            ("sparse", Input::Sparse(s)),
            ("dense", Input::Dense(gen::dense_uniform(m, 200, 7))),
        ],
        Err(e) => {
            eprintln!("fused bench skipped: cannot generate X ({e})");
            return;
        }
    };
    let mut group = c.benchmark_group("fused");
    group
        .sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .measurement_time(Duration::from_secs(3));
    for (kind, input) in &inputs {
        let x = input.matrix();
        let (m, n) = x.shape();
        let Ok(ops) = Operands::random(&gpu, m, n, Pattern::Full, 3) else {
            continue;
        };
        for variant in Variant::CONCRETE {
            let options = Options {
                variant,
                ..Default::default()
            };
            let Ok(plan) = Plan::new(&gpu, x, &options) else {
                continue;
            };
            let id = BenchmarkId::new(*kind, variant.name());
            group.bench_function(id, |b| {
                b.iter(|| plan.run(&gpu, &ops.op(), &ops.w).expect("fused run"))
            });
        }
    }
    group.finish();
}

criterion_group!(benches, bench_fused);
criterion_main!(benches);
