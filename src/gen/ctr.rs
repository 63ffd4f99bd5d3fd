//! Click-through-rate data: sparse one-hot features, labels from a planted LR or FM model.

use rand::Rng;
use rand_distr::{Distribution, Normal};

use crate::gen::engine::{
    check_u32, permutation, sample_rows, stream_rng, sub_seed, zipf_weights, Columns,
};
use crate::sparse::{Csr, Dense};
use crate::{Error, Result};

/// Zipf exponent of feature popularity.
const ALPHA: f64 = 1.1;
/// Standard deviation of the linear part of the score.
const LINEAR_STD: f64 = 1.5;
/// Standard deviation of the pairwise (FM) part of the score.
const PAIRWISE_STD: f64 = 1.0;
/// Planted bias.
const BIAS: f32 = -0.5;

/// The planted model that turns features into click probabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtrModel {
    /// Logistic regression: `p = σ(b + Σ_j w_j x_j)`.
    Lr,
    /// Factorization machine of rank `k`: logistic regression plus
    /// `Σ_{i<j} ⟨v_i, v_j⟩ x_i x_j`.
    Fm {
        /// Rank of the pairwise factors.
        k: usize,
    },
}

/// A CTR data set with its planted model.
#[derive(Clone, Debug, PartialEq)]
pub struct CtrData {
    /// `n_samples × n_features` features, `nnz_per_sample` ones per row.
    pub features: Csr,
    /// Click labels, 0 or 1.
    pub labels: Vec<f32>,
    /// Planted linear weights, one per feature.
    pub true_weights: Vec<f32>,
    /// Planted bias.
    pub true_bias: f32,
    /// Planted FM factors (`n_features × k`), `None` for [`CtrModel::Lr`].
    pub true_factors: Option<Dense>,
}

/// `n_samples` CTR samples of `nnz_per_sample` distinct active features each (value 1.0,
/// one-hot style) drawn by Zipf popularity (exponent 1.1, features relabelled randomly), with
/// labels `Bernoulli(σ(score))` from a planted model. Deterministic given `seed`.
///
/// The planted linear weights are N(0, (1.5² / nnz_per_sample)), so the linear score has
/// standard deviation ≈ 1.5; the bias is −0.5. For [`CtrModel::Fm`] the factors are Gaussian,
/// scaled so the pairwise term has standard deviation ≈ 1. Labels are therefore learnable
/// but noisy, with a click rate between about 30% and 50%.
///
/// Fails with [`Error::Option`] if `nnz_per_sample > n_features`, `k` is 0, or a count exceeds
/// the `u32` index range.
pub fn zipf_ctr(
    n_samples: usize,
    n_features: usize,
    nnz_per_sample: usize,
    model: CtrModel,
    seed: u64,
) -> Result<CtrData> {
    if nnz_per_sample > n_features {
        return Err(Error::Option(format!(
            "{nnz_per_sample} distinct features per sample do not fit {n_features} features"
        )));
    }
    if model == (CtrModel::Fm { k: 0 }) {
        return Err(Error::Option("FM rank k must be ≥ 1".into()));
    }
    check_u32("n_samples", n_samples)?;
    check_u32("n_features", n_features)?;
    check_u32(
        "n_samples · nnz_per_sample",
        n_samples.saturating_mul(nnz_per_sample),
    )?;
    // Weights (and factors) per feature; index and value per entry, label and offset per
    // sample.
    let k = match model {
        CtrModel::Lr => 0,
        CtrModel::Fm { k } => k as u128,
    };
    let bytes = 4 * n_features as u128 * (1 + k)
        + 8 * n_samples as u128 * nnz_per_sample as u128
        + 8 * n_samples as u128;
    crate::limits::check_host(
        &format!("a CTR data set of {n_samples} samples × {n_features} features"),
        u64::try_from(bytes).unwrap_or(u64::MAX),
    )?;
    let mut rng = stream_rng(seed, 0x6374_725f_7a69_7066);
    let m = nnz_per_sample.max(1) as f64;
    let w_dist = Normal::new(0.0f32, (LINEAR_STD / m.sqrt()) as f32).expect("finite std");
    let true_weights: Vec<f32> = (0..n_features).map(|_| w_dist.sample(&mut rng)).collect();
    let true_factors = match model {
        CtrModel::Lr => None,
        CtrModel::Fm { k } => {
            let pairs = (m * (m - 1.0) / 2.0).max(1.0);
            // Var ⟨v_i, v_j⟩ = k τ⁴ per pair.
            let tau = (PAIRWISE_STD * PAIRWISE_STD / (pairs * k as f64)).powf(0.25);
            let v_dist = Normal::new(0.0f32, tau as f32).expect("finite std");
            let data = (0..n_features * k)
                .map(|_| v_dist.sample(&mut rng))
                .collect();
            Some(Dense {
                nrows: n_features,
                ncols: k,
                data,
            })
        }
    };

    let features = if n_samples == 0 || nnz_per_sample == 0 {
        Csr::empty(n_samples, n_features)
    } else {
        let perm = permutation(n_features, &mut rng);
        let cols = Columns::new(zipf_weights(n_features, ALPHA), perm);
        let degrees = vec![nnz_per_sample as u32; n_samples];
        sample_rows(&degrees, &cols, sub_seed(seed, 4), |_| 1.0)
    };

    let mut labels = Vec::with_capacity(n_samples);
    let mut sum = vec![0f32; true_factors.as_ref().map_or(0, |f| f.ncols)];
    for s in 0..n_samples {
        let r = features.row_range(s);
        let mut score = BIAS;
        for e in r.clone() {
            score += true_weights[features.col_idx[e] as usize] * features.values[e];
        }
        if let Some(v) = &true_factors {
            // Σ_{i<j} ⟨v_i, v_j⟩ x_i x_j = ½ (‖Σ v_i x_i‖² − Σ ‖v_i x_i‖²).
            sum.fill(0.0);
            let mut squares = 0f32;
            for e in r {
                let x = features.values[e];
                for (acc, &vf) in sum.iter_mut().zip(v.row(features.col_idx[e] as usize)) {
                    *acc += vf * x;
                    squares += vf * vf * x * x;
                }
            }
            score += 0.5 * (sum.iter().map(|a| a * a).sum::<f32>() - squares);
        }
        let p = 1.0 / (1.0 + (-score as f64).exp());
        labels.push(if rng.random_bool(p) { 1.0 } else { 0.0 });
    }
    Ok(CtrData {
        features,
        labels,
        true_weights,
        true_bias: BIAS,
        true_factors,
    })
}
