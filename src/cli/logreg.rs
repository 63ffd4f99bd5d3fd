//! `wgsparse logreg`: logistic regression by trust-region Newton-CG on the fused pattern.

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::json;

use wgsparse::fused::bench::Input;
use wgsparse::fused::logreg::{self, TronOptions};
use wgsparse::fused::{cpu, Matrix, Options};
use wgsparse::{io, Error, Gpu, Result};

/// Arguments of `wgsparse logreg`.
#[derive(clap::Args)]
pub struct LogregArgs {
    #[command(flatten)]
    data: super::linreg::TrainData,
    /// Validation data (LIBSVM) for logloss and AUC (default: the training data).
    #[arg(long)]
    valid: Option<PathBuf>,
    /// Ridge term λ (LIBLINEAR's 1/C).
    #[arg(long, default_value_t = 1.0)]
    lambda: f32,
    /// Most Newton iterations.
    #[arg(long, default_value_t = 50)]
    max_iter: usize,
    /// Stop when ‖∇f‖ ≤ eps·‖∇f(0)‖.
    #[arg(long, default_value_t = 1e-3)]
    eps: f64,
    /// Also train the f64 twin and fail when the objectives differ by more than 1e-4.
    #[arg(long)]
    check: bool,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `wgsparse logreg`.
pub fn run(a: LogregArgs) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let (name, input, labels) = a.data.load()?;
    let Input::Sparse(x) = input else {
        return Err(Error::Option(format!(
            "logreg takes sparse X; {name} is dense"
        )));
    };
    // Planted regression targets become 0/1 labels (LIBSVM labels are used as they are).
    let labels: Vec<f32> = if a.data.libsvm.is_some() {
        labels
    } else {
        labels.iter().map(|&v| (v > 0.0) as u8 as f32).collect()
    };
    // The configuration `fused --variant auto` picks (tuned once per adapter and shape).
    let plan =
        wgsparse::fused::tune::autotuned_plan(&gpu, Matrix::Sparse(&x), &Options::default())?;
    let options = TronOptions {
        lambda: a.lambda,
        eps: a.eps,
        max_iter: a.max_iter,
        ..Default::default()
    };
    let report = logreg::logreg_tron(&gpu, &plan, &labels, &options, |i, f| {
        if !a.json {
            println!("iteration {i:>3}: f = {f:.6e}");
        }
    })?;
    let (logloss, auc) = match &a.valid {
        Some(p) => {
            let v = io::read_libsvm_with(p, Some(plan.n))?;
            logreg::evaluate(&v.features, &v.labels, &report.w)
        }
        None => logreg::evaluate(&x, &labels, &report.w),
    };
    let mut failed = false;
    let mut twin_rel = None;
    if a.check {
        let mut twin = cpu::LogregTwin::new(&x, &labels, a.lambda);
        let (_, _, losses, _, _) = logreg::tron(&mut twin, &options, |_, _| {})?;
        let (f, t) = (
            *report.losses.last().unwrap_or(&f64::NAN),
            *losses.last().unwrap_or(&f64::NAN),
        );
        let rel = (f - t).abs() / t.abs().max(f64::MIN_POSITIVE);
        failed = rel.is_nan() || rel > 1e-4;
        twin_rel = Some(rel);
        if failed && !a.json {
            eprintln!("check failed: objective {f} vs the f64 twin's {t}");
        }
    }
    let on = if a.valid.is_some() {
        "validation"
    } else {
        "training"
    };
    if a.json {
        println!(
            "{}",
            json!({
                "adapter": gpu.caps.adapter_name, "input": name, "m": plan.m, "n": plan.n,
                "nnz": plan.nnz, "iterations": report.iterations,
                "cg_iterations": report.cg_iterations, "losses": report.losses,
                "logloss": logloss, "auc": auc, "metrics_on": on, "seconds": report.seconds,
                "twin_rel_diff": twin_rel, "ok": !failed,
            })
        );
    } else {
        println!(
            "logreg TRON on {} — {name}: {}×{}, {} nonzeros",
            gpu.caps.adapter_name, plan.m, plan.n, plan.nnz
        );
        println!(
            "{} Newton iterations ({} CG), {on} logloss {logloss:.6}, auc {auc:.4}, {:.3} s",
            report.iterations, report.cg_iterations, report.seconds
        );
        if let Some(r) = twin_rel {
            println!("f64 twin: objective within {r:.2e}");
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
