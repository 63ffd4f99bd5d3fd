//! Shared machinery of the generators: seeding, Zipf weights and degrees, alias tables,
//! weighted sampling of distinct columns, and block-parallel filling whose output depends only
//! on the seed (each block of rows draws from its own seeded stream), never on the thread count.

use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, RngCore, SeedableRng};
use rand_distr::{Distribution, Poisson};

use super::draws::{block_weights, ExactDraws, RankSet};
use crate::sparse::{offsets, Csr};
use crate::{Error, Result};

/// Rows per parallel block (each block has its own random stream).
const BLOCK_ROWS: usize = 256;

/// A row of degree `d` over `n` columns is drawn by exponential keys over all columns when
/// `d * HEAVY_DIV >= n`, by rejection from the alias table otherwise.
const HEAVY_DIV: usize = 4;

/// SplitMix64 finalizer: a bijective mix of 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The random stream number `stream` of `seed`.
pub(crate) fn stream_rng(seed: u64, stream: u64) -> StdRng {
    StdRng::seed_from_u64(splitmix64(splitmix64(seed) ^ stream))
}

/// A sub-seed for a family of streams (e.g. one stream per block).
pub(crate) fn sub_seed(seed: u64, stream: u64) -> u64 {
    splitmix64(splitmix64(seed).wrapping_add(stream) ^ 0xA076_1D64_78BD_642F)
}

/// Fails with [`Error::Option`] when `n` does not fit a `u32` index.
pub(crate) fn check_u32(what: &str, n: usize) -> Result<()> {
    if n > u32::MAX as usize {
        return Err(Error::Option(format!(
            "{what} = {n} exceeds the u32 index range ({})",
            u32::MAX
        )));
    }
    Ok(())
}

/// Fails with [`Error::Option`] unless `alpha` is finite and ≥ 0.
pub(crate) fn check_alpha(alpha: f64) -> Result<()> {
    if !alpha.is_finite() || alpha < 0.0 {
        return Err(Error::Option(format!(
            "Zipf exponent alpha = {alpha} must be finite and ≥ 0"
        )));
    }
    Ok(())
}

/// Zipf weights `(k + 1)^-alpha` for ranks `k = 0..n`.
pub(crate) fn zipf_weights(n: usize, alpha: f64) -> Vec<f64> {
    (1..=n).map(|k| (k as f64).powf(-alpha)).collect()
}

/// A uniformly random permutation of `0..n`.
pub(crate) fn permutation(n: usize, rng: &mut StdRng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u32).collect();
    p.shuffle(rng);
    p
}

/// Walker/Vose alias table: O(1) draws from a discrete distribution with one `u64`.
pub(crate) struct Alias {
    /// Per bucket: its acceptance threshold out of 2^32 and its alias, side by side (a draw
    /// reads one 8-byte entry). A full bucket has threshold `u32::MAX` and itself as alias,
    /// so it returns itself whatever the draw.
    buckets: Vec<[u32; 2]>,
}

impl Alias {
    /// A table for weights `w` (non-negative, not all zero, at most `u32::MAX` of them).
    pub(crate) fn new(w: &[f64]) -> Alias {
        let n = w.len();
        let total: f64 = w.iter().sum();
        assert!(n > 0 && total > 0.0, "alias table needs a positive weight");
        let scale = n as f64 / total;
        let mut p: Vec<f64> = w.iter().map(|&x| x * scale).collect();
        let (mut small, mut large): (Vec<usize>, Vec<usize>) = (0..n).partition(|&i| p[i] < 1.0);
        let mut buckets: Vec<[u32; 2]> = (0..n as u32).map(|i| [u32::MAX, i]).collect();
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            // p[s] < 1: the threshold fits 32 bits.
            buckets[s] = [(p[s] * 4_294_967_296.0) as u32, l as u32];
            p[l] = (p[l] + p[s]) - 1.0;
            if p[l] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        Alias { buckets }
    }

    /// One draw.
    #[inline]
    pub(crate) fn sample<R: RngCore>(&self, rng: &mut R) -> usize {
        let x = rng.next_u64();
        let i = (((x >> 32) * self.buckets.len() as u64) >> 32) as usize;
        let [thresh, alias] = self.buckets[i];
        if (x & 0xFFFF_FFFF) < u64::from(thresh) {
            i
        } else {
            alias as usize
        }
    }
}

