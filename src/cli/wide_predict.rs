//! `wgsparse wide predict`: scores of a saved wide model on a LIBSVM file, with the logloss
//! and AUC against its labels; the scores written atomically when asked.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use wgsparse::wide::{self, metrics, WideModel};
use wgsparse::{Error, Gpu, Result};

/// Runs `wgsparse wide predict --model MODEL --data DATA [--out OUT] [--json]`.
pub fn run(model: &Path, data: &Path, out: Option<&Path>, as_json: bool) -> Result<ExitCode> {
    let m = WideModel::load(model)?;
    let spec = m.spec()?;
    let (x, y) = wide::read_data(data)?;
    let gpu = Gpu::new()?;
    let scores = wide::predict(&gpu, &spec, &m, &x)?;
    let pm = metrics::labels_pm1(&y);
    let n = scores.len().max(1) as f64;
    let logloss: f64 = scores
        .iter()
        .zip(&pm)
        .map(|(&s, &y)| wide::Loss::Logistic.eval(s as f64, y as f64).0)
        .sum::<f64>()
        / n;
    let auc = metrics::auc(&scores, &pm);
    if let Some(p) = out {
        wgsparse::io::write_atomically(p, |w| {
            let mut write = || -> std::io::Result<()> {
                for s in &scores {
                    writeln!(w, "{s}")?;
                }
                Ok(())
            };
            write().map_err(|e| Error::io(p, e))
        })?;
    }
    if as_json {
        println!(
            "{}",
            json!({ "model": m.name, "samples": scores.len(), "logloss": logloss, "auc": auc })
        );
    } else {
        println!(
            "{} samples · logloss {logloss:.5} · auc {}",
            scores.len(),
            auc.map_or("-".into(), |a| format!("{a:.5}"))
        );
    }
    Ok(ExitCode::SUCCESS)
}
