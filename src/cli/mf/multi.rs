//! `wgsparse mf train --gpus N|all`: one model trained on several devices by cuMF_SGD's
//! block schedule, reported per GPU and in total.

use std::process::ExitCode;

use serde_json::json;

use super::report::{epoch_bar, print_epochs, tick, Totals};
use super::{save_model, Outputs};
use wgsparse::io::{IdMap, Ratings};
use wgsparse::mf::{self, MultiTrainer, Precision};
use wgsparse::{Gpu, Result};

/// Epochs and column blocks per GPU.
pub(super) struct Run {
    pub epochs: usize,
    pub split: usize,
}

/// Trains on `gpus` and prints the report (table or JSON).
pub(super) fn train(
    gpus: &[Gpu],
    (tr, te): (&Ratings, Option<&Ratings>),
    ids: Option<IdMap>,
    options: mf::Options,
    Run { epochs, split }: Run,
    source: &str,
    out: Outputs,
) -> Result<ExitCode> {
    let half = options.precision == Precision::F16;
    let k = options.k;
    let mut trainer = MultiTrainer::new(gpus, tr, te, options.clone(), split)?;
    let g = trainer.devices();
    let warm_up = if out.warm_up { trainer.warm_up()? } else { 0.0 };
    let bar = epoch_bar(epochs, out.json);
    let on = format!(" on {g} GPUs");
    let metrics = trainer.fit(epochs, |m| {
        tick(&bar, m.common.rmse, m.common.updates_per_s, &on)
    })?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let Totals {
        seconds,
        updates,
        nnz_rate,
        bytes_per_update,
        final_rmse,
    } = Totals::new(metrics.iter().map(|m| &m.common), epochs, tr.len(), k, half);
    save_model(trainer.model()?, ids, &out)?;
    // Per GPU over all epochs: updates, wall time, time waiting for a neighbour's Q block.
    let grid = trainer.grid().clone();
    let per_gpu: Vec<serde_json::Value> = (0..g)
        .map(|d| {
            let wall: f64 = metrics.iter().map(|m| m.devices[d].seconds).sum();
            let wait: f64 = metrics.iter().map(|m| m.devices[d].wait_seconds).sum();
            let upd: u64 = metrics.iter().map(|m| m.devices[d].updates).sum();
            let ratings: usize = (0..grid.col_blocks()).map(|c| grid.block(d, c).len()).sum();
            json!({
                "device": d,
                "adapter": gpus[d].caps.adapter_name,
                "users": grid.row_range(d).len(),
                "ratings": ratings,
                "updates": upd,
                "seconds": wall,
                "wait_seconds": wait,
                "updates_per_s": upd as f64 / wall.max(1e-12),
            })
        })
        .collect();
    let (lanes, subgroup) = trainer.lanes();
    if out.json {
        println!(
            "{}",
            json!({
                "gpus": g,
                "split": split,
                "devices": per_gpu,
                "data": source,
                "users": tr.n_users, "items": tr.n_items, "nnz": tr.len(),
                "test": trainer.test_len(), "skipped_test": trainer.skipped_test(),
                "k": k, "scheme": options.scheme, "precision": options.precision,
                "native_f16": trainer.native_f16(), "coherent": trainer.coherent(),
                "workers_per_gpu": trainer.workers(), "lanes": lanes,
                "subgroup_reduce": subgroup,
                "batch": options.batch, "ilp": options.ilp, "vector": trainer.vector(), "lambda": options.lambda, "alpha": options.alpha,
                "beta": options.beta, "sigma": trainer.sigma(),
                "epochs": metrics,
                "rmse": metrics.iter().map(|m| m.common.rmse).collect::<Vec<_>>(),
                "final_rmse": final_rmse,
                "noise_floor": out.floor,
                "train_seconds": seconds,
                "eval_seconds": metrics.iter().map(|m| m.eval_seconds).sum::<f64>(),
                "warm_up_seconds": warm_up,
                "updates": updates,
                "updates_per_s": nnz_rate,
                "bytes_per_update": bytes_per_update,
                "gb_per_s": nnz_rate * bytes_per_update as f64 / 1e9,
            })
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "mf on {g} GPUs ({g}×{} blocks): {source}, {} users × {} items, {} train, {} test \
         ({} skipped: unseen ids)",
        g * split,
        tr.n_users,
        tr.n_items,
        tr.len(),
        trainer.test_len(),
        trainer.skipped_test()
    );
    println!(
        "k {k}, {:?}, {:?}{}, {} workers × {lanes} lanes per GPU ({}), f {}",
        options.scheme,
        options.precision,
        if trainer.native_f16() { " native" } else { "" },
        trainer.workers(),
        if subgroup {
            "subgroup shuffles"
        } else {
            "workgroup memory"
        },
        options.batch
    );
    let mut t = super::super::table(&[
        "GPU",
        "adapter",
        "users",
        "ratings",
        "updates",
        "wall s",
        "waiting s",
        "G updates/s",
    ]);
    for d in &per_gpu {
        t.add_row(vec![
            d["device"].to_string(),
            d["adapter"].as_str().unwrap_or("").to_string(),
            d["users"].to_string(),
            d["ratings"].to_string(),
            d["updates"].to_string(),
            format!("{:.3}", d["seconds"].as_f64().unwrap_or(0.0)),
            format!("{:.3}", d["wait_seconds"].as_f64().unwrap_or(0.0)),
            format!("{:.3}", d["updates_per_s"].as_f64().unwrap_or(0.0) / 1e9),
        ]);
    }
    println!("{t}");
    print_epochs(metrics.iter().map(|m| &m.common));
    if warm_up > 0.0 {
        println!("clocks warmed up first for {warm_up:.2} s (a spin kernel on every GPU)");
    }
    println!(
        "{epochs} epochs in {seconds:.3} s wall on {g} GPUs: {:.3} G updates/s (epochs·nnz / \
         time, Q passes included); final test RMSE {}",
        nnz_rate / 1e9,
        final_rmse.map_or("-".into(), |r| format!("{r:.4}"))
    );
    if let Some(f) = out.floor {
        println!("planted model's test RMSE (noise floor): {f:.4}");
    }
    Ok(ExitCode::SUCCESS)
}
