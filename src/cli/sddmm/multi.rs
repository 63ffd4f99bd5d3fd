//! `wgsparse sddmm --gpus N|all`: S cut over several GPUs, measured against one GPU of the
//! same machine on the same operands.

use std::process::ExitCode;
use std::time::Instant;

use serde::Serialize;
use serde_json::json;

use super::{base_options, load, preflight, variants, CutArg, SddmmArgs};
use wgsparse::sddmm::{tune, Cut, MultiPlan, Options, Plan, Variant};
use wgsparse::sparse::Dense;
use wgsparse::{Gpu, Result};

/// One (K, variant, cut) measured on every GPU.
#[derive(Serialize)]
struct Row {
    k: usize,
    variant: &'static str,
    cut: &'static str,
    /// Per GPU: what it held and its kernel time.
    devices: Vec<serde_json::Value>,
    /// The slowest GPU's kernel time, ms (the devices run at once).
    kernel_ms: f64,
    /// One GPU's kernel time on the whole S, ms.
    one_gpu_kernel_ms: f64,
    /// Upload of the operands, run and gather of P, ms (median).
    end_to_end_ms: f64,
    /// The same for one GPU.
    one_gpu_end_to_end_ms: f64,
    /// Largest relative error against the f64 twin (sampled), with --check.
    max_rel_error: Option<f64>,
}

