//! `wgsparse fused`: time (and check, sweep) the pattern α·Xᵀ(v ⊙ (X·y)) + β·z.

use std::process::ExitCode;

use serde_json::json;

use wgsparse::fused::bench::{self, Input, Measurement, Operands, Reference};
use wgsparse::fused::transpose::PassFacts;
use wgsparse::fused::tune::TuneStep;
use wgsparse::fused::{Diag, Options, Pattern, Plan, Reorder, Variant};
use wgsparse::{io, report, Error, Gpu, Result};

mod args;
mod export;

pub use args::FusedArgs;
use args::{FoldArg, ReorderArg, VariantArg, XtOrderArg};
use export::export;
pub(crate) use export::{export_matrix, write_f32};

fn load(a: &FusedArgs) -> Result<(String, Input)> {
    if let Some(dir) = &a.matrix_raw {
        return Ok((
            dir.display().to_string(),
            Input::Sparse(io::read_csr_binary(dir)?),
        ));
    }
    if let Some(p) = &a.matrix {
        return Ok((
            p.display().to_string(),
            Input::Sparse(io::read_matrix_market(p)?),
        ));
    }
    if let Some(p) = &a.libsvm {
        return Ok((
            p.display().to_string(),
            Input::Sparse(io::read_libsvm(p)?.features),
        ));
    }
    let name = if a.scale < 1.0 {
        format!("{}@{}", a.gen, a.scale)
    } else {
        a.gen.clone()
    };
    Ok((name, bench::generate(&a.gen, a.scale, a.seed)?))
}

fn variants(list: &[VariantArg]) -> Vec<Variant> {
    let mut out = vec![];
    for v in list {
        match v {
            VariantArg::Auto => out.push(Variant::Auto),
            VariantArg::All => out.extend(Variant::CONCRETE),
            VariantArg::Fused => out.push(Variant::Fused),
            VariantArg::Unfused => out.push(Variant::Unfused),
            VariantArg::TwoPass => out.push(Variant::TwoPass),
            VariantArg::Sorted => out.push(Variant::Sorted),
            VariantArg::Split => out.push(Variant::Split),
            VariantArg::Stream => out.push(Variant::Stream),
            VariantArg::Transpose => out.push(Variant::Transpose),
        }
    }
    out.dedup();
    out
}

/// (pattern, variant, measurement or why it did not run).
type Outcome = (Pattern, Variant, std::result::Result<Measurement, String>);