/// The column distribution of a generator: popularity weights by rank, and the permutation
/// from rank to column id. Draws sets of distinct columns ("successive sampling": each next
/// column with probability proportional to its weight among those not yet drawn).
pub(crate) struct Columns {
    weights: Vec<f64>,
    int_weights: Vec<u64>,
    /// `int_weights` summed per block ([`block_weights`]): the exact draws' coarse level.
    block_weights: Vec<u64>,
    alias: Alias,
    perm: Vec<u32>,
}

impl Columns {
    /// Columns with popularity `weights[rank]` (positive), rank `k` being column `perm[k]`.
    pub(crate) fn new(weights: Vec<f64>, perm: Vec<u32>) -> Columns {
        assert_eq!(weights.len(), perm.len());
        // No zero weight: exponential keys divide by it.
        let weights: Vec<f64> = weights
            .into_iter()
            .map(|w| w.max(f64::MIN_POSITIVE))
            .collect();
        let total: f64 = weights.iter().sum();
        let scale = (1u64 << 52) as f64 / total;
        let int_weights: Vec<u64> = weights
            .iter()
            .map(|&w| ((w * scale) as u64).max(1))
            .collect();
        let alias = Alias::new(&weights);
        let block_weights = block_weights(&int_weights);
        Columns {
            weights,
            int_weights,
            block_weights,
            alias,
            perm,
        }
    }

    /// Number of columns.
    pub(crate) fn n(&self) -> usize {
        self.perm.len()
    }

    /// Fills `out` with `out.len()` distinct column ids, sorted.
    fn sample_row(&self, out: &mut [u32], rng: &mut StdRng, sc: &mut Scratch) {
        let n = self.n();
        let d = out.len();
        if d == 0 {
            return;
        }
        if d == n {
            for (j, o) in out.iter_mut().enumerate() {
                *o = j as u32;
            }
            return;
        }
        if d * HEAVY_DIV >= n {
            let cur = sc.next_stamp(n);
            // Efraimidis–Spirakis: the d smallest keys Exp(1) / w are a successive sample.
            sc.keys.clear();
            for (r, &w) in self.weights.iter().enumerate() {
                let e = -(1.0 - rng.random::<f64>()).ln();
                sc.keys.push((e / w, r as u32));
            }
            sc.keys
                .select_nth_unstable_by(d - 1, |a, b| a.0.total_cmp(&b.0));
            for &(_, r) in &sc.keys[..d] {
                sc.stamp[self.perm[r as usize] as usize] = cur;
            }
            let mut k = 0;
            for (id, &s) in sc.stamp.iter().enumerate() {
                if s == cur {
                    out[k] = id as u32;
                    k += 1;
                }
            }
            debug_assert_eq!(k, d);
            return;
        }
        // Draw with replacement, skip repeats; fall back to exact draws ([`ExactDraws`]) over
        // the columns not yet chosen if repeats eat the budget (very skewed weights).
        sc.ranks.clear();
        let budget = 4 * d + 64;
        let mut draws = 0;
        // A rank repeats exactly when its column does (perm is a bijection); the row's ranks
        // are kept in a set sized to the row (cache-resident, unlike a stamp per column).
        sc.seen.reset(d);
        while sc.ranks.len() < d && draws < budget {
            draws += 1;
            let r = self.alias.sample(rng) as u32;
            if sc.seen.insert(r) {
                sc.ranks.push(r);
            }
        }
        if sc.ranks.len() < d {
            let w = &self.int_weights;
            let exact = sc
                .exact
                .get_or_insert_with(|| ExactDraws::new(&self.block_weights, self.n()));
            for &r in &sc.ranks {
                exact.remove(r as usize, w);
            }
            while sc.ranks.len() < d {
                let r = exact.find(rng.random_range(0..exact.total()), w);
                exact.remove(r, w);
                sc.ranks.push(r as u32);
            }
            for &r in &sc.ranks {
                exact.restore(r as usize, w);
            }
        }
        for (o, &r) in out.iter_mut().zip(&sc.ranks) {
            *o = self.perm[r as usize];
        }
        out.sort_unstable();
    }
}

/// Per-thread scratch of [`Columns::sample_row`].
struct Scratch {
    /// Per column, the row that last drew it (heavy rows).
    stamp: Vec<u32>,
    /// The ranks a row has drawn.
    seen: RankSet,
    cur: u32,
    ranks: Vec<u32>,
    keys: Vec<(f64, u32)>,
    exact: Option<ExactDraws>,
}

