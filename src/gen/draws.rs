//! Draws without replacement for [`super::engine::Columns`]: the exact draws over integer
//! weights that take over when repeats eat the rejection budget, and the set of ranks a row
//! has drawn.

/// A Fenwick tree of integer weights (here: the blocks' remaining weights).
struct Fenwick {
    tree: Vec<u64>,
    total: u64,
    top: usize,
}

impl Fenwick {
    fn new(w: &[u64]) -> Fenwick {
        let n = w.len();
        let mut tree = vec![0u64; n + 1];
        for i in 1..=n {
            tree[i] += w[i - 1];
            let j = i + (i & i.wrapping_neg());
            if j <= n {
                tree[j] += tree[i];
            }
        }
        let top = if n == 0 {
            0
        } else {
            1 << (usize::BITS - 1 - n.leading_zeros())
        };
        Fenwick {
            tree,
            total: w.iter().sum(),
            top,
        }
    }

    fn add(&mut self, i: usize, w: u64) {
        self.total += w;
        let mut j = i + 1;
        while j < self.tree.len() {
            self.tree[j] += w;
            j += j & j.wrapping_neg();
        }
    }

    fn sub(&mut self, i: usize, w: u64) {
        self.total -= w;
        let mut j = i + 1;
        while j < self.tree.len() {
            self.tree[j] -= w;
            j += j & j.wrapping_neg();
        }
    }

    /// The index whose cumulative weight range holds `target` (< total), and `target` less
    /// the weight of the indices before it.
    fn find(&self, mut target: u64) -> (usize, u64) {
        let mut pos = 0;
        let mut step = self.top;
        while step > 0 {
            let next = pos + step;
            if next < self.tree.len() && self.tree[next] <= target {
                pos = next;
                target -= self.tree[next];
            }
            step >>= 1;
        }
        (pos, target)
    }
}

/// Ranks per block of the exact draws without replacement ([`ExactDraws`]).
const DRAW_BLOCK: usize = 64;

/// Exact draws without replacement over the ranks' integer weights, per thread: a Fenwick
/// tree over the blocks' remaining weights (n / 64 entries, cache-resident where a tree over
/// every rank was not) and a bit per rank drawn; a draw finds its block in the tree, then its
/// rank by a scan of the block's weights, skipping those drawn. It returns what one Fenwick
/// tree over every rank's remaining weight returns for the same target: the first rank whose
/// cumulative remaining weight exceeds it (every rank weighs at least 1, so only drawn ranks
/// weigh 0).
pub(super) struct ExactDraws {
    blocks: Fenwick,
    drawn: Vec<u64>,
}

impl ExactDraws {
    /// Every one of `n` ranks in the draws, the blocks weighing `block_weights`
    /// ([`block_weights`] of the ranks' weights).
    pub(super) fn new(block_weights: &[u64], n: usize) -> ExactDraws {
        ExactDraws {
            blocks: Fenwick::new(block_weights),
            drawn: vec![0; n.div_ceil(64)],
        }
    }

    pub(super) fn total(&self) -> u64 {
        self.blocks.total
    }

    pub(super) fn is_drawn(&self, r: usize) -> bool {
        self.drawn[r / 64] >> (r % 64) & 1 != 0
    }

    /// Takes rank `r` (not drawn) out of the draws.
    pub(super) fn remove(&mut self, r: usize, w: &[u64]) {
        self.blocks.sub(r / DRAW_BLOCK, w[r]);
        self.drawn[r / 64] |= 1 << (r % 64);
    }

    /// Puts rank `r` (drawn) back.
    pub(super) fn restore(&mut self, r: usize, w: &[u64]) {
        self.blocks.add(r / DRAW_BLOCK, w[r]);
        self.drawn[r / 64] &= !(1 << (r % 64));
    }

