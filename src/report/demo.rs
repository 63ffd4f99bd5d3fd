//! `wgsparse demo`: every implemented system on built-in data, each checked against its CPU
//! twin, as rows of one table.

use serde::Serialize;

use crate::gpu::Gpu;
use crate::sddmm::{self, suite, tune, Options, Variant};
use crate::Result;

/// One row of the demo table.
#[derive(Clone, Debug, Serialize)]
pub struct DemoRow {
    /// System (module).
    pub system: &'static str,
    /// Kernel name.
    pub kernel: String,
    /// Problem and configuration.
    pub detail: String,
    /// GPU time, milliseconds (median).
    pub ms: f64,
    /// GFLOP/s.
    pub gflops: f64,
    /// Max error relative to the twin's magnitude bound.
    pub max_rel_error: f64,
    /// Passed the twin check.
    pub ok: bool,
}

/// Runs the demo; `progress` is told the name of each step before it runs.
pub fn run(gpu: &Gpu, mut progress: impl FnMut(&str)) -> Result<Vec<DemoRow>> {
    let mut rows = Vec::new();
    let m = suite::find("demo")?;
    let s = m.generate(1.0, 2026)?;
    for k in [32usize, 100] {
        let ops = tune::Operands::random(gpu, &s, k, 7 + k as u64)?;
        let reference = tune::Reference::sampled(&s, &ops, usize::MAX);
        for variant in [Variant::Auto].into_iter().chain(Variant::CONCRETE) {
            progress(&format!("sddmm {} K={k}", variant.name()));
            let options = Options {
                variant,
                ..Default::default()
            };
            let (ok, meas) = match tune::measure(gpu, &s, &ops, &options, 5, Some(&reference)) {
                Ok(meas) => (true, meas),
                Err(crate::Error::Check { message, .. }) => {
                    rows.push(DemoRow {
                        system: "sddmm",
                        kernel: variant.name().into(),
                        detail: message,
                        ms: f64::NAN,
                        gflops: f64::NAN,
                        max_rel_error: f64::NAN,
                        ok: false,
                    });
                    continue;
                }
                Err(e) => return Err(e),
            };
            let c = &meas.config;
            let kernel = if variant == Variant::Auto {
                format!("sddmm.auto → {}", c.variant.name())
            } else {
                variant.name().to_string()
            };
            rows.push(DemoRow {
                system: "sddmm",
                kernel,
                detail: format!(
                    "{}×{} nnz {} K={k}{}",
                    s.nrows,
                    s.ncols,
                    s.nnz(),
                    describe(c)
                ),
                ms: meas.ms,
                gflops: meas.gflops,
                max_rel_error: meas.max_rel_error.unwrap_or(f64::NAN),
                ok,
            });
        }
    }
    progress("spdnn fast path");
    rows.push(spdnn_row(gpu)?);
    Ok(rows)
}

/// A tiny sparse DNN (N = 256, 12 layers, 200 rows) through the fast path, its categories
/// and values checked against the CPU twin.
fn spdnn_row(gpu: &Gpu) -> Result<DemoRow> {
    use crate::spdnn::{self, cpu, data};
    let (n, layers, rows) = (256, 12, 200);
    let net = data::generated_network(n, layers, -0.3, 2026)?;
    let y0 = data::random_inputs(rows, n, 0.3, 2027)?;
    let plan = spdnn::Plan::new(gpu, &net, &y0, &spdnn::Options::default())?;
    plan.poison(gpu)?;
    let time = crate::gpu::median_warm(gpu, 3, || plan.run(gpu))?;
    let got = plan.categories(gpu)?;
    let out = plan.output(gpu)?;
    let want = cpu::infer(&net, &y0);
    let max_rel_error = out
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (f64::from(g) - w).abs() / (1.0 + w.abs()))
        .fold(0.0, f64::max);
    let ok = got == cpu::categories(&want, n) && max_rel_error <= 1e-5 * layers as f64;
    Ok(DemoRow {
        system: "spdnn",
        kernel: "spdnn.layer + spdnn.compact".into(),
        detail: format!(
            "N={n} L={layers} rows={rows}, {} of {rows} rows survive",
            got.len()
        ),
        ms: time.ms(),
        gflops: 2.0 * spdnn::edges_per_second(&net, rows, time.seconds) / 1e9,
        max_rel_error,
        ok,
    })
}

/// A short description of a configuration's tile sizes.
pub fn describe(c: &sddmm::Config) -> String {
    match c.variant {
        Variant::Naive => String::new(),
        Variant::Warp => format!(" vws={} ×{}", c.vws, c.unroll),
        Variant::RowRun => format!(
            " Tj={} vws={} run≤{} wg={}",
            c.tj, c.vws, c.block_nnz, c.workgroup
        ),
        _ => format!(
            " Tj={} Tk={} Ti={} vws={} ×{} wg={}{}{}",
            c.tj,
            c.tk,
            c.ti,
            c.vws,
            c.unroll,
            c.workgroup,
            if c.compress { " u16" } else { "" },
            if c.transposed { " ᵀ" } else { "" }
        ),
    }
}
