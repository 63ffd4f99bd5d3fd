//! The `wgsparse demo` row of `wide`: FM (k = 4) trained one epoch in sync mode on Zipf CTR
//! data, checked against the f64 twin's exact mini-batch SGD.

use crate::gpu::Gpu;
use crate::report::demo::DemoRow;
use crate::wide::{cpu, metrics, Model, Options, Trainer};
use crate::Result;

/// One sync epoch of FM k = 4 (4,096 samples of 12 features among 600, batch 256, no
/// shuffle) against the twin; `max_rel_error` is the largest |GPU − twin| / (|twin| + 10⁻³)
/// over the parameters, passing at ≤ 10⁻⁴.
pub fn demo_row(gpu: &Gpu) -> Result<DemoRow> {
    let (n, m, k) = (4096, 600, 4);
    let model = Model::Fm { k };
    let d = crate::gen::zipf_ctr(n, m, 12, crate::gen::CtrModel::Fm { k }, 2026)?;
    let spec = model.spec()?;
    let options = Options {
        batch: 256,
        shuffle: false,
        ..Options::default()
    };
    let mut t = Trainer::new(
        gpu,
        &spec,
        m,
        (&d.features, &d.labels),
        None,
        options.clone(),
    )?;
    let start: Vec<f64> = t.params()?.iter().map(|&v| v as f64).collect();
    let (_, time) = t.train_epoch()?;
    let got = t.params()?;
    let mut want = start;
    let y = metrics::labels_pm1(&d.labels);
    let rows: Vec<usize> = (0..n).collect();
    for b in rows.chunks(options.batch) {
        cpu::sgd_step(model, &mut want, &d.features, &y, b, options.lr as f64);
    }
    let rel = got
        .iter()
        .zip(&want)
        .map(|(&g, &w)| (g as f64 - w).abs() / (w.abs() + 1e-3))
        .fold(0.0f64, f64::max);
    let nnz = d.features.nnz() as f64;
    Ok(DemoRow {
        system: "wide",
        kernel: "wide.flow + wide.apply".into(),
        detail: format!(
            "FM k={k}, {n}×{m} nnz {} batch 256, 1 sync epoch (16 mini-batches)",
            d.features.nnz()
        ),
        ms: time.seconds * 1e3,
        // Aggregate 2 + 4k flops per nonzero, Apply ≈ 2 + 5k (gradient and sum).
        gflops: nnz * (4.0 + 9.0 * k as f64) / time.seconds / 1e9,
        max_rel_error: rel,
        ok: rel <= 1e-4,
    })
}
