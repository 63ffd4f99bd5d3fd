//! Preprocessing as cuMF_SGD: user and item ids permuted, training samples shuffled once,
//! ratings (and λ) divided by the ratings' standard deviation σ so that f16 storage is safe,
//! features uniform in [0, √(1/k)). Test ratings keep their units; test pairs whose user or
//! item has no training rating are skipped and counted.

use half::f16;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};

use crate::gen::RatingSet;
use crate::io::Ratings;
use crate::{Error, Result};

impl From<&RatingSet> for Ratings {
    fn from(r: &RatingSet) -> Self {
        Ratings {
            users: r.users.clone(),
            items: r.items.clone(),
            values: r.values.clone(),
            n_users: r.n_users,
            n_items: r.n_items,
        }
    }
}

/// Training and test data in device order.
pub(crate) struct Prepared {
    /// Training samples (u, v, bits of r/σ), permuted ids, shuffled.
    pub train: Vec<u32>,
    /// Test samples (u, v, bits of r), permuted ids, unscaled.
    pub test: Vec<u32>,
    /// Test ratings skipped: user or item never seen in training.
    pub skipped: usize,
    /// σ = max(1e-4, standard deviation of the training ratings).
    pub sigma: f64,
    /// Device row of each user.
    pub user_row: Vec<u32>,
    /// Device row of each item.
    pub item_row: Vec<u32>,
}

fn check(r: &Ratings, what: &str) -> Result<()> {
    if r.users.len() != r.len() || r.items.len() != r.len() {
        return Err(Error::invalid(
            what,
            "users, items and values differ in length",
        ));
    }
    for k in 0..r.len() {
        if r.users[k] as usize >= r.n_users || r.items[k] as usize >= r.n_items {
            return Err(Error::invalid(
                what,
                format!(
                    "rating {k}: (user {}, item {}) outside {} users × {} items",
                    r.users[k], r.items[k], r.n_users, r.n_items
                ),
            ));
        }
        if !r.values[k].is_finite() {
            return Err(Error::invalid(
                what,
                format!("rating {k}: value {} is not finite", r.values[k]),
            ));
        }
    }
    Ok(())
}

fn permutation(n: usize, rng: &mut impl Rng, permute: bool) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    if permute {
        p.shuffle(rng);
    }
    p
}

/// Validates and preprocesses `train` and `test` (ids as in `train`).
pub(crate) fn prepare(
    train: &Ratings,
    test: Option<&Ratings>,
    permute: bool,
    shuffle: bool,
    seed: u64,
) -> Result<Prepared> {
    check(train, "training ratings")?;
    if train.is_empty() {
        return Err(Error::invalid("training ratings", "no ratings"));
    }
    if let Some(t) = test {
        check(t, "test ratings")?;
    }
    let n = train.len() as f64;
    let mean = train.values.iter().map(|&v| v as f64).sum::<f64>() / n;
    let var = train
        .values
        .iter()
        .map(|&v| (v as f64 - mean).powi(2))
        .sum::<f64>()
        / n;
    let sigma = var.sqrt().max(1e-4);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ 0x6d66_5f70_7265_7021);
    let user_row = permutation(train.n_users, &mut rng, permute);
    let item_row = permutation(train.n_items, &mut rng, permute);
    let mut order: Vec<u32> = (0..train.len() as u32).collect();
    if shuffle {
        order.shuffle(&mut rng);
    }
    let mut samples = Vec::with_capacity(3 * train.len());
    for &k in &order {
        let k = k as usize;
        samples.push(user_row[train.users[k] as usize]);
        samples.push(item_row[train.items[k] as usize]);
        samples.push(((train.values[k] as f64 / sigma) as f32).to_bits());
    }
    let mut seen_u = vec![false; train.n_users];
    let mut seen_i = vec![false; train.n_items];
    for k in 0..train.len() {
        seen_u[train.users[k] as usize] = true;
        seen_i[train.items[k] as usize] = true;
    }
    let (mut tests, mut skipped) = (vec![], 0);
    if let Some(t) = test {
        for k in 0..t.len() {
            let (u, i) = (t.users[k] as usize, t.items[k] as usize);
            if !seen_u.get(u).copied().unwrap_or(false) || !seen_i.get(i).copied().unwrap_or(false)
            {
                skipped += 1;
                continue;
            }
            tests.extend([user_row[u], item_row[i], t.values[k].to_bits()]);
        }
    }
    Ok(Prepared {
        train: samples,
        test: tests,
        skipped,
        sigma,
        user_row,
        item_row,
    })
}

/// `rows × k` features uniform in [0, √(1/k)), stored as f32 bits or as f16 pairs.
pub(crate) fn init_features(rows: usize, k: usize, half: bool, rng: &mut impl Rng) -> Vec<u32> {
    let hi = (1.0 / k as f64).sqrt() as f32;
    if half {
        (0..rows * k / 2)
            .map(|_| {
                let lo = f16::from_f32(rng.random::<f32>() * hi).to_bits() as u32;
                let up = f16::from_f32(rng.random::<f32>() * hi).to_bits() as u32;
                lo | (up << 16)
            })
            .collect()
    } else {
        (0..rows * k)
            .map(|_| (rng.random::<f32>() * hi).to_bits())
            .collect()
    }
}

/// Feature values of stored words (f32 bits, or f16 pairs, low half first).
pub fn decode(words: &[u32], half: bool) -> Vec<f32> {
    if half {
        words
            .iter()
            .flat_map(|&w| {
                [
                    f16::from_bits(w as u16).to_f32(),
                    f16::from_bits((w >> 16) as u16).to_f32(),
                ]
            })
            .collect()
    } else {
        words.iter().map(|&w| f32::from_bits(w)).collect()
    }
}

/// Stored words of feature values (the inverse of [`decode`], rounding to nearest even).
pub fn encode(values: &[f32], half: bool) -> Vec<u32> {
    if half {
        values
            .chunks(2)
            .map(|c| {
                let lo = f16::from_f32(c[0]).to_bits() as u32;
                let up = f16::from_f32(c.get(1).copied().unwrap_or(0.0)).to_bits() as u32;
                lo | (up << 16)
            })
            .collect()
    } else {
        values.iter().map(|v| v.to_bits()).collect()
    }
}

/// Counting sort of the samples into a grid of `rows × cols` blocks (row block of device
/// row u: u·rows / m; likewise for columns); the shuffled order is kept inside each block.
/// Returns the sorted samples and the `rows·cols + 1` block offsets.
pub(crate) fn grid(
    samples: &[u32],
    (m, n): (usize, usize),
    (rows, cols): (usize, usize),
) -> (Vec<u32>, Vec<u32>) {
    let block = |s: usize| {
        let rb = samples[3 * s] as usize * rows / m;
        let cb = samples[3 * s + 1] as usize * cols / n;
        rb * cols + cb
    };
    let nnz = samples.len() / 3;
    let mut offsets = vec![0u32; rows * cols + 1];
    for s in 0..nnz {
        offsets[block(s) + 1] += 1;
    }
    for b in 0..rows * cols {
        offsets[b + 1] += offsets[b];
    }
    let mut next = offsets.clone();
    let mut sorted = vec![0u32; samples.len()];
    for s in 0..nnz {
        let b = block(s);
        let at = next[b] as usize;
        next[b] += 1;
        sorted[3 * at..3 * at + 3].copy_from_slice(&samples[3 * s..3 * s + 3]);
    }
    (sorted, offsets)
}
