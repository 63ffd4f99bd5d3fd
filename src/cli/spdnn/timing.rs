//! How `wgsparse spdnn` times a plan: the whole run (median of warm runs) and each layer.

use wgsparse::gpu::{median_warm, GpuTime};
use wgsparse::spdnn::Plan;
use wgsparse::{Gpu, Result};

use super::SpdnnArgs;

/// Times `plan`: a first run in groups of 10 layers behind a progress bar (unless --json),
/// then the median of the warm runs, each one submission or groups of --group-layers.
pub(super) fn timed(gpu: &Gpu, plan: &Plan, a: &SpdnnArgs) -> Result<GpuTime> {
    if !a.json {
        let bar = indicatif::ProgressBar::new(plan.layers() as u64);
        bar.set_style(
            indicatif::ProgressStyle::with_template("{bar:30} layer {pos}/{len} {elapsed}")
                .expect("template"),
        );
        plan.run_grouped(gpu, 10, |done| bar.set_position(done as u64))?;
        bar.finish_and_clear();
    }
    if a.reps == 0 {
        return plan.run(gpu);
    }
    median_warm(gpu, a.reps, || {
        if a.group_layers == 0 {
            plan.run(gpu)
        } else {
            plan.run_grouped(gpu, a.group_layers, |_| {})
        }
    })
}

/// Each layer's time in ms, the median over `reps` (at least 1) runs of one submission per
/// layer, and where the times came from ("timestamps" or "wall clock").
pub(super) fn layer_times(gpu: &Gpu, plan: &Plan, reps: usize) -> Result<(Vec<f64>, &'static str)> {
    let runs = (0..reps.max(1))
        .map(|_| plan.run_per_layer(gpu))
        .collect::<Result<Vec<_>>>()?;
    let source = if runs.iter().flatten().all(|t| t.from_timestamps) {
        "timestamps"
    } else {
        "wall clock"
    };
    let ms = (0..plan.layers())
        .map(|l| {
            let mut at: Vec<f64> = runs.iter().map(|r| r[l].ms()).collect();
            at.sort_by(f64::total_cmp);
            at[at.len() / 2]
        })
        .collect();
    Ok((ms, source))
}