    /// The rank whose cumulative remaining weight range holds `target` (< total).
    pub(super) fn find(&self, target: u64, w: &[u64]) -> usize {
        let (b, mut rest) = self.blocks.find(target);
        let end = ((b + 1) * DRAW_BLOCK).min(w.len());
        for (r, &wr) in w.iter().enumerate().take(end).skip(b * DRAW_BLOCK) {
            if self.is_drawn(r) {
                continue;
            }
            if rest < wr {
                return r;
            }
            rest -= wr;
        }
        unreachable!("the block holds the target's weight")
    }
}

/// `w` summed per block of [`DRAW_BLOCK`] ranks: [`ExactDraws`]' coarse level.
pub(super) fn block_weights(w: &[u64]) -> Vec<u64> {
    w.chunks(DRAW_BLOCK).map(|c| c.iter().sum()).collect()
}

/// A set of u32 keys (never `u32::MAX`) by open addressing, sized per use.
pub(super) struct RankSet {
    slots: Vec<u32>,
}

impl RankSet {
    /// An empty set (sized by [`RankSet::reset`]).
    pub(super) fn new() -> RankSet {
        RankSet { slots: Vec::new() }
    }

    const EMPTY: u32 = u32::MAX;

    /// Empties the set and sizes it for `n` keys (at most half full).
    pub(super) fn reset(&mut self, n: usize) {
        let cap = (2 * n).next_power_of_two().max(16);
        self.slots.clear();
        self.slots.resize(cap, Self::EMPTY);
    }

    /// Adds `k`; whether it was new.
    pub(super) fn insert(&mut self, k: u32) -> bool {
        let mask = self.slots.len() - 1;
        let mut i = (k.wrapping_mul(0x9E37_79B9) as usize) & mask;
        loop {
            match self.slots[i] {
                s if s == k => return false,
                Self::EMPTY => {
                    self.slots[i] = k;
                    return true;
                }
                _ => i = (i + 1) & mask,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn exact_draws_find_what_a_scan_of_the_remaining_weights_finds() {
        // 1,000 ranks (not a whole number of blocks) of skewed weights; ranks drawn and put
        // back in turn; every target against the first rank whose cumulative remaining
        // weight exceeds it.
        let w: Vec<u64> = (0..1_000u64)
            .map(|k| 1 + 1_000_000 / (k + 1).pow(2))
            .collect();
        let w = &w;
        let mut exact = ExactDraws::new(&block_weights(w), w.len());
        let mut rng = StdRng::seed_from_u64(5);
        let mut drawn = vec![];
        for step in 0..300 {
            if step % 7 == 6 {
                if let Some(r) = drawn.pop() {
                    exact.restore(r, w);
                }
            } else {
                let r = exact.find(rng.random_range(0..exact.total()), w);
                assert!(!exact.is_drawn(r));
                exact.remove(r, w);
                drawn.push(r);
            }
            let remaining: Vec<u64> = (0..w.len())
                .map(|r| if drawn.contains(&r) { 0 } else { w[r] })
                .collect();
            assert_eq!(exact.total(), remaining.iter().sum::<u64>());
            for _ in 0..20 {
                let t = rng.random_range(0..exact.total());
                let mut acc = 0;
                let want = remaining
                    .iter()
                    .position(|&x| {
                        acc += x;
                        acc > t
                    })
                    .unwrap();
                assert_eq!(exact.find(t, w), want, "target {t}");
            }
        }
    }

    #[test]
    fn rank_set_keeps_each_key_once() {
        let mut s = RankSet::new();
        // 300 inserts of at most 97 distinct keys (the set is sized for 100).
        s.reset(100);
        let keys: Vec<u32> = (0..300).map(|i| (i * 7919) % 97).collect();
        let mut want = std::collections::HashSet::new();
        for k in keys {
            assert_eq!(s.insert(k), want.insert(k), "key {k}");
        }
        s.reset(3);
        assert!(s.insert(5) && !s.insert(5));
    }
}
