//! Shared by the criterion benches.

/// `WGSPARSE_BENCH_SCALE`: the factor a bench multiplies its default problem size by (1).
pub fn scale() -> f64 {
    std::env::var("WGSPARSE_BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .unwrap_or(1.0)
}
