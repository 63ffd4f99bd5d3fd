//! The final round every tuner ends with: its fastest few candidates from a screening pass
//! timed again, each the way every report times a plan ([`median_warm`]: warm-up, then the
//! median of [`FINAL_ROUNDS`] runs), in turn, pass after pass, each finalist's fastest pass
//! counting. Timings taken minutes apart on a loaded machine (other processes on a CPU
//! device, clocks on a GPU) differ by more than near-equal candidates do; alternating passes
//! expose the finalists to the same conditions, and load only slows a pass down. (Single runs
//! interleaved between finalists rank kernels of a few microseconds differently from
//! back-to-back runs: on the H200 that pick was 12–14% slower than a candidate timed
//! back to back.)

use crate::gpu::{median_warm, Gpu, GpuTime};
use crate::Result;

/// Candidates kept from a screening pass for the final, interleaved timing.
pub const FINALISTS: usize = 4;
/// Timed runs of each finalist in one pass of the final round.
pub const FINAL_ROUNDS: usize = 5;
/// Passes of the final round.
pub const FINAL_PASSES: usize = 3;

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

    /// The winner of the final round (`run` times finalist i once), with its fastest
    /// pass's median in seconds; a lone finalist wins without a final round (its screening
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
        let mut fastest = vec![f64::INFINITY; n];
        for _ in 0..FINAL_PASSES {
            for (f, (_, item)) in fastest.iter_mut().zip(&self.kept) {
                *f = f.min(median_warm(gpu, FINAL_ROUNDS, || run(item))?.seconds);
            }
        }
        let best = (0..n)
            .min_by(|&x, &y| fastest[x].total_cmp(&fastest[y]))
            .expect("two finalists or more");
        Ok(Some((self.kept.swap_remove(best).1, fastest[best])))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_fastest_few_in_order_and_hands_back_the_rest() {
        let mut f = Finalists::default();
        for (ms, t) in [(5.0, "e"), (1.0, "a"), (3.0, "c"), (4.0, "d")] {
            assert_eq!(f.offer(ms, t), None);
        }
        // One more, slower: handed back; one more, faster: the slowest kept is handed back.
        assert_eq!(f.offer(9.0, "z"), Some("z"));
        assert_eq!(f.offer(2.0, "b"), Some("e"));
        assert_eq!(f.len(), FINALISTS);
        assert_eq!(f.first(), Some(&"a"));
        let order: Vec<_> = f.iter().copied().collect();
        assert_eq!(order, ["a", "b", "c", "d"]);
    }
}
