//! Helpers of the `wide` tests: power-law data, random parameters, a user-defined model,
//! the f64 twin's exact SGD it is checked against, trainers on the test device and the CLI's
//! common argument lists.

use rand::{Rng, SeedableRng};
use wgsparse::gen::{zipf_ctr, CtrModel};
use wgsparse::sparse::Csr;
use wgsparse::wide::{cpu, metrics, plan, Model, ModelSpec, Options, Trainer};

/// Zipf CTR samples with values drawn from [0.5, 1.5) (not one-hot), feature 0 put into
/// every sample (maximum contention) and every 7th sample emptied; labels 0/1.
pub fn data(n: usize, m: usize, nnz: usize, seed: u64) -> (Csr, Vec<f32>) {
    let d = zipf_ctr(n, m, nnz, CtrModel::Lr, seed).unwrap();
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x5eed);
    let x = &d.features;
    let (mut row_ptr, mut col_idx, mut values) = (vec![0u32], vec![], vec![]);
    for i in 0..n {
        if i % 7 != 3 {
            let mut row: Vec<u32> = x.col_idx[x.row_range(i)].to_vec();
            if !row.contains(&0) {
                row.push(0);
            }
            row.sort_unstable();
            for j in row {
                col_idx.push(j);
                values.push(rng.random_range(0.5f32..1.5));
            }
        }
        row_ptr.push(col_idx.len() as u32);
    }
    (Csr::new(n, m, row_ptr, col_idx, values).unwrap(), d.labels)
}

/// A trainer on the test device ([`super::gpu`]) of `spec` over `m` features, trained on
/// `train` and validated on `valid` when given; panics (at the caller) when it is refused.
#[track_caller]
pub fn trainer(
    spec: &ModelSpec,
    m: usize,
    train: (&Csr, &[f32]),
    valid: Option<(&Csr, &[f32])>,
    options: Options,
) -> Trainer<'static> {
    Trainer::new(super::gpu(), spec, m, train, valid, options).unwrap()
}

/// `wgsparse gen ctr` of `samples` samples × 12 of `features` features (seed `seed`) into the
/// raw folder `d`; asserts it succeeded.
pub fn gen_ctr(d: &str, samples: usize, features: usize, seed: u64) {
    let (samples, features, seed) = (samples.to_string(), features.to_string(), seed.to_string());
    let gen = [
        "gen",
        "ctr",
        "--samples",
        &samples,
        "--features",
        &features,
        "--nnz-per-sample",
        "12",
        "--seed",
        &seed,
        "--raw",
        "--out",
        d,
    ];
    assert!(super::wgsparse(&gen).0);
}

/// `wide train` on `d` with a 10% holdout and mini-batches of 128, then `extra`.
pub fn train_args<'a>(d: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    train_args_batch(d, "128", extra)
}

/// `wide train` on `d` with a 10% holdout and mini-batches of `batch`, then `extra`.
pub fn train_args_batch<'a>(d: &'a str, batch: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "wide",
        "train",
        "--train",
        d,
        "--holdout",
        "0.1",
        "--batch",
        batch,
    ];
    args.extend_from_slice(extra);
    args
}

/// `wide sweep` on `d` with mini-batches of 128, `epochs` epochs and `passes` passes, one
/// `--run` per entry of `runs`.
pub fn sweep_args<'a>(
    d: &'a str,
    epochs: &'a str,
    passes: &'a str,
    runs: &[&'a str],
) -> Vec<&'a str> {
    let mut args = vec![
        "wide", "sweep", "--train", d, "--batch", "128", "--epochs", epochs, "--passes", passes,
    ];
    for r in runs {
        args.extend(["--run", r]);
    }
    args
}

/// The first 90% of the rows of `x` and `labels` for training, the rest for validation:
/// (train, valid, train labels, valid labels).
pub fn holdout<'a>(x: &Csr, labels: &'a [f32]) -> (Csr, Csr, &'a [f32], &'a [f32]) {
    let (n, split) = (x.nrows, x.nrows * 9 / 10);
    let (ytr, yva) = labels.split_at(split);
    (x.row_band(0..split), x.row_band(split..n), ytr, yva)
}

/// Random parameters in [−0.5, 0.5) for `m` features of `spec` and the bias.
pub fn random_params(spec: &ModelSpec, m: usize, seed: u64) -> Vec<f64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..m * spec.params_per_feature + 1)
        .map(|_| rng.random_range(-0.5f64..0.5))
        .collect()
}

