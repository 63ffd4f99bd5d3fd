//! The final round every tuner ends with: its fastest few candidates from a screening pass
//! timed again in turn, one run each, round after round, after one shared warm-up. Timings
//! taken minutes apart on a loaded machine (other processes on a CPU device, clocks on a
//! GPU) differ by more than near-equal candidates do; interleaving exposes the finalists to
//! the same conditions, so the pick is not beaten by a candidate it timed.

use crate::gpu::{median_warm, Gpu, GpuTime};
use crate::Result;

/// Candidates kept from a screening pass for the final, interleaved timing.
pub const FINALISTS: usize = 3;
/// Timed runs of each finalist in the final round.
pub const FINAL_ROUNDS: usize = 5;

/// The fastest [`FINALISTS`] of a screening pass, fastest first.
pub struct Finalists<T> {
    kept: Vec<(f64, T)>,
}

impl<T> Default for Finalists<T> {
    fn default() -> Self {
        Finalists { kept: Vec::new() }
    }
}

impl<T> Finalists<T> {
    /// Offers a candidate screened at `ms`; returns it back when it is not among the
    /// fastest (the caller may reuse it, e.g. as the layout the next candidate shares).
    pub fn offer(&mut self, ms: f64, item: T) -> Option<T> {
        let at = self.kept.partition_point(|(f, _)| *f <= ms);
        if at >= FINALISTS {
            return Some(item);
        }
        self.kept.insert(at, (ms, item));
        if self.kept.len() > FINALISTS {
            self.kept.pop().map(|(_, t)| t)
        } else {
            None
        }
    }

    /// The fastest so far.
    pub fn first(&self) -> Option<&T> {
        self.kept.first().map(|(_, t)| t)
    }

    /// The finalists kept, fastest first.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.kept.iter().map(|(_, t)| t)
    }

    /// How many finalists are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// No candidate was offered.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// The winner of the interleaved final round (`run` times finalist i once), with its
    /// median seconds there; a lone finalist wins without a final round (its screening
    /// time, in seconds). `None` when no candidate was offered.
    pub fn decide(
        mut self,
        gpu: &Gpu,
        mut run: impl FnMut(&T) -> Result<GpuTime>,
    ) -> Result<Option<(T, f64)>> {
        let n = self.kept.len();
        if n <= 1 {
            return Ok(self.kept.pop().map(|(ms, t)| (t, ms / 1e3)));
        }
        let mut runs: Vec<Vec<f64>> = vec![Vec::new(); n];
        let mut turn = 0;
        median_warm(gpu, FINAL_ROUNDS * n, || {
            let t = run(&self.kept[turn % n].1)?;
            runs[turn % n].push(t.seconds);
            turn += 1;
            Ok(t)
        })?;
        // The last FINAL_ROUNDS · n runs are the timed ones (median_warm's warm-up comes
        // first), FINAL_ROUNDS per finalist.
        let medians: Vec<f64> = runs
            .iter_mut()
            .map(|r| {
                let from = r.len() - FINAL_ROUNDS;
                let timed = &mut r[from..];
                timed.sort_by(f64::total_cmp);
                timed[FINAL_ROUNDS / 2]
            })
            .collect();
        let best = (0..n)
            .min_by(|&x, &y| medians[x].total_cmp(&medians[y]))
            .expect("two finalists or more");
        Ok(Some((self.kept.swap_remove(best).1, medians[best])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_fastest_few_in_order_and_hands_back_the_rest() {
        let mut f = Finalists::default();
        assert_eq!(f.offer(5.0, "e"), None);
        assert_eq!(f.offer(1.0, "a"), None);
        assert_eq!(f.offer(3.0, "c"), None);
        // A fourth, slower: handed back; a fourth, faster: the slowest kept is handed back.
        assert_eq!(f.offer(9.0, "z"), Some("z"));
        assert_eq!(f.offer(2.0, "b"), Some("e"));
        assert_eq!(f.len(), FINALISTS);
        assert_eq!(f.first(), Some(&"a"));
        let order: Vec<_> = f.kept.iter().map(|(_, t)| *t).collect();
        assert_eq!(order, ["a", "b", "c"]);
    }
}
