//! What `wgsparse mf train` shows while and after it trains: the epoch progress bar, the
//! per-epoch table and the run's totals.

use wgsparse::mf;

/// The progress bar over epochs (none with `--json`).
pub(super) fn epoch_bar(epochs: usize, json: bool) -> Option<indicatif::ProgressBar> {
    (!json).then(|| {
        let b = indicatif::ProgressBar::new(epochs as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} epoch {pos}/{len} {msg}")
                .expect("template"),
        );
        b
    })
}

/// Moves the bar one epoch on, showing the epoch's test RMSE and rate, then `suffix`.
pub(super) fn tick(
    bar: &Option<indicatif::ProgressBar>,
    rmse: Option<f64>,
    updates_per_s: f64,
    suffix: &str,
) {
    if let Some(b) = bar {
        b.inc(1);
        b.set_message(format!(
            "rmse {} · {:.3} G updates/s{suffix}",
            rmse.map_or("-".into(), |r| format!("{r:.4}")),
            updates_per_s / 1e9
        ));
    }
}

/// What a run's epochs add up to.
pub(super) struct Totals {
    /// Training seconds.
    pub(super) seconds: f64,
    pub(super) updates: u64,
    /// epochs · nnz / seconds.
    pub(super) nnz_rate: f64,
    /// The 12-byte sample plus p_u and q_v read and written.
    pub(super) bytes_per_update: usize,
    pub(super) final_rmse: Option<f64>,
}

impl Totals {
    /// Over the epochs run (one pass over `metrics`, borrowed), of `nnz` ratings with `k`
    /// features stored in f16 (`half`) or f32.
    pub(super) fn new<'a>(
        metrics: impl IntoIterator<Item = &'a mf::EpochMetrics>,
        epochs: usize,
        nnz: usize,
        k: usize,
        half: bool,
    ) -> Self {
        let (mut seconds, mut updates, mut final_rmse) = (0.0, 0, None);
        for m in metrics {
            seconds += m.seconds;
            updates += m.updates;
            final_rmse = m.rmse;
        }
        Totals {
            seconds,
            updates,
            nnz_rate: (epochs as f64 * nnz as f64) / f64::max(seconds, 1e-12),
            bytes_per_update: 12 + 4 * k * if half { 2 } else { 4 },
            final_rmse,
        }
    }
}

/// The per-epoch table: learning rate, test RMSE, updates, time and rate.
pub(super) fn print_epochs<'a>(metrics: impl IntoIterator<Item = &'a mf::EpochMetrics>) {
    let mut t = super::super::table(&["epoch", "lr", "test RMSE", "updates", "ms", "G updates/s"]);
    for m in metrics {
        t.add_row(vec![
            m.epoch.to_string(),
            format!("{:.4}", m.lr),
            m.rmse.map_or("-".into(), |r| format!("{r:.4}")),
            m.updates.to_string(),
            format!("{:.2}", m.seconds * 1e3),
            format!("{:.3}", m.updates_per_s / 1e9),
        ]);
    }
    println!("{t}");
}
