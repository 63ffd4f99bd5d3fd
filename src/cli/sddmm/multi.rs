//! `wgsparse sddmm --gpus N|all`: S cut over several GPUs, measured against one GPU of the
//! same machine on the same operands.

use std::process::ExitCode;

use serde::Serialize;
use serde_json::json;

use super::{base_options, load, preflight, variants, CutArg, SddmmArgs};
use wgsparse::gpu::host_cores;
use wgsparse::sddmm::{
    tune, Breakdown, Cut, MultiPlan, Options, Plan, ReadMode, Resident, Variant, WriteMode,
};
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
    /// One iteration as an iterating caller runs it, plans and buffers reused: new A and B
    /// written into each device's rows, run, and P read back into one array in S's CSR
    /// order, ms (median).
    end_to_end_ms: f64,
    /// The same for one GPU (the same steps on the whole of S).
    one_gpu_end_to_end_ms: f64,
    /// The iteration with P left on the devices (A and B written, run), ms (median).
    resident_ms: f64,
    /// The same for one GPU.
    one_gpu_resident_ms: f64,
    /// Where the end-to-end iteration's time goes, phase by phase (each phase waited for).
    breakdown_ms: Phases,
    /// The same for one GPU.
    one_gpu_breakdown_ms: Phases,
    /// Largest relative error against the f64 twin (sampled), with --check.
    max_rel_error: Option<f64>,
    /// How A and B were written: `staged` or `overlapped` (--overlap-write).
    write_mode: &'static str,
    /// How P was read back: `whole` or `pieced` (--overlap-read, row cut), on both sides.
    read_mode: &'static str,
}

/// An iteration's phases in ms ([`Breakdown`]), with the parts of the write (layout, copy)
/// and of the read-back (copy, map).
#[derive(Serialize)]
struct Phases {
    write: f64,
    run: f64,
    readback: f64,
    gather: f64,
    total: f64,
    write_layout: f64,
    write_copy: f64,
    readback_copy: f64,
    readback_map: f64,
}

impl From<Breakdown> for Phases {
    fn from(b: Breakdown) -> Self {
        Phases {
            write: 1e3 * b.write,
            run: 1e3 * b.run,
            readback: 1e3 * b.readback,
            gather: 1e3 * b.gather,
            total: 1e3 * b.total(),
            write_layout: 1e3 * b.write_layout,
            write_copy: 1e3 * b.write_copy,
            readback_copy: 1e3 * b.readback_copy,
            readback_map: 1e3 * b.readback_map,
        }
    }
}

/// One GPU's iteration timed (end to end, P left on the device, phase by phase) and checked.
type OneGpu = (
    (f64, f64, Breakdown),
    Option<wgsparse::sddmm::cpu::Comparison>,
);