/// Runs `wgsparse fused`.
pub fn run(a: FusedArgs) -> Result<ExitCode> {
    let gpu = Gpu::new_with(&wgsparse::gpu::GpuOptions {
        max_binding_bytes: a.max_binding_bytes,
        ..Default::default()
    })?;
    // Host wall-clock phases (generation or loading, export, each plan and measurement), so a
    // slow step on a large input shows where its time went.
    let clock = std::time::Instant::now();
    // What runs now, on stderr where it is a terminal (generation, tuning and sweeps of large
    // inputs take minutes).
    let bar = super::spinner(!a.json, "loading X");
    // Each phase's message with the time since it began.
    let say = |msg: String| {
        if let Some(b) = &bar {
            b.set_message(msg);
            b.reset_elapsed();
        }
    };
    let (name, input) = load(&a)?;
    let load_s = clock.elapsed().as_secs_f64();
    let x = input.matrix();
    let (m, n) = x.shape();
    let base = Options {
        atomics: a.atomics.into(),
        wg_atomics: a.wg_atomics.into(),
        wg_fixed: a.wg_fixed.map(|k| k == FoldArg::On),
        subgroups: !a.no_subgroups,
        workgroup_w: a.global_w.then_some(false),
        hot_cols: a.hot_cols,
        long_row: a.long_row,
        vs: a.vs,
        workgroup: a.wg,
        rows_per_vector: a.c,
        tl: a.tl,
        rows_in_flight: a.rows_in_flight,
        fold: a.fold == FoldArg::On,
        regs: a.regs,
        prefetch: a.prefetch,
        epl: a.epl,
        row_tile: a.row_tile,
        key16: a.key16.map(|k| k == FoldArg::On),
        y_shared: a.stream_y.map(|k| k == FoldArg::On),
        wg_copies: a.wg_copies,
        unit_tiles: a.unit_tiles,
        panels: a.panels,
        xt_caller: a.xt_order.map(|o| o == XtOrderArg::Caller),
        groups: a.groups,
        reorder: match a.reorder_cols {
            ReorderArg::Auto => Reorder::Auto,
            ReorderArg::On => Reorder::On,
            ReorderArg::Off => Reorder::Off,
        },
        diag: match &a.diag {
            Some(list) => Diag::parse(list)?,
            None => Diag::default(),
        },
        ..Default::default()
    };
    if base.diag.any() {
        let tuned_auto = !a.no_tune && a.variant.iter().any(|v| matches!(v, VariantArg::Auto));
        if a.check || a.export.is_some() || tuned_auto {
            return Err(Error::Option(format!(
                "--diag {}: timing only (results not valid), so not with --check, --export or \
                 a tuned `auto` (add --no-tune)",
                base.diag.names().join(",")
            )));
        }
        if !a.json {
            eprintln!(
                "warning: --diag {}: timing only, the results are not valid",
                base.diag.names().join(",")
            );
        }
    }
    let clock = std::time::Instant::now();
    if let Some(dir) = &a.export {
        say(format!("exporting to {}", dir.display()));
        export(&gpu, dir, &input, &base, a.seed + 17)?;
    }
    let export_s = a.export.as_ref().map(|_| clock.elapsed().as_secs_f64());
    // Per result: wall seconds of its plan (tuning included) and measurement, and what its plan
    // reports.
    let mut walls: Vec<(f64, Option<PlanFacts>)> = vec![];
    // Per result: the median ms of each pass (`--passes`; the first is the result's own).
    let mut passes: Vec<Vec<f64>> = vec![];
    let roofline = if a.roofline {
        say("measuring the roofline".into());
        let r = report::roofline::measure(&gpu, 1 << 30, 10, 10)?;
        Some((r.copy_gbps, r.read_gbps))
    } else {
        None
    };
    let mut results: Vec<Outcome> = vec![];
    let mut sweeps = vec![];
    let mut failed = false;
    for p in a.pattern.iter().map(|p| p.pattern()) {
        let ops = Operands::random(&gpu, m, n, p, a.seed + 17)?;
        let reference = a.check.then(|| Reference::new(x, &ops));
        let mut first: Option<Plan> = None;
        for v in variants(&a.variant) {
            let options = Options {
                variant: v,
                ..base.clone()
            };
            let clock = std::time::Instant::now();
            let tuned = v == Variant::Auto && !a.no_tune;
            say(format!(
                "{} {}: {}",
                p.name(),
                v.name(),
                if tuned { "tuning" } else { "planning" }
            ));
            // The candidates screened so far and the fastest in the spinner, the tuning's
            // elapsed time kept.
            let fastest = std::cell::Cell::new(f64::INFINITY);
            let heard = |k: usize, step: &TuneStep| {
                fastest.set(fastest.get().min(step.ms));
                if let Some(b) = &bar {
                    b.set_message(format!(
                        "{} auto: tuning, {k} candidates screened, the fastest {:.4} ms",
                        p.name(),
                        fastest.get()
                    ));
                }
            };
            let plan = match &first {
                _ if tuned => {
                    wgsparse::fused::tune::autotuned_plan_observed(&gpu, x, &options, Some(&heard))
                }
                Some(like) => Plan::new_like(&gpu, x, &options, like),
                None => Plan::new(&gpu, x, &options),
            };
            let measured = plan.and_then(|plan| {
                if a.settle > 0.0 {
                    say(format!(
                        "{} {}: settling {} s",
                        p.name(),
                        v.name(),
                        a.settle
                    ));
                    std::thread::sleep(std::time::Duration::from_secs_f64(a.settle));
                }
                say(format!("{} {}: measuring", p.name(), v.name()));
                if a.spin_first {
                    wgsparse::gpu::warm_clocks(&gpu)?;
                }
                let runs = a.runs_per_submit as usize;
                let meas =
                    bench::measure_runs(&gpu, &plan, &ops, a.reps, reference.as_ref(), runs)?;
                let mut ms = vec![meas.ms];
                for _ in 1..a.passes {
                    if a.spin_first {
                        wgsparse::gpu::warm_clocks(&gpu)?;
                    }
                    ms.push(bench::measure_runs(&gpu, &plan, &ops, a.reps, None, runs)?.ms);
                }
                Ok((meas, plan, ms))
            });
            walls.push((
                clock.elapsed().as_secs_f64(),
                measured
                    .as_ref()
                    .ok()
                    .map(|(_, plan, _)| PlanFacts::of(plan, p)),
            ));
            match measured {
                Ok((meas, plan, ms)) => {
                    results.push((p, v, Ok(meas)));
                    passes.push(ms);
                    first.get_or_insert(plan);
                }
                Err(
                    e @ (Error::Check { .. }
                    | Error::Option(_)
                    | Error::TooLarge { .. }
                    | Error::Unsupported(_)),
                ) => {
                    // An input beyond the device's limits is reported, not a failure (as in
                    // `wgsparse sddmm`); everything else is.
                    failed |= !matches!(e, Error::TooLarge { .. });
                    if !a.json {
                        let line = || eprintln!("{} {}: {e}", p.name(), v.name());
                        match &bar {
                            Some(b) => b.suspend(line),
                            None => line(),
                        }
                    }
                    results.push((p, v, Err(e.to_string())));
                    passes.push(vec![]);
                }
                Err(e) => return Err(e),
            }
        }
        if a.sweep {
            let mut points = 0;
            let sw = bench::sweep(&gpu, x, &ops, &base, a.reps.min(5), |_| {
                points += 1;
                say(format!("{} sweep: configuration {points} timed", p.name()));
            })?;
            if let Some(path) = &a.plot {
                let path = super::plot_path(path, p.name(), a.pattern.len() > 1);
                let title = format!(
                    "fused sweep: {}, {}, {}",
                    name,
                    p.name(),
                    gpu.caps.adapter_name
                );
                report::plot::write_svg(&path, &report::plot::fused_sweep_svg(&sw, &title)?)?;
                if let Some(b) = &bar {
                    b.println(format!("plot written to {}", path.display()));
                }
            }
            sweeps.push((p, sw));
        }
    }
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    // Shares of the copy roofline (the bar's denominator) and of the read-only stream's.
    let fraction = |gbps: f64| roofline.map(|r| gbps / r.0);
    let read_fraction = |gbps: f64| roofline.map(|r| gbps / r.1);
    if a.json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name,
                "input": { "name": name, "m": m, "n": n, "nnz": x.nnz(),
                           "dense": matches!(input, Input::Dense(_)) },
                "roofline_gbps": roofline.map(|r| r.0),
                "read_roofline_gbps": roofline.map(|r| r.1),
                "reorder_cols": base.reorder.name(),
                "diag": base.diag.names(),
                "valid_result": !base.diag.any(),
                "results": results.iter().zip(&walls).zip(&passes).map(|(((p, v, r), (wall, facts)), ms)| match (r, facts) {
                    (Ok(meas), Some(f)) => json!({ "pattern": p.name(), "variant": v.name(),
                        "measurement": meas, "roofline_fraction": fraction(meas.gbps),
                        "read_roofline_fraction": read_fraction(meas.gbps),
                        "passes_ms": ms,
                        "wall_s": wall, "long_chunks": f.long_chunks, "bands": f.bands,
                        "dispatches": f.dispatches,
                        "sorted_adds": f.sorted_adds.map(|((e, a), wide)|
                            json!({ "entries": e, "adds": a, "wide_keys": wide })),
                        "split_adds": f.split_adds.map(|(e, a, c)|
                            json!({ "entries": e, "adds": a, "chunks": c })),
                        "x_tiles": f.x_tiles,
                        "stream_rows_max": f.stream_rows_max,
                        "transpose_pass": f.transpose_pass.map(|t|
                            json!({ "vs": t.vs, "long_row": t.long_row,
                                    "long_chunks": t.long_chunks, "tiles": t.tiles })),
                        "build_s": f.build_s, "tuning": f.tuning }),
                    (Err(e), _) => json!({ "pattern": p.name(), "variant": v.name(), "error": e,
                        "wall_s": wall }),
                    (Ok(_), None) => unreachable!("a measured plan reports its facts"),
                }).collect::<Vec<_>>(),
                "host_s": { "load": load_s, "export": export_s },
                "sweeps": sweeps.iter().map(|(p, s)| json!({
                    "pattern": p.name(), "points": s.points, "best": s.best,
                    "model": s.model, "model_gap": s.model_gap,
                })).collect::<Vec<_>>(),
                "ok": !failed,
            })
        );
    } else {
        println!(
            "fused pattern on {} — X = {name}: {m}×{n}, {} stored entries{}",
            gpu.caps.adapter_name,
            x.nnz(),
            roofline.map_or(String::new(), |(c, r)| format!(
                "; copy roofline {c:.1} GB/s, read-only stream {r:.1} GB/s"
            ))
        );
        let mut t = super::table(&[
            "pattern",
            "variant",
            "kernel",
            "config",
            "GPU ms",
            "GB/s",
            "% roofline",
            "GFLOP/s",
            "max rel err",
        ]);
        for (p, v, r) in &results {
            match r {
                Ok(meas) => t.add_row(vec![
                    p.name().to_string(),
                    v.name().to_string(),
                    meas.kernel.clone(),
                    meas.config.describe(),
                    format!("{:.4}", meas.ms),
                    format!("{:.1}", meas.gbps),
                    fraction(meas.gbps).map_or("—".into(), |f| format!("{:.0}%", 100.0 * f)),
                    format!("{:.1}", meas.gflops),
                    meas.max_rel_error
                        .map_or("—".into(), |e| format!("{e:.1e}")),
                ]),
                Err(e) => t.add_row(vec![p.name().to_string(), v.name().to_string(), e.clone()]),
            };
        }
        println!("{t}");
        if a.passes > 1 {
            for ((p, v, _), ms) in results.iter().zip(&passes).filter(|(_, ms)| !ms.is_empty()) {
                let ms: Vec<String> = ms.iter().map(|t| format!("{t:.4}")).collect();
                println!("{} {}: ms per pass {}", p.name(), v.name(), ms.join(", "));
            }
        }
        let most_bands = walls
            .iter()
            .filter_map(|(_, f)| f.as_ref().map(|f| f.bands));
        if let Some(b) = most_bands.max().filter(|&b| b > 1) {
            println!(
                "X bound in up to {b} row bands (storage bindings of at most {} bytes)",
                gpu.caps.max_storage_binding_bytes
            );
        }
        for (p, s) in &sweeps {
            println!(
                "sweep {}: {} points; best {:.4} ms ({}); model {:.4} ms ({}): {:+.1}% from best",
                p.name(),
                s.points.len(),
                s.best.ms,
                s.best.config.describe(),
                s.model.ms,
                s.model.config.describe(),
                100.0 * s.model_gap
            );
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// What a measured plan reports beside its timing (the JSON's per-result keys).
struct PlanFacts {
    long_chunks: usize,
    /// The sorted scatter's (entries, adds) and whether its keys are wide.
    sorted_adds: Option<((usize, usize), bool)>,
    /// X's row bands.
    bands: usize,
    dispatches: usize,
    split_adds: Option<(usize, usize, usize)>,
    /// `transpose`: X's row tiles (0: the row kernel) and Xᵀ's pass.
    x_tiles: Option<usize>,
    transpose_pass: Option<PassFacts>,
    /// `stream`: the rows of its fullest tile.
    stream_rows_max: Option<u32>,
    /// Host seconds building the plan took, and `auto`'s screened candidates when it was
    /// tuned in this process.
    build_s: f64,
    tuning: Option<Vec<TuneStep>>,
}

impl PlanFacts {
    fn of(plan: &Plan, pattern: Pattern) -> PlanFacts {
        PlanFacts {
            long_chunks: plan.long_chunks(),
            sorted_adds: plan.sorted_adds().map(|a| (a, plan.sorted_wide())),
            bands: plan.n_bands(),
            dispatches: plan.dispatches(pattern),
            split_adds: plan.split_adds(),
            x_tiles: plan.transpose_x_tiles(),
            stream_rows_max: plan.stream_rows_max(),
            transpose_pass: plan.transpose_pass(),
            build_s: plan.build_seconds(),
            tuning: plan.tuning().map(<[_]>::to_vec),
        }
    }
}