impl Scratch {
    fn new() -> Scratch {
        Scratch {
            stamp: Vec::new(),
            seen: RankSet::new(),
            cur: 0,
            ranks: Vec::new(),
            keys: Vec::new(),
            exact: None,
        }
    }

    /// A fresh stamp over `n` columns (the stamps allocated on first use: only heavy rows
    /// need them).
    fn next_stamp(&mut self, n: usize) -> u32 {
        if self.stamp.len() != n {
            self.stamp = vec![0; n];
            self.cur = 0;
        }
        self.cur = self.cur.wrapping_add(1);
        if self.cur == 0 {
            self.stamp.fill(0);
            self.cur = 1;
        }
        self.cur
    }
}

/// Degrees of `n` rows (by rank) summing to exactly `nnz`, each at most `cap`, Zipf-shaped:
/// expected degree `min(c · (k + 1)^-alpha, cap)` with `c` set so the expectations sum to
/// `nnz` (saturated rows are full), each degree Poisson around it, then single units added to
/// or removed from rows drawn by expected degree until the total is exact.
/// Requires `nnz ≤ n · cap`.
pub(crate) fn zipf_degrees(
    n: usize,
    cap: usize,
    nnz: usize,
    alpha: f64,
    rng: &mut StdRng,
) -> Vec<u32> {
    let mut deg = vec![0u32; n];
    if nnz == 0 {
        return deg;
    }
    debug_assert!(nnz as u128 <= n as u128 * cap as u128);
    let w = zipf_weights(n, alpha);
    let mut suffix = vec![0f64; n + 1];
    for k in (0..n).rev() {
        suffix[k] = suffix[k + 1] + w[k];
    }
    let capf = cap as f64;
    // Water-filling: ranks below `full` are saturated.
    let mut full = 0;
    let mut c = 0.0;
    while full < n {
        c = (nnz as f64 - full as f64 * capf) / suffix[full];
        if c * w[full] <= capf {
            break;
        }
        full += 1;
    }
    let lambda: Vec<f64> = (0..n)
        .map(|k| if k < full { capf } else { (c * w[k]).min(capf) })
        .collect();
    for (d, &l) in deg.iter_mut().zip(&lambda) {
        let x = if l >= capf {
            capf
        } else if l > 0.0 {
            match Poisson::new(l) {
                Ok(p) => p.sample(rng),
                Err(_) => l.round(),
            }
        } else {
            0.0
        };
        *d = x.min(capf) as u32;
    }
    let mut total: usize = deg.iter().map(|&d| d as usize).sum();
    let alias = Alias::new(&lambda);
    let mut misses = 0;
    while total != nnz {
        if misses < 64 {
            let k = alias.sample(rng);
            if total < nnz && (deg[k] as usize) < cap {
                deg[k] += 1;
                total += 1;
                misses = 0;
            } else if total > nnz && deg[k] > 0 {
                deg[k] -= 1;
                total -= 1;
                misses = 0;
            } else {
                misses += 1;
            }
        } else {
            // Rejection keeps missing (nearly everything saturated): one unit per row that
            // can take it, from a random start.
            let start = rng.random_range(0..n);
            for off in 0..n {
                let k = (start + off) % n;
                if total < nnz && (deg[k] as usize) < cap {
                    deg[k] += 1;
                    total += 1;
                } else if total > nnz && deg[k] > 0 {
                    deg[k] -= 1;
                    total -= 1;
                }
                if total == nnz {
                    break;
                }
            }
            misses = 0;
        }
    }
    deg
}

/// Runs `f` on every item, spread over the available cores; each thread gets its own scratch
/// from `init`. Items are taken in order from a shared queue.
pub(crate) fn par_each<T, S, I, F>(items: Vec<T>, init: I, f: F)
where
    T: Send,
    I: Fn() -> S + Sync,
    F: Fn(&mut S, T) + Sync,
{
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(items.len());
    if threads <= 1 {
        let mut s = init();
        for item in items {
            f(&mut s, item);
        }
        return;
    }
    let queue = Mutex::new(items.into_iter());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut s = init();
                loop {
                    let next = queue.lock().expect("queue lock").next();
                    match next {
                        Some(item) => f(&mut s, item),
                        None => break,
                    }
                }
            });
        }
    });
}

