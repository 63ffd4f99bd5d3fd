//! The chunks' edges in both orders and their feature-sorted segments, built on the host's
//! threads ([`Chunks::build_split`](super::plan::Chunks::build_split)'s work). Each thread
//! takes a run of consecutive chunks (runs balanced by edges), writes its edges' ranges of
//! the sample-sorted and feature-sorted arrays in place, and lists its segments; the lists
//! are joined in chunk order, so the result does not depend on the number of threads.

use crate::sparse::bucket::{balanced_cuts, threads};
use crate::sparse::Csr;
use crate::wide::plan::FeatureOrder;
use crate::{limits, Result};

/// Both edge arrays and the segments of every chunk.
pub(super) struct Segmented {
    /// Sample-sorted edges: (new feature id, value bits).
    pub sedge: Vec<[u32; 2]>,
    /// Feature-sorted edges of each chunk: (sample slot in the chunk, value bits).
    pub fedge: Vec<[u32; 2]>,
    /// Per chunk its first segment, then the segment count (chunks + 1).
    pub seg_ptr: Vec<u32>,
    /// Per segment its feature (new id).
    pub seg_feat: Vec<u32>,
    /// Per segment its first feature-sorted edge, then the edge count (segments + 1).
    pub seg_edge: Vec<u32>,
}

/// The segments of one run of chunks.
struct RunSegments {
    /// Per chunk of the run, its first segment counted from the run's first.
    chunk_first: Vec<u32>,
    feat: Vec<u32>,
    /// First edges, as positions in the whole feature-sorted array.
    edge: Vec<u32>,
}

/// Chunks of `chunk` samples of `x` (validated, fewer than 2³² entries), features re-indexed
/// by `order`, each feature's run in a chunk cut into segments of at most `max_segment` edges
/// (0: whole), over [`threads`] threads.
pub(super) fn segment(
    x: &Csr,
    order: &FeatureOrder,
    chunk: usize,
    max_segment: usize,
) -> Result<Segmented> {
    segment_in(x, order, chunk, max_segment, threads())
}

/// [`segment`] over `parts` runs of chunks, one thread each.
fn segment_in(
    x: &Csr,
    order: &FeatureOrder,
    chunk: usize,
    max_segment: usize,
    parts: usize,
) -> Result<Segmented> {
    let (n, nnz) = (x.nrows, x.nnz());
    let n_chunks = n.div_ceil(chunk);
    // The first edge of chunk c (c = n_chunks: the end).
    let edge_of = |c: usize| x.row_ptr[(c * chunk).min(n)] as usize;
    let parts = parts.min(n_chunks).max(1);
    let cuts = balanced_cuts(n_chunks, parts, edge_of);
    // Zeroed by the allocator (no pass over them here): each thread's writes touch its pages.
    let mut sedge: Vec<[u32; 2]> = limits::try_zeroed("wide sample-sorted edges", nnz)?;
    let mut fedge: Vec<[u32; 2]> = limits::try_zeroed("wide feature-sorted edges", nnz)?;
    let runs: Vec<RunSegments> = std::thread::scope(|scope| {
        let (mut s_rest, mut f_rest) = (sedge.as_mut_slice(), fedge.as_mut_slice());
        let mut handles = Vec::with_capacity(parts);
        for run in cuts.windows(2) {
            let (c0, c1) = (run[0], run[1]);
            let len = edge_of(c1) - edge_of(c0);
            let (s_run, s_tail) = std::mem::take(&mut s_rest).split_at_mut(len);
            let (f_run, f_tail) = std::mem::take(&mut f_rest).split_at_mut(len);
            (s_rest, f_rest) = (s_tail, f_tail);
            let cut = Cut {
                chunks: c0..c1,
                chunk,
                max_segment,
            };
            handles.push(scope.spawn(move || segment_run(x, order, &cut, s_run, f_run)));
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("a chunking thread panicked"))
            .collect()
    });
    let n_segments: usize = runs.iter().map(|r| r.feat.len()).sum();
    let mut seg_ptr = limits::try_with_capacity("wide chunk segments", n_chunks + 1)?;
    let mut seg_feat = limits::try_with_capacity("wide segment features", n_segments)?;
    let mut seg_edge = limits::try_with_capacity("wide segment edges", n_segments + 1)?;
    for r in &runs {
        let base = seg_feat.len() as u32;
        seg_ptr.extend(r.chunk_first.iter().map(|&s| base + s));
        seg_feat.extend_from_slice(&r.feat);
        seg_edge.extend_from_slice(&r.edge);
    }
    seg_ptr.push(n_segments as u32);
    seg_edge.push(nnz as u32);
    Ok(Segmented {
        sedge,
        fedge,
        seg_ptr,
        seg_feat,
        seg_edge,
    })
}

