//! A factorization machine on generated click-through data, then a model defined outside
//! the crate: a linear model with the squared hinge loss, written as WGSL and spliced into
//! the same engine.
//!
//! `cargo run --release --example ctr_fm`

use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::wide::{Model, ModelSpec, Options, Trainer};

fn main() -> wgsparse::Result<()> {
    let gpu = wgsparse::Gpu::new()?;
    let (n, m) = (40_000, 2_000);
    let d = zipf_ctr(n, m, 16, CtrModel::Fm { k: 4 }, 7)?;
    let split = n * 9 / 10;
    let train = (d.features.row_band(0..split), &d.labels[..split]);
    let valid = (d.features.row_band(split..n), &d.labels[split..]);
    let options = Options {
        batch: 256,
        ..Options::default()
    };

    let fm = Model::Fm { k: 4 }.spec()?;
    let mut t = Trainer::new(
        &gpu,
        &fm,
        m,
        (&train.0, train.1),
        Some((&valid.0, valid.1)),
        options.clone(),
    )?;
    println!(
        "FM k=4 on {} ({split} training samples)",
        gpu.caps.adapter_name
    );
    t.fit(8, |s| {
        println!(
            "epoch {:2}: train loss {:.4}  valid logloss {:.4}  auc {:.4}  {:.2} ms",
            s.epoch,
            s.train_loss,
            s.logloss.unwrap_or(f64::NAN),
            s.auc.unwrap_or(f64::NAN),
            s.seconds * 1e3
        )
    })?;

    // A user-defined model: Aggregate and Apply of the linear models, its own Loss.
    let sq_hinge = ModelSpec {
        name: "squared-hinge".into(),
        wgsl: r#"
#import wide/linear
// max(0, 1 − yŷ)² and its derivative in ŷ.
fn loss_of(yhat: f32, y: f32) -> vec2<f32> {
    let m = max(0.0, 1.0 - y * yhat);
    return vec2<f32>(m * m, -2.0 * y * m);
}
"#
        .into(),
        accums: 1,
        params_per_feature: 1,
        init_std: 0.0,
    };
    let mut t = Trainer::new(
        &gpu,
        &sq_hinge,
        m,
        (&train.0, train.1),
        Some((&valid.0, valid.1)),
        // The squared hinge's gradient grows with the margin: a smaller step.
        Options {
            lr: 0.05,
            ..options
        },
    )?;
    let stats = t.fit(8, |_| {})?;
    let last = stats.last().expect("epochs ran");
    println!(
        "squared hinge (user model): valid loss {:.4}, auc {:.4}",
        last.valid_loss.unwrap_or(f64::NAN),
        last.auc.unwrap_or(f64::NAN)
    );
    Ok(())
}