/// A block of consecutive rows and their slices of the output arrays.
pub(crate) struct RowBlock<'a> {
    /// Block number (its random stream).
    pub index: usize,
    /// The block's rows.
    pub rows: std::ops::Range<usize>,
    /// Offset of the block's first entry in the whole matrix.
    pub base: usize,
    /// The block's column indices.
    pub cols: &'a mut [u32],
    /// The block's values.
    pub vals: &'a mut [f32],
}

/// Splits the output arrays along `row_ptr` into blocks of [`BLOCK_ROWS`] rows and fills them
/// in parallel with `f`.
pub(crate) fn par_rows<S, I, F>(
    row_ptr: &[u32],
    col_idx: &mut [u32],
    values: &mut [f32],
    init: I,
    f: F,
) where
    I: Fn() -> S + Sync,
    F: Fn(&mut S, RowBlock<'_>) + Sync,
{
    let nrows = row_ptr.len() - 1;
    let mut blocks = Vec::with_capacity(nrows.div_ceil(BLOCK_ROWS));
    let (mut cols, mut vals) = (col_idx, values);
    let mut r0 = 0;
    while r0 < nrows {
        let r1 = (r0 + BLOCK_ROWS).min(nrows);
        let len = (row_ptr[r1] - row_ptr[r0]) as usize;
        let (c, c_rest) = cols.split_at_mut(len);
        let (v, v_rest) = vals.split_at_mut(len);
        cols = c_rest;
        vals = v_rest;
        blocks.push(RowBlock {
            index: r0 / BLOCK_ROWS,
            rows: r0..r1,
            base: row_ptr[r0] as usize,
            cols: c,
            vals: v,
        });
        r0 = r1;
    }
    par_each(blocks, init, f);
}

/// A CSR matrix with row `i` holding `degrees[i]` distinct columns drawn from `cols`, sorted,
/// and values drawn by `value`. Deterministic given `seed`. The total must fit `u32`.
pub(crate) fn sample_rows<F>(degrees: &[u32], cols: &Columns, seed: u64, value: F) -> Csr
where
    F: Fn(&mut StdRng) -> f32 + Sync,
{
    let nrows = degrees.len();
    let ncols = cols.n();
    let row_ptr = offsets(degrees);
    let nnz = row_ptr[nrows] as usize;
    let mut col_idx = vec![0u32; nnz];
    let mut values = vec![0f32; nnz];
    par_rows(
        &row_ptr,
        &mut col_idx,
        &mut values,
        Scratch::new,
        |sc, blk| {
            let mut rng = stream_rng(seed, blk.index as u64);
            for i in blk.rows.clone() {
                let r = row_ptr[i] as usize - blk.base..row_ptr[i + 1] as usize - blk.base;
                cols.sample_row(&mut blk.cols[r.clone()], &mut rng, sc);
                for v in &mut blk.vals[r] {
                    *v = value(&mut rng);
                }
            }
        },
    );
    Csr {
        nrows,
        ncols,
        row_ptr,
        col_idx,
        values,
    }
}

/// Fills `data` in parallel chunks of `chunk` values, chunk `k` drawing from stream `k` of
/// `seed`.
pub(crate) fn par_fill<F>(data: &mut [f32], chunk: usize, seed: u64, f: F)
where
    F: Fn(&mut StdRng) -> f32 + Sync,
{
    let chunks: Vec<(usize, &mut [f32])> = data.chunks_mut(chunk).enumerate().collect();
    par_each(
        chunks,
        || (),
        |_, (k, c)| {
            let mut rng = stream_rng(seed, k as u64);
            for v in c {
                *v = f(&mut rng);
            }
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_of_every_length_are_distinct_and_sorted() {
        // Steep weights: long rows exhaust the rejection budget and finish exactly.
        let n = 5_000;
        let weights: Vec<f64> = (0..n).map(|k| ((k + 1) as f64).powf(-1.6)).collect();
        let mut perm: Vec<u32> = (0..n as u32).collect();
        perm.reverse();
        let cols = Columns::new(weights, perm);
        let mut sc = Scratch::new();
        let mut rng = stream_rng(9, 0);
        for d in [1, 2, 64, 700, n / HEAVY_DIV - 1, n / HEAVY_DIV, n] {
            let mut out = vec![0u32; d];
            cols.sample_row(&mut out, &mut rng, &mut sc);
            assert!(out.windows(2).all(|p| p[0] < p[1]), "d = {d}");
            assert!(out.iter().all(|&c| (c as usize) < n), "d = {d}");
        }
    }
}
