//! Planted low-rank rating data (a recommender's user × item matrix).

use rand::Rng;
use rand_distr::{Distribution, Normal};

use crate::gen::engine::{
    check_u32, permutation, sample_rows, stream_rng, sub_seed, zipf_degrees, zipf_weights, Columns,
};
use crate::sparse::{Coo, Dense};
use crate::{Error, Result};

/// Zipf exponent of user activity and item popularity.
const ALPHA: f64 = 1.0;
/// Standard deviation of the rating noise of [`planted_ratings`].
pub const RATING_NOISE: f64 = 0.1;
/// Standard deviation of the jitter of the first factor around √3.
const BIAS_JITTER: f32 = 0.15;
/// Standard deviation of the interaction part of a rating (factors 1..rank).
const INTERACTION_STD: f64 = 0.7;

/// A set of ratings as parallel arrays, sorted by (user, item).
#[derive(Clone, Debug, PartialEq)]
pub struct RatingSet {
    /// User (row) of each rating.
    pub users: Vec<u32>,
    /// Item (column) of each rating.
    pub items: Vec<u32>,
    /// Each rating, in `[1, 5]`.
    pub values: Vec<f32>,
    /// Number of users.
    pub n_users: usize,
    /// Number of items.
    pub n_items: usize,
}

impl RatingSet {
    /// Number of ratings.
    pub fn len(&self) -> usize {
        self.values.len()
    }

    /// Whether there are no ratings.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// The ratings as an `n_users × n_items` COO matrix.
    pub fn to_coo(&self) -> Coo {
        Coo {
            nrows: self.n_users,
            ncols: self.n_items,
            rows: self.users.clone(),
            cols: self.items.clone(),
            values: self.values.clone(),
        }
    }
}

/// Ratings from a planted low-rank model, split into train and test.
#[derive(Clone, Debug, PartialEq)]
pub struct PlantedRatings {
    /// Training ratings.
    pub train: RatingSet,
    /// Held-out ratings, disjoint from `train`.
    pub test: RatingSet,
    /// Planted user factors, `n_users × rank`.
    pub user_factors: Dense,
    /// Planted item factors, `n_items × rank`.
    pub item_factors: Dense,
}

impl PlantedRatings {
    /// The planted model's test RMSE, √(mean over test ratings of (r − user·item)²): the
    /// noise floor a trained model can reach (noise and the clamp to [1, 5] included);
    /// `None` without test ratings.
    pub fn noise_floor(&self) -> Option<f64> {
        let t = &self.test;
        if t.is_empty() {
            return None;
        }
        let sse: f64 = (0..t.len())
            .map(|k| {
                let (u, i) = (t.users[k] as usize, t.items[k] as usize);
                let dot: f64 = self
                    .user_factors
                    .row(u)
                    .iter()
                    .zip(self.item_factors.row(i))
                    .map(|(a, b)| *a as f64 * *b as f64)
                    .sum();
                (t.values[k] as f64 - dot).powi(2)
            })
            .sum();
        Some((sse / t.len() as f64).sqrt())
    }
}

/// `n_ratings` distinct (user, item) ratings from a planted rank-`rank` model, each held out
/// for the test set with probability `test_fraction`. Deterministic given `seed`.
///
/// - Which pairs are rated: user activity and item popularity are Zipf (exponent 1.0), each
///   user's items distinct (as in [`power_law`](crate::gen::power_law)), users and items
///   relabelled randomly.
/// - Rating of (u, i) = `dot(user_factors[u], item_factors[i]) + noise`, noise N(0, 0.1²),
///   clamped to `[1, 5]`. The first factor column is √3 plus N(0, 0.15²) jitter on both sides
///   (a mean of ≈ 3 plus user/item biases); the other `rank − 1` columns are Gaussian, scaled
///   so their dot product has standard deviation 0.7. So ratings spread over about [1, 5] and
///   a rank-`rank` factorization can fit them to the noise level (with `rank = 1` ratings are
///   ≈ 3 plus biases).
///
/// Fails with [`Error::Option`] if `rank` is 0, `test_fraction` is outside `[0, 1]`,
/// `n_ratings > n_users · n_items`, or a count exceeds the `u32` index range.
pub fn planted_ratings(
    n_users: usize,
    n_items: usize,
    n_ratings: usize,
    rank: usize,
    test_fraction: f64,
    seed: u64,
) -> Result<PlantedRatings> {
    planted_ratings_with_noise(
        n_users,
        n_items,
        n_ratings,
        rank,
        test_fraction,
        RATING_NOISE,
        seed,
    )
}

