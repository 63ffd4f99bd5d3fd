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
    rows.extend(crate::fused::bench::demo(gpu, &mut progress)?);
    rows.push(mf_row(gpu, &mut progress)?);
    progress("spdnn fast path");
    rows.push(spdnn_row(gpu)?);
    progress("wide.flow sync");
    rows.push(crate::wide::demo_row(gpu)?);
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
        kernel: match plan.approach() {
            spdnn::Approach::DenseRows => "spdnn.layer + spdnn.compact".into(),
            _ => "spdnn.sliced + spdnn.select".into(),
        },
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

/// MF: five batch-Hogwild! epochs on planted ratings (rating noise 0.1, clamped to [1, 5]);
/// the check is the GPU's test RMSE against the host model's (the CPU twin of `mf.rmse`)
/// and convergence below 0.3 (the initial model's RMSE is above 2).
fn mf_row(gpu: &Gpu, progress: &mut impl FnMut(&str)) -> Result<DemoRow> {
    progress("mf.hogwild");
    let data = crate::gen::planted_ratings(400, 300, 30_000, 4, 0.1, 2026)?;
    let (train, test) = ((&data.train).into(), (&data.test).into());
    let options = crate::mf::Options {
        k: 32,
        lambda: 0.02,
        alpha: 0.05,
        beta: 0.1,
        workers: Some(64),
        batch: 32,
        ..Default::default()
    };
    let mut t = crate::mf::Trainer::new(gpu, &train, Some(&test), options)?;
    let metrics = t.fit(5, |_| {})?;
    let last = metrics.last().expect("5 epochs");
    let gpu_rmse = last.rmse.unwrap_or(f64::NAN);
    let (host, _) = t.model()?.rmse(&test);
    let host = host.unwrap_or(f64::NAN);
    let rel = (gpu_rmse - host).abs() / host;
    let seconds: f64 = metrics.iter().map(|m| m.seconds).sum();
    let updates: u64 = metrics.iter().map(|m| m.updates).sum();
    Ok(DemoRow {
        system: "mf",
        kernel: "mf.hogwild".into(),
        detail: format!(
            "400×300 nnz {} k=32, 5 epochs, test RMSE {gpu_rmse:.3}",
            train.len()
        ),
        ms: seconds * 1e3,
        // 2 flops per feature for the dot, 8 for the two updates (the paper's count).
        gflops: updates as f64 * 10.0 * 32.0 / seconds / 1e9,
        max_rel_error: rel,
        ok: rel <= 1e-3 && gpu_rmse < 0.3,
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