fn median_seconds(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

fn one_gpu_plan(
    gpu: &Gpu,
    s: &wgsparse::sparse::Csr,
    k: usize,
    options: &Options,
    tuned: bool,
    ops: &tune::Operands,
) -> Result<Plan> {
    if tuned && options.variant == Variant::Auto {
        tune::autotuned_plan_with(gpu, s, k, options, Some(ops))
    } else {
        Plan::new(gpu, s, k, options.clone())
    }
}

/// Runs `wgsparse sddmm --gpus …`.
pub(super) fn run(args: &SddmmArgs) -> Result<ExitCode> {
    let gpus = crate::cli::open_gpus(args.gpus.as_deref().unwrap_or("all"))?;
    preflight(&gpus[0], args)?;
    let (name, s) = load(args)?;
    let base = base_options(args);
    let cuts: &[Cut] = match args.cut {
        CutArg::Rows => &[Cut::Rows],
        CutArg::Columns => &[Cut::Columns],
        CutArg::Both => &[Cut::Rows, Cut::Columns],
    };
    let tuned = !args.no_tune;
    let reps = args.reps.max(1);
    let mut rows = Vec::new();
    let mut failed = false;
    for &k in &args.k {
        let ops = tune::Operands::random(&gpus[0], &s, k, args.seed + 17)?;
        let reference = args
            .check
            .then(|| tune::Reference::sampled(&s, &ops, 200_000));
        for variant in variants(&args.variant) {
            let options = Options {
                variant,
                ..base.clone()
            };
            let one = one_gpu_plan(&gpus[0], &s, k, &options, tuned, &ops)?;
            let one_kernel = one.time(&gpus[0], &ops.a, &ops.b, &ops.out, reps)?.seconds;
            // One GPU's iteration as the several-GPU one: new A and B validated and written
            // into the resident operands, run, P read back (already in CSR order).
            let one_e2e = median_seconds(reps.min(5), || {
                let (gpu, a, b) = (&gpus[0], &ops.a_host, &ops.b_host);
                a.validate()?;
                b.validate()?;
                ops.a.write_rows(gpu, a, 0..a.nrows)?;
                ops.b.write_rows(gpu, b, 0..b.nrows)?;
                one.run(gpu, &ops.a, &ops.b, &ops.out)?;
                ops.out.read(gpu).map(|_| ())
            })?;
            for &cut in cuts {
                let row = measure(
                    &gpus,
                    &s,
                    k,
                    &options,
                    cut,
                    tuned,
                    reps,
                    &ops.a_host,
                    &ops.b_host,
                    |p| reference.as_ref().map(|r| r.compare(p)),
                )?;
                let bad = row.1.as_ref().is_some_and(|c| !c.ok());
                if bad {
                    failed = true;
                    eprintln!(
                        "error: K={k} {} cut by {}: P differs from the f64 twin",
                        variant.name(),
                        cut.name()
                    );
                }
                let (devices, max_ms, e2e) = row.0;
                rows.push(Row {
                    k,
                    variant: variant.name(),
                    cut: cut.name(),
                    devices,
                    kernel_ms: 1e3 * max_ms,
                    one_gpu_kernel_ms: 1e3 * one_kernel,
                    end_to_end_ms: 1e3 * e2e,
                    one_gpu_end_to_end_ms: 1e3 * one_e2e,
                    max_rel_error: row.1.map(|c| c.max_rel_error),
                });
            }
        }
    }
    if args.json {
        println!(
            "{}",
            json!({
                "gpus": gpus.iter().map(|g| g.caps.adapter_name.clone()).collect::<Vec<_>>(),
                "matrix": { "name": name, "nrows": s.nrows, "ncols": s.ncols, "nnz": s.nnz() },
                "results": rows,
                "ok": !failed,
            })
        );
    } else {
        print_table(&gpus, &name, &s, &rows);
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Per-device JSON, the slowest device's kernel seconds and the end-to-end seconds, and the
/// check of the gathered P.
type Measured = (
    (Vec<serde_json::Value>, f64, f64),
    Option<wgsparse::sddmm::cpu::Comparison>,
);

#[allow(clippy::too_many_arguments)]
fn measure(
    gpus: &[Gpu],
    s: &wgsparse::sparse::Csr,
    k: usize,
    options: &Options,
    cut: Cut,
    tuned: bool,
    reps: usize,
    a: &Dense,
    b: &Dense,
    check: impl Fn(&[f32]) -> Option<wgsparse::sddmm::cpu::Comparison>,
) -> Result<Measured> {
    let multi = MultiPlan::new(gpus, s, k, options, cut, tuned)?;
    let ops = multi.upload(a, b)?;
    let times = multi.time_devices(&ops, reps)?;
    let p = multi.gather(&ops)?;
    let cmp = check(&p);
    let e2e = multi.time_end_to_end(a, b, reps.min(5))?;
    let devices = multi
        .shards()
        .into_iter()
        .zip(&times)
        .map(|(info, t)| json!({ "shard": info, "gpu_ms": 1e3 * t.seconds }))
        .collect();
    let max = times.iter().map(|t| t.seconds).fold(0.0, f64::max);
    Ok(((devices, max, e2e), cmp))
}

fn print_table(gpus: &[Gpu], name: &str, s: &wgsparse::sparse::Csr, rows: &[Row]) {
    println!(
        "SDDMM on {} GPUs ({}) — S = {name}: {}×{}, {} nonzeros",
        gpus.len(),
        gpus.iter()
            .map(|g| g.caps.adapter_name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        s.nrows,
        s.ncols,
        s.nnz()
    );
    let mut t = crate::cli::table(&[
        "K",
        "variant",
        "cut",
        "per GPU: nnz / kernel / ms",
        "kernel ms",
        "× one GPU",
        "end-to-end ms",
        "× one GPU",
        "max rel err",
    ]);
    for r in rows {
        let per = r
            .devices
            .iter()
            .map(|d| {
                format!(
                    "{} / {} / {:.3}",
                    d["shard"]["nnz"],
                    d["shard"]["kernel"].as_str().unwrap_or("—").trim(),
                    d["gpu_ms"].as_f64().unwrap_or(f64::NAN)
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        t.add_row(vec![
            r.k.to_string(),
            r.variant.to_string(),
            r.cut.to_string(),
            per,
            format!("{:.3}", r.kernel_ms),
            format!("{:.2}×", r.one_gpu_kernel_ms / r.kernel_ms),
            format!("{:.1}", r.end_to_end_ms),
            format!("{:.2}×", r.one_gpu_end_to_end_ms / r.end_to_end_ms),
            r.max_rel_error.map_or("—".into(), |e| format!("{e:.1e}")),
        ]);
    }
    println!("{t}");
}