/// One GPU's iteration (the several-GPU one's steps on the whole of S): end to end, with P
/// left on the device, and phase by phase; with a reference, the P one iteration reads back
/// (output poisoned first) checked against it.
fn one_gpu_iteration(
    gpu: &Gpu,
    plan: &Plan,
    a: &Dense,
    b: &Dense,
    reps: usize,
    reference: Option<&tune::Reference>,
    (mode, read): (WriteMode, ReadMode),
) -> Result<OneGpu> {
    let (rows, cols) = (0..plan.nrows, 0..plan.ncols);
    let whole = Resident::with_modes(gpu, plan, rows, cols, host_cores(), mode, read)?;
    let cmp = match reference {
        Some(r) => {
            whole.poison(gpu)?;
            let mut p = wgsparse::limits::try_vec("the SDDMM output", plan.nnz, f32::NAN)?;
            whole.iterate(gpu, plan, a, b, Some(&mut p))?;
            Some(r.compare(&p))
        }
        None => None,
    };
    let times = (
        whole.time_iteration(gpu, plan, a, b, reps, true)?,
        whole.time_iteration(gpu, plan, a, b, reps, false)?,
        whole.breakdown(gpu, plan, a, b, reps)?,
    );
    Ok((times, cmp))
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
    let mode = if args.overlap_write {
        WriteMode::Overlapped
    } else {
        WriteMode::Staged
    };
    if args.overlap_read && cuts.contains(&Cut::Columns) {
        eprintln!(
            "note: --overlap-read applies to the row cut; the column cut's gather interleaves \
             every part's rows, so it (and its one-GPU baseline) reads P whole"
        );
    }
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
            // The one-GPU baseline per read mode the cuts use, measured once each.
            let mut baselines: Vec<(ReadMode, (f64, f64, Breakdown))> = Vec::new();
            for &cut in cuts {
                let read = read_mode(args.overlap_read, cut);
                let (one_e2e, one_resident, one_phases) =
                    match baselines.iter().find(|(r, _)| *r == read) {
                        Some((_, t)) => *t,
                        None => {
                            let (t, one_cmp) = one_gpu_iteration(
                                &gpus[0],
                                &one,
                                &ops.a_host,
                                &ops.b_host,
                                reps.min(5),
                                reference.as_ref(),
                                (mode, read),
                            )?;
                            if one_cmp.is_some_and(|c| !c.ok()) {
                                failed = true;
                                eprintln!(
                                    "error: K={k} {}: one GPU's iteration ({} read-back) \
                                     differs from the f64 twin",
                                    variant.name(),
                                    read.name()
                                );
                            }
                            baselines.push((read, t));
                            t
                        }
                    };
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
                    reference.as_ref(),
                    (mode, read),
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
                let m = row.0;
                rows.push(Row {
                    k,
                    variant: variant.name(),
                    cut: cut.name(),
                    devices: m.devices,
                    kernel_ms: 1e3 * m.kernel,
                    one_gpu_kernel_ms: 1e3 * one_kernel,
                    end_to_end_ms: 1e3 * m.end_to_end,
                    one_gpu_end_to_end_ms: 1e3 * one_e2e,
                    resident_ms: 1e3 * m.resident,
                    one_gpu_resident_ms: 1e3 * one_resident,
                    breakdown_ms: m.phases.into(),
                    one_gpu_breakdown_ms: one_phases.into(),
                    max_rel_error: row.1.map(|c| c.max_rel_error),
                    write_mode: match mode {
                        WriteMode::Staged => "staged",
                        WriteMode::Overlapped => "overlapped",
                    },
                    read_mode: read.name(),
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

/// How `cut` reads P back: pieced under the row cut with --overlap-read, whole otherwise
/// (the column cut's gather needs every part whole).
fn read_mode(overlap_read: bool, cut: Cut) -> ReadMode {
    if overlap_read && cut == Cut::Rows {
        ReadMode::PIECED
    } else {
        ReadMode::Whole
    }
}

/// What one cut measured.
struct Iteration {
    /// Per-device JSON.
    devices: Vec<serde_json::Value>,
    /// The slowest device's kernel seconds.
    kernel: f64,
    /// Seconds of the iteration with P read back, and with P left on the devices.
    end_to_end: f64,
    resident: f64,
    /// The iteration phase by phase.
    phases: Breakdown,
}

/// The measurement and the check of the gathered P.
type Measured = (Iteration, Option<wgsparse::sddmm::cpu::Comparison>);

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
    reference: Option<&tune::Reference>,
    (mode, read): (WriteMode, ReadMode),
) -> Result<Measured> {
    let multi = MultiPlan::new(gpus, s, k, options, cut, tuned)?;
    let ops = multi.upload_modes(a, b, mode, read)?;
    // Poisoned before the runs whose output the check reads, and only then.
    if reference.is_some() {
        multi.poison(&ops)?;
    }
    let times = multi.time_devices(&ops, reps)?;
    let p = multi.gather(&ops)?;
    let cmp = reference.map(|r| r.compare(&p));
    let (it_reps, ok) = (reps.min(5), cmp.as_ref().is_none_or(|c| c.ok()));
    let end_to_end = multi.time_end_to_end(&ops, a, b, it_reps, true)?;
    let resident = multi.time_end_to_end(&ops, a, b, it_reps, false)?;
    let phases = multi.breakdown(&ops, a, b, it_reps)?;
    // The iteration path (staged writes, P read back and gathered as it runs) must give the
    // run's P exactly, every value rewritten (outputs poisoned first).
    if ok && cmp.is_some() {
        multi.poison(&ops)?;
        let mut again = wgsparse::limits::try_vec("the iterated SDDMM output", p.len(), f32::NAN)?;
        multi.iterate(&ops, a, b, Some(&mut again))?;
        if again
            .iter()
            .zip(&p)
            .any(|(x, y)| x.to_bits() != y.to_bits())
        {
            return Err(wgsparse::Error::Gpu {
                kernel: "sddmm (several devices)".into(),
                message: "the iteration's P differs from the run's".into(),
            });
        }
    }
    let devices = multi
        .shards()
        .into_iter()
        .zip(&times)
        .map(|(info, t)| json!({ "shard": info, "gpu_ms": 1e3 * t.seconds }))
        .collect();
    let kernel = times.iter().map(|t| t.seconds).fold(0.0, f64::max);
    Ok((
        Iteration {
            devices,
            kernel,
            end_to_end,
            resident,
            phases,
        },
        cmp,
    ))
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
        "P on GPUs ms",
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
            format!("{:.1}", r.resident_ms),
            format!("{:.2}×", r.one_gpu_resident_ms / r.resident_ms),
            r.max_rel_error.map_or("—".into(), |e| format!("{e:.1e}")),
        ]);
    }
    println!("{t}");
    let phases = |p: &Phases| {
        format!(
            "{:.2} ({:.2} + {:.2}) / {:.2} / {:.2} ({:.2} + {:.2}) / {:.2}",
            p.write,
            p.write_layout,
            p.write_copy,
            p.run,
            p.readback,
            p.readback_copy,
            p.readback_map,
            p.gather
        )
    };
    for r in rows {
        println!(
            "K={} {} by {}, {} write, {} read: write (layout + copy) / run / readback \
             (copy + map) / gather ms: {} GPUs {}; one GPU {}",
            r.k,
            r.variant,
            r.cut,
            r.write_mode,
            r.read_mode,
            gpus.len(),
            phases(&r.breakdown_ms),
            phases(&r.one_gpu_breakdown_ms)
        );
    }
}
