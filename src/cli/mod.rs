//! Subcommands of the `wgsparse` binary. Each prints a table, or one JSON object with
//! `--json`.

mod device;
mod fused;
mod gen;
mod linreg;
mod logreg;
mod mf;
mod sddmm;
mod spdnn;
mod spdnn_thesis;
mod wide;
mod wide_predict;
mod wide_sweep;
mod wide_variant;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use comfy_table::Table;
use serde_json::json;

use wgsparse::{report, Gpu, Result};

/// The exit codes, shown by `--help`.
const EXIT_CODES: &str = "Exit status: 0 when everything ran and every check passed; 1 when \
a variant, a K, a check or a comparison failed (the table is still printed, each failure on \
stderr as an `error:` line); 2 when nothing could run (bad input, a size beyond the device's \
or the host's limits, no adapter, bad arguments); 141 when stdout was closed early.";

/// Sparse machine-learning GPU kernels in WGSL on wgpu.
#[derive(Parser)]
#[command(name = "wgsparse", version, about, after_help = EXIT_CODES)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Show the adapter, its capabilities and limits.
    Info(JsonFlag),
    /// Measure copy bandwidth and per-dispatch overhead: the denominator of every report.
    Roofline(device::RooflineArgs),
    /// Measure how many workgroups the device keeps resident (the launch models' residency)
    /// and store it for this adapter and driver.
    Calibrate(device::CalibrateArgs),
    /// Write a generated data set in a standard format.
    Gen(gen::GenArgs),
    /// Run every implemented system on built-in data, check each against its CPU twin.
    Demo(JsonFlag),
    /// Time (and check, sweep, tune) SDDMM variants on a matrix file or a suite matrix.
    Sddmm(sddmm::SddmmArgs),
    /// Time (and check, sweep) the fused pattern α·Xᵀ(v ⊙ (X·y)) + β·z.
    Fused(fused::FusedArgs),
    /// Linear regression by conjugate gradient on the fused pattern.
    Linreg(linreg::LinregArgs),
    /// Logistic regression by trust-region Newton-CG on the fused pattern.
    Logreg(logreg::LogregArgs),
    /// Matrix factorization by SGD (cuMF_SGD): train, or predict with a saved model.
    Mf(mf::MfArgs),
    /// Sparse DNN inference (GraphChallenge): time, edges/s and the categories checked.
    Spdnn(spdnn::SpdnnArgs),
    /// Wide models (LR, FM, LSVM, LSR) by cuWide's flow engine: train, or predict.
    Wide(wide::WideArgs),
}

#[derive(clap::Args)]
struct JsonFlag {
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the parsed command; the exit code is 1 when a check failed.
pub fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Info(a) => device::info(a.json),
        Command::Roofline(a) => device::roofline(a),
        Command::Calibrate(a) => device::calibrate(a),
        Command::Gen(a) => gen::run(a),
        Command::Demo(a) => demo(a.json),
        Command::Sddmm(a) => sddmm::run(a),
        Command::Fused(a) => fused::run(a),
        Command::Linreg(a) => linreg::run(a),
        Command::Logreg(a) => logreg::run(a),
        Command::Mf(a) => mf::run(a),
        Command::Spdnn(a) => spdnn::run(a),
        Command::Wide(a) => wide::run(a),
    }
}

/// The devices `--gpus N|all` names: N devices (the first adapters; with
/// `WGSPARSE_SHARE_ADAPTERS=1` one adapter opened N times) or one per hardware adapter.
pub(crate) fn open_gpus(arg: &str) -> Result<Vec<Gpu>> {
    let count = match arg {
        "all" => None,
        n => Some(n.parse::<usize>().map_err(|_| {
            wgsparse::Error::Option(format!("--gpus {n}: expected a count or `all`"))
        })?),
    };
    Gpu::several(count, &wgsparse::gpu::GpuOptions::default())
}

/// A spinner on stderr showing `msg` and the time since it started (drawn only where stderr
/// is a terminal), when `on`: tuning a large input takes minutes.
pub(crate) fn spinner(on: bool, msg: &str) -> Option<indicatif::ProgressBar> {
    on.then(|| {
        let b = indicatif::ProgressBar::new_spinner().with_message(msg.to_string());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
            b.set_style(style);
        }
        b.enable_steady_tick(std::time::Duration::from_millis(120));
        b
    })
}

/// The file one of several sweeps' plots goes to: `path`, with `-SUFFIX` before the
/// extension when `several` sweeps share one --plot (`sweep.svg` → `sweep-k32.svg`).
pub(crate) fn plot_path(path: &std::path::Path, suffix: &str, several: bool) -> PathBuf {
    if !several {
        return path.to_path_buf();
    }
    let stem = path
        .file_stem()
        .map_or("sweep".into(), |s| s.to_string_lossy().into_owned());
    let ext = path
        .extension()
        .map_or("svg".into(), |e| e.to_string_lossy().into_owned());
    path.with_file_name(format!("{stem}-{suffix}.{ext}"))
}

/// A table with the house style.
pub(crate) fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(comfy_table::presets::UTF8_BORDERS_ONLY);
    t.set_header(header.to_vec());
    t
}

fn demo(as_json: bool) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let bar = spinner(!as_json, "");
    let rows = report::demo::run(&gpu, |step| {
        if let Some(b) = &bar {
            b.set_message(step.to_string());
        }
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    let all_ok = rows.iter().all(|r| r.ok);
    if as_json {
        println!(
            "{}",
            json!({ "adapter": gpu.caps.adapter_name, "rows": rows, "ok": all_ok })
        );
    } else {
        println!(
            "wgsparse demo on {} ({})",
            gpu.caps.adapter_name, gpu.caps.backend
        );
        let mut t = table(&[
            "system",
            "kernel",
            "problem / config",
            "GPU ms",
            "GFLOP/s",
            "max rel err",
            "check",
        ]);
        for r in &rows {
            t.add_row(vec![
                r.system.to_string(),
                r.kernel.clone(),
                r.detail.clone(),
                format!("{:.3}", r.ms),
                format!("{:.1}", r.gflops),
                format!("{:.1e}", r.max_rel_error),
                if r.ok { "ok" } else { "FAILED" }.to_string(),
            ]);
        }
        println!("{t}");
        println!(
            "{}",
            if all_ok {
                "all checks passed"
            } else {
                "SOME CHECKS FAILED"
            }
        );
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