/// A run of chunks and how they are cut.
struct Cut {
    chunks: std::ops::Range<usize>,
    chunk: usize,
    max_segment: usize,
}

/// One run's edges (`sedge` and `fedge`: the run's ranges of the whole arrays) and segments.
fn segment_run(
    x: &Csr,
    order: &FeatureOrder,
    cut: &Cut,
    sedge: &mut [[u32; 2]],
    fedge: &mut [[u32; 2]],
) -> RunSegments {
    let n = x.nrows;
    // A run may be empty (more threads than chunks of weight): it starts at the end.
    let s_first = (cut.chunks.start * cut.chunk).min(n);
    let s_end = (cut.chunks.end * cut.chunk).min(n);
    let e0 = x.row_ptr[s_first] as usize;
    for (e, out) in (e0..).zip(sedge.iter_mut()) {
        *out = [
            order.new_of_old[x.col_idx[e] as usize],
            x.values[e].to_bits(),
        ];
    }
    let mut out = RunSegments {
        chunk_first: Vec::with_capacity(cut.chunks.len()),
        feat: Vec::new(),
        edge: Vec::new(),
    };
    let mut tmp: Vec<(u32, u32, u32)> = Vec::new();
    let mut written = 0;
    for c in cut.chunks.clone() {
        out.chunk_first.push(out.feat.len() as u32);
        let s0 = c * cut.chunk;
        tmp.clear();
        for s in s0..(s0 + cut.chunk).min(s_end) {
            for e in x.row_range(s) {
                let [j, v] = sedge[e - e0];
                tmp.push((j, (s - s0) as u32, v));
            }
        }
        tmp.sort_unstable();
        let mut run = 0;
        for (k, &(j, slot, v)) in tmp.iter().enumerate() {
            if k == 0 || tmp[k - 1].0 != j || run == cut.max_segment {
                out.feat.push(j);
                out.edge.push((e0 + written) as u32);
                run = 0;
            }
            run += 1;
            fedge[written] = [slot, v];
            written += 1;
        }
    }
    debug_assert_eq!(written, fedge.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 1,000 samples of 0..=12 distinct features below 300 (skewed to low ids), values
    /// varied.
    fn samples() -> Csr {
        let (mut row_ptr, mut col_idx, mut values) = (vec![0u32], vec![], vec![]);
        for r in 0..1_000u32 {
            let mut cols: Vec<u32> = (0..(r * 7) % 13)
                .map(|i| ((r * 31 + i * 97) % 300) * ((i % 3) + 1) / 3)
                .collect();
            cols.sort_unstable();
            cols.dedup();
            values.extend(cols.iter().map(|&c| 0.5 + (c % 5) as f32));
            col_idx.extend(cols);
            row_ptr.push(col_idx.len() as u32);
        }
        Csr {
            nrows: 1_000,
            ncols: 300,
            row_ptr,
            col_idx,
            values,
        }
    }

    #[test]
    fn the_same_segments_on_any_number_of_threads() {
        let x = samples();
        x.validate().unwrap();
        let order = FeatureOrder::by_frequency(&x).unwrap();
        for (chunk, max_segment) in [(64, 0), (7, 3), (1_000, 5), (2_048, 0)] {
            let one = segment_in(&x, &order, chunk, max_segment, 1).unwrap();
            for parts in [2, 3, 16, 10_000] {
                let many = segment_in(&x, &order, chunk, max_segment, parts).unwrap();
                assert_eq!(many.sedge, one.sedge, "chunk {chunk}, {parts} parts");
                assert_eq!(many.fedge, one.fedge, "chunk {chunk}, {parts} parts");
                assert_eq!(many.seg_ptr, one.seg_ptr, "chunk {chunk}, {parts} parts");
                assert_eq!(many.seg_feat, one.seg_feat, "chunk {chunk}, {parts} parts");
                assert_eq!(many.seg_edge, one.seg_edge, "chunk {chunk}, {parts} parts");
            }
            assert_eq!(one.seg_ptr.len(), x.nrows.div_ceil(chunk) + 1);
            assert_eq!(*one.seg_edge.last().unwrap() as usize, x.nnz());
        }
    }
}