/// Random starting parameters scaled by `scale` (every term of the gradient exercised): f32
/// for the device and the same values in f64 for the twin.
pub fn random_start(spec: &ModelSpec, m: usize, seed: u64, scale: f64) -> (Vec<f32>, Vec<f64>) {
    let start: Vec<f32> = random_params(spec, m, seed)
        .iter()
        .map(|v| (v * scale) as f32)
        .collect();
    let twin = start.iter().map(|&v| v as f64).collect();
    (start, twin)
}

/// One epoch of `t` from the parameters `start`: the trained parameters.
pub fn epoch_from(t: &mut Trainer, start: &[f32]) -> Vec<f32> {
    t.set_params(start).unwrap();
    t.train_epoch().unwrap();
    t.params().unwrap()
}

/// A model from outside the crate: linear, squared hinge loss max(0, 1 − yŷ)².
pub fn user_model() -> ModelSpec {
    ModelSpec {
        name: "sqhinge".into(),
        wgsl: "#import wide/linear\n\
               fn loss_of(yhat: f32, y: f32) -> vec2<f32> {\n\
                   let m = max(0.0, 1.0 - y * yhat);\n\
                   return vec2<f32>(m * m, -2.0 * y * m);\n\
               }\n"
        .into(),
        accums: 1,
        params_per_feature: 1,
        init_std: 0.0,
    }
}

/// (ℓ, dℓ/dŷ) of the squared hinge, f64.
pub fn sqhinge(yhat: f64, y: f64) -> (f64, f64) {
    let m = (1.0 - y * yhat).max(0.0);
    (m * m, -2.0 * y * m)
}

/// The twin's exact SGD over `batches` consecutive mini-batches, with the loss of `model`
/// or (for the user model) the squared hinge.
pub fn twin(model: Model, user: bool, p: &mut [f64], x: &Csr, y: &[f32], batch: usize, lr: f64) {
    let rows: Vec<usize> = (0..x.nrows).collect();
    for b in rows.chunks(batch) {
        if !user {
            cpu::sgd_step(model, p, x, y, b, lr);
            continue;
        }
        let mut g = vec![0.0; p.len()];
        for &i in b {
            let yhat = cpu::predict(model, p, x, i);
            let (_, d) = sqhinge(yhat, y[i] as f64);
            let r = x.row_range(i);
            for (k, s) in cpu::score_grad(model, p, &x.col_idx[r.clone()], &x.values[r]) {
                g[k] += d * s;
            }
        }
        for (q, gk) in p.iter_mut().zip(&g) {
            *q -= lr / b.len() as f64 * gk;
        }
    }
}
/// Every parameter within 1e-5 relative (plus 1e-6 absolute) of the f64 twin's.
pub fn assert_matches_twin(got: &[f32], want: &[f64], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: parameter count");
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g as f64 - w).abs() <= 1e-5 * w.abs() + 1e-6,
            "{what} θ{i}: GPU {g} twin {w}"
        );
    }
}

/// The f64 twin of an async epoch with one persistent workgroup (chunks in data order, no
/// re-indexing, lr 0.5, the step scale for `in_flight` mini-batches): from `start`, each
/// `window` of chunks steps together from one point with the scaled step.
pub fn async_chunk_twin(
    model: Model,
    (x, y01): (&Csr, &[f32]),
    (batch, chunk): (usize, usize),
    in_flight: f64,
    window: usize,
    start: &[f32],
) -> Vec<f64> {
    let m = x.ncols;
    let np = model.params_per_feature();
    let y = metrics::labels_pm1(y01);
    let mut counts = vec![0u32; m];
    for &j in &x.col_idx {
        counts[j as usize] += 1;
    }
    let (fs, bias) = plan::async_scale(&counts, x.nrows, in_flight);
    let mut want: Vec<f64> = start.iter().map(|&v| v as f64).collect();
    let base = 0.5 * chunk as f64 / batch as f64;
    let mut step = vec![base; want.len()];
    for (j, &v) in fs.iter().enumerate() {
        step[j * np..(j + 1) * np].fill(base * v as f64);
    }
    step[m * np] = base * bias as f64;
    let mut sgd = cpu::Sgd::new(want.len());
    let chunks: Vec<Vec<usize>> = (0..x.nrows.div_ceil(chunk))
        .map(|c| (c * chunk..((c + 1) * chunk).min(x.nrows)).collect())
        .collect();
    for w in chunks.chunks(window) {
        sgd.stale_step(model, &mut want, x, &y, w, &step);
    }
    want
}
