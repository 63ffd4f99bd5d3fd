//! Host-side throughput: Matrix Market parsing (MB/s of text), the power-law generator and
//! the SDDMM tilings (nonzeros/s). `cargo bench --bench host`; `WGSPARSE_BENCH_SCALE` scales the inputs
//! (default 1: a 5M-entry, ~125 MB Matrix Market file and a 5M-nonzero matrix).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use wgsparse::{gen, io};

fn scale() -> f64 {
    std::env::var("WGSPARSE_BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|s: &f64| *s > 0.0)
        .unwrap_or(1.0)
}

fn host(c: &mut Criterion) {
    let nnz = ((5_000_000.0 * scale()) as usize).max(1000);
    let n = (nnz / 5).max(100);
    let m = gen::power_law(n, n, nnz, 1.0, 1).expect("generator");
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("bench.mtx");
    io::write_matrix_market(&path, &m).expect("write");
    let bytes = std::fs::metadata(&path).expect("metadata").len();

    let mut g = c.benchmark_group("host");
    g.sample_size(10);
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("matrix_market_to_coo", |b| {
        b.iter(|| io::read_matrix_market_coo(&path).expect("parse"))
    });
    g.bench_function("matrix_market_to_csr", |b| {
        b.iter(|| io::read_matrix_market(&path).expect("parse"))
    });
    g.throughput(Throughput::Elements(nnz as u64));
    g.bench_function("power_law", |b| {
        b.iter(|| gen::power_law(n, n, nnz, 1.0, 2).expect("generator"))
    });
    g.bench_function("sddmm_tiles_sm_sm", |b| {
        b.iter(|| wgsparse::sddmm::tiles::tiles(&m, None, 128, 128))
    });
    g.bench_function("sddmm_panels_sm_l2", |b| {
        b.iter(|| wgsparse::sddmm::tiles::panels(&m, None, 50_000, 8, 2048, true))
    });
    g.finish();
}

criterion_group!(benches, host);
criterion_main!(benches);
