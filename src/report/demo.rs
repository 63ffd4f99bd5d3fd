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
            let (ok, meas) = match measure(gpu, &s, &ops, &options, &reference) {
                Ok(meas) => (true, meas),
                // A failed variant is a failed row: the rest of the table still runs.
                Err(e) => {
                    rows.push(DemoRow {
                        system: "sddmm",
                        kernel: variant.name().into(),
                        detail: e.to_string(),
                        ms: f64::NAN,
                        gflops: f64::NAN,
                        max_rel_error: f64::NAN,
                        ok: false,
                    });
                    continue;
                }
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
    Ok(rows)
}

/// Times `options` on S; `Auto` is the autotuner's pick (cached per adapter and shape, as
/// `wgsparse sddmm` runs it), not the model's alone.
fn measure(
    gpu: &Gpu,
    s: &crate::sparse::Csr,
    ops: &tune::Operands,
    options: &Options,
    reference: &tune::Reference,
) -> Result<tune::Measurement> {
    if options.variant != Variant::Auto {
        return tune::measure(gpu, s, ops, options, 5, Some(reference));
    }
    let t0 = std::time::Instant::now();
    let plan = tune::autotuned_plan_with(gpu, s, ops.a_host.ncols, options, Some(ops))?;
    let plan_ms = t0.elapsed().as_secs_f64() * 1e3;
    tune::measure_plan(gpu, s, &plan, ops, 5, Some(reference), plan_ms)
}

/// A short description of a configuration's tile sizes.
pub fn describe(c: &sddmm::Config) -> String {
    match c.variant {
        Variant::Naive => String::new(),
        Variant::Warp => format!(" vws={} ×{}", c.vws, c.unroll),
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
