//! Parallel stable counting sort of CSR entries into buckets (columns, column panels, …):
//! the workhorse of transposes and tilings of matrices with 10⁸ nonzeros.

use crate::sparse::Csr;

/// Where each entry of `s` lands when its entries are grouped by `bucket(column)` (in
/// `0..n_buckets`), keeping (row, position) order inside a bucket.
pub struct Buckets {
    /// Bucket `b` holds destinations `start[b]..start[b + 1]`.
    pub start: Vec<usize>,
    /// Per destination: the source entry (index into `s.col_idx`).
    pub entry: Vec<u32>,
    /// Per destination: the source entry's row.
    pub row: Vec<u32>,
}

/// A raw pointer that threads may share because each writes a disjoint set of indices.
#[derive(Clone, Copy)]
struct Disjoint(*mut u32);
// SAFETY: used only for writes to indices that exactly one thread owns (see `bucket_entries`).
unsafe impl Send for Disjoint {}
unsafe impl Sync for Disjoint {}

/// Threads to use for host preprocessing.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .clamp(1, 32)
}

/// `f(i)` for every `i` in `0..n`, in order, computed on up to [`threads`] threads (each a
/// contiguous range of `i`): host preprocessing of independent items (layers, …).
pub(crate) fn par_map<R: Send>(n: usize, f: impl Fn(usize) -> R + Sync) -> Vec<R> {
    let parts = threads().min(n).max(1);
    if parts == 1 {
        return (0..n).map(f).collect();
    }
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..parts)
            .map(|k| {
                let (lo, hi) = (n * k / parts, n * (k + 1) / parts);
                scope.spawn(move || (lo..hi).map(f).collect::<Vec<R>>())
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a preprocessing thread panicked"))
            .collect()
    })
}

/// Cuts items `0..n` into `parts` contiguous groups of roughly equal weight, where
/// `before(i)` is the total weight of items `0..i` (non-decreasing in `i`). Returns `parts + 1`
/// non-decreasing cut points from 0 to `n` (groups may be empty).
pub(crate) fn balanced_cuts(n: usize, parts: usize, before: impl Fn(usize) -> usize) -> Vec<usize> {
    let total = before(n);
    let mut cuts = vec![0];
    for k in 1..parts {
        let target = total * k / parts;
        // The first item whose prefix weight reaches the target.
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if before(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        cuts.push(lo.max(*cuts.last().expect("starts with 0")));
    }
    cuts.push(n);
    cuts
}

/// Row ranges of roughly equal nonzero counts, one per thread.
fn row_chunks(s: &Csr, parts: usize) -> Vec<(usize, usize)> {
    balanced_cuts(s.nrows, parts, |r| s.row_ptr[r] as usize)
        .windows(2)
        .map(|w| (w[0], w[1]))
        .collect()
}

/// Groups the entries of `s` by `bucket(column)`; stable, parallel over row ranges.
pub fn bucket_entries(s: &Csr, n_buckets: usize, bucket: impl Fn(u32) -> usize + Sync) -> Buckets {
    let nnz = s.nnz();
    let parts = if nnz < 1 << 16 { 1 } else { threads() };
    let chunks = row_chunks(s, parts);
    // Per chunk: entries per bucket.
    let counts: Vec<Vec<usize>> = std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|&(lo, hi)| {
                let bucket = &bucket;
                scope.spawn(move || {
                    let mut c = vec![0usize; n_buckets];
                    let span = s.row_ptr[lo] as usize..s.row_ptr[hi] as usize;
                    for &col in &s.col_idx[span] {
                        c[bucket(col)] += 1;
                    }
                    c
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("count thread"))
            .collect()
    });
    // Bucket starts, and per chunk the first destination in every bucket.
    let mut start = vec![0usize; n_buckets + 1];
    let mut next: Vec<Vec<usize>> = vec![vec![0; n_buckets]; chunks.len()];
    let mut pos = 0usize;
    for b in 0..n_buckets {
        start[b] = pos;
        for (t, c) in counts.iter().enumerate() {
            next[t][b] = pos;
            pos += c[b];
        }
    }
    start[n_buckets] = pos;
    let mut entry = vec![0u32; nnz];
    let mut row = vec![0u32; nnz];
    let (pe, pr) = (Disjoint(entry.as_mut_ptr()), Disjoint(row.as_mut_ptr()));
    std::thread::scope(|scope| {
        for (&(lo, hi), mut next) in chunks.iter().zip(next) {
            let bucket = &bucket;
            scope.spawn(move || {
                let (pe, pr) = (pe, pr);
                for i in lo..hi {
                    for e in s.row_range(i) {
                        let b = bucket(s.col_idx[e]);
                        let d = next[b];
                        next[b] += 1;
                        // SAFETY: d < nnz, and the ranges next[t][b].. of different chunks
                        // and buckets are disjoint by the prefix sums above, so no two
                        // threads write the same index; the vectors outlive the scope.
                        unsafe {
                            *pe.0.add(d) = e as u32;
                            *pr.0.add(d) = i as u32;
                        }
                    }
                }
            });
        }
    });
    Buckets { start, entry, row }
}

/// Runs `f(offset, chunk)` over `out` cut into contiguous chunks, one per thread, where
/// `offset` is the index of the chunk's first element.
pub(crate) fn par_fill<T: Send>(out: &mut [T], f: impl Fn(usize, &mut [T]) + Sync) {
    let parts = if out.len() < 1 << 16 { 1 } else { threads() };
    let len = out.len().div_ceil(parts).max(1);
    std::thread::scope(|scope| {
        for (c, chunk) in out.chunks_mut(len).enumerate() {
            let f = &f;
            scope.spawn(move || f(c * len, chunk));
        }
    });
}

#[cfg(test)]
mod tests {
    #[test]
    fn par_map_keeps_order() {
        let got = super::par_map(1000, |i| i * i);
        assert_eq!(got, (0..1000).map(|i| i * i).collect::<Vec<_>>());
        assert!(super::par_map(0, |i| i).is_empty());
    }
}