/// [`planted_ratings`] with rating noise N(0, `noise`²) instead of N(0, 0.1²): real rating
/// sets are far noisier than 0.1 (the best Netflix models leave an RMSE of about 0.85), and
/// how close SGD gets to the floor in a fixed number of epochs depends on it. The same `seed`
/// gives the same pattern and factors at every noise level. Fails as [`planted_ratings`] does,
/// and for a negative or non-finite `noise`.
pub fn planted_ratings_with_noise(
    n_users: usize,
    n_items: usize,
    n_ratings: usize,
    rank: usize,
    test_fraction: f64,
    noise: f64,
    seed: u64,
) -> Result<PlantedRatings> {
    // Drawn in f32: a noise beyond f32's range (1e300) is as infinite as `inf`.
    if !((noise as f32).is_finite() && noise >= 0.0) {
        return Err(Error::Option(format!(
            "rating noise {noise:e} must be finite in f32 (at most {:e}) and ≥ 0",
            f32::MAX
        )));
    }
    if rank == 0 {
        return Err(Error::Option("planted rating rank must be ≥ 1".into()));
    }
    if !(0.0..=1.0).contains(&test_fraction) {
        return Err(Error::Option(format!(
            "test fraction {test_fraction} is outside [0, 1]"
        )));
    }
    check_u32("n_users", n_users)?;
    check_u32("n_items", n_items)?;
    check_u32("n_ratings", n_ratings)?;
    if n_ratings as u128 > n_users as u128 * n_items as u128 {
        return Err(Error::Option(format!(
            "{n_ratings} distinct ratings do not fit {n_users} users × {n_items} items"
        )));
    }
    // Factors per user and item; user, item and value per rating, twice (train and test
    // split, sampling state).
    let bytes = 4 * (n_users as u128 + n_items as u128) * rank as u128 + 24 * n_ratings as u128;
    crate::limits::check_host(
        &format!("{n_ratings} planted ratings of {n_users} users × {n_items} items, rank {rank}"),
        u64::try_from(bytes).unwrap_or(u64::MAX),
    )?;
    let mut rng = stream_rng(seed, 0x7261_7469_6e67_7321);
    let normal = |std: f64| Normal::new(0.0f32, std as f32).expect("finite std");
    let jitter = normal(BIAS_JITTER as f64);
    let rest = if rank > 1 {
        normal((INTERACTION_STD * INTERACTION_STD / (rank - 1) as f64).powf(0.25))
    } else {
        normal(0.0)
    };
    let mut factors = |n: usize| {
        let mut data = vec![0f32; n * rank];
        for row in data.chunks_mut(rank) {
            row[0] = 3f32.sqrt() + jitter.sample(&mut rng);
            for x in &mut row[1..] {
                *x = rest.sample(&mut rng);
            }
        }
        Dense {
            nrows: n,
            ncols: rank,
            data,
        }
    };
    let user_factors = factors(n_users);
    let item_factors = factors(n_items);

    let pattern = if n_ratings == 0 {
        crate::sparse::Csr::empty(n_users, n_items)
    } else {
        let user_perm = permutation(n_users, &mut rng);
        let item_perm = permutation(n_items, &mut rng);
        let by_rank = zipf_degrees(n_users, n_items, n_ratings, ALPHA, &mut rng);
        let mut degrees = vec![0u32; n_users];
        for (&u, &d) in user_perm.iter().zip(&by_rank) {
            degrees[u as usize] = d;
        }
        let items = Columns::new(zipf_weights(n_items, ALPHA), item_perm);
        sample_rows(&degrees, &items, sub_seed(seed, 3), |_| 0.0)
    };

    let noise = normal(noise);
    let empty = || RatingSet {
        users: vec![],
        items: vec![],
        values: vec![],
        n_users,
        n_items,
    };
    let (mut train, mut test) = (empty(), empty());
    for u in 0..n_users {
        let uf = user_factors.row(u);
        for e in pattern.row_range(u) {
            let i = pattern.col_idx[e];
            let dot: f32 = uf
                .iter()
                .zip(item_factors.row(i as usize))
                .map(|(a, b)| a * b)
                .sum();
            let r = (dot + noise.sample(&mut rng)).clamp(1.0, 5.0);
            let set = if rng.random_bool(test_fraction) {
                &mut test
            } else {
                &mut train
            };
            set.users.push(u as u32);
            set.items.push(i);
            set.values.push(r);
        }
    }
    Ok(PlantedRatings {
        train,
        test,
        user_factors,
        item_factors,
    })
}
