//! Host preprocessing, built once per data set: features re-indexed by descending frequency,
//! samples cut into chunks, each chunk stored twice — sample-sorted (Aggregate) and
//! feature-sorted with one segment per distinct feature (Apply).

use crate::sparse::Csr;
use crate::{Error, Result};

/// Feature ids re-indexed by descending frequency (ties by id), so hot features come first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureOrder {
    /// New id of each original feature.
    pub new_of_old: Vec<u32>,
    /// Original id of each new feature.
    pub old_of_new: Vec<u32>,
}

impl FeatureOrder {
    /// The order of `x`'s columns by descending number of samples holding them
    /// ([`crate::sparse::order::by_count`]); fails when the host cannot hold the sort.
    pub fn by_frequency(x: &Csr) -> Result<Self> {
        Self::by_frequency_of(x, x.ncols)
    }

    /// [`FeatureOrder::by_frequency`] over `n ≥ x.ncols` features (the others unseen).
    pub fn by_frequency_of(x: &Csr, n: usize) -> Result<Self> {
        Self::by_counts(&crate::sparse::order::column_counts(x, n))
    }

    /// The order of features by descending `counts` (samples holding each), ties the lower
    /// feature first.
    pub fn by_counts(counts: &[u32]) -> Result<Self> {
        Self::from_old_of_new(crate::sparse::order::by_count(counts)?)
    }

    /// `old_counts` (per original feature) in this order: per new feature id.
    pub fn permute_counts(&self, old_counts: &[u32]) -> Result<Vec<u32>> {
        let mut out = crate::limits::try_with_capacity("wide feature counts", self.len())?;
        out.extend(self.old_of_new.iter().map(|&o| old_counts[o as usize]));
        Ok(out)
    }

    /// The identity order on `n` features; fails when the host cannot hold it.
    pub fn identity(n: usize) -> Result<Self> {
        Self::from_old_of_new((0..n as u32).collect())
    }

    fn from_old_of_new(old_of_new: Vec<u32>) -> Result<Self> {
        Ok(FeatureOrder {
            new_of_old: crate::sparse::order::inverse(&old_of_new)?,
            old_of_new,
        })
    }

    /// Number of features.
    pub fn len(&self) -> usize {
        self.old_of_new.len()
    }

    /// Whether there are no features.
    pub fn is_empty(&self) -> bool {
        self.old_of_new.is_empty()
    }
}

/// Where each part of [`Chunks::meta`] starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MetaOffsets {
    /// Sample-sorted row pointers (samples + 1).
    pub row: u32,
    /// First segment of each chunk (chunks + 1).
    pub seg_ptr: u32,
    /// Feature (new id) of each segment.
    pub seg_feat: u32,
    /// First feature-sorted edge of each segment (segments + 1).
    pub seg_edge: u32,
    /// Labels ±1 as f32 bits (samples).
    pub label: u32,
}

/// A data set in chunks, as the engine binds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Chunks {
    /// Samples.
    pub n_samples: usize,
    /// Samples per chunk (the last chunk may hold fewer).
    pub chunk: usize,
    /// Number of chunks.
    pub n_chunks: usize,
    /// Distinct (chunk, feature) pairs: the segments.
    pub n_segments: usize,
    /// Index arrays and labels, laid out as [`MetaOffsets`] says.
    pub meta: Vec<u32>,
    /// Where each part of `meta` starts.
    pub offsets: MetaOffsets,
    /// Sample-sorted edges: (new feature id, value bits).
    pub sedge: Vec<[u32; 2]>,
    /// Feature-sorted edges of each chunk: (sample slot in the chunk, value bits).
    pub fedge: Vec<[u32; 2]>,
}

impl Chunks {
    /// Chunks of `chunk` consecutive samples of `x` (columns re-indexed by `order`) with
    /// labels `labels` (±1). Fails before allocating when `x` is invalid, has more columns
    /// than `order`, a value or label is not finite, or a size exceeds the u32 index range.
    pub fn build(x: &Csr, labels: &[f32], order: &FeatureOrder, chunk: usize) -> Result<Self> {
        Self::build_split(x, labels, order, chunk, 0)
    }

    /// [`Chunks::build`] with each feature's segment of a chunk cut into pieces of at most
    /// `max_segment` edges (0: whole), each piece a segment of its own (the same feature
    /// listed more than once in a chunk).
    pub fn build_split(
        x: &Csr,
        labels: &[f32],
        order: &FeatureOrder,
        chunk: usize,
        max_segment: usize,
    ) -> Result<Self> {
        x.validate()?;
        if labels.len() != x.nrows {
            return Err(Error::Shape(format!(
                "{} labels for {} samples",
                labels.len(),
                x.nrows
            )));
        }
        if x.ncols > order.len() {
            return Err(Error::Shape(format!(
                "data has {} feature columns, the model {}",
                x.ncols,
                order.len()
            )));
        }
        if chunk == 0 {
            return Err(Error::Option("chunk size must be ≥ 1".into()));
        }
        if let Some(i) = labels.iter().position(|l| !l.is_finite()) {
            return Err(Error::invalid(
                "labels",
                format!("sample {i}: {}", labels[i]),
            ));
        }
        if let Some(e) = x.values.iter().position(|v| !v.is_finite()) {
            return Err(Error::invalid(
                "features",
                format!("entry {e}: value {}", x.values[e]),
            ));
        }
        let n = x.nrows;
        let nnz = x.nnz();
        let n_chunks = n.div_ceil(chunk);
        // meta ≤ (N+1) + (chunks+1) + 2·nnz + 1 + N words (a segment holds ≥ 1 edge however
        // cut); both edge arrays 8 bytes per nnz.
        let meta_max = 2 * n as u128 + n_chunks as u128 + 2 * nnz as u128 + 3;
        if meta_max >= u32::MAX as u128 || nnz >= u32::MAX as usize {
            return Err(Error::TooLarge {
                what: format!("wide data of {n} samples and {nnz} nonzeros"),
                needed: format!("{meta_max} index words"),
                limit: "2³² − 1 (u32 indices)".into(),
            });
        }
        crate::limits::check_host("wide chunks", (4 * meta_max + 16 * nnz as u128) as u64)?;
        let super::segments::Segmented {
            sedge,
            fedge,
            seg_ptr,
            seg_feat,
            seg_edge,
        } = super::segments::segment(x, order, chunk, max_segment)?;
        let n_segments = seg_feat.len();
        let meta_len = x.row_ptr.len() + seg_ptr.len() + 2 * n_segments + 1 + n;
        let mut meta: Vec<u32> = crate::limits::try_with_capacity("wide chunk index", meta_len)?;
        let mut offsets = MetaOffsets::default();
        meta.extend_from_slice(&x.row_ptr);
        // Each list dropped once copied: the peak holds one of them beside `meta`.
        for (at, list) in [
            (&mut offsets.seg_ptr, seg_ptr),
            (&mut offsets.seg_feat, seg_feat),
            (&mut offsets.seg_edge, seg_edge),
        ] {
            *at = meta.len() as u32;
            meta.extend_from_slice(&list);
        }
        offsets.label = meta.len() as u32;
        meta.extend(labels.iter().map(|l| l.to_bits()));
        Ok(Chunks {
            n_samples: n,
            chunk,
            n_chunks,
            n_segments,
            meta,
            offsets,
            sedge,
            fedge,
        })
    }
}

/// The chunk size for mini-batches of `batch` samples: the largest divisor of `batch` that
/// is at most `max_chunk`, so every mini-batch is a whole number of chunks.
pub fn chunk_for_batch(batch: usize, max_chunk: usize) -> usize {
    (1..=max_chunk.min(batch).max(1))
        .rev()
        .find(|c| batch.is_multiple_of(*c))
        .unwrap_or(1)
}

/// Assumed ratio r/c of the cost of a random parameter read to a coalesced one in the
/// cost rule of [`hot_features`]. The paper leaves c and r unstated. Parameters of the
/// criteo-s shape (4 MB) live in L2, where a random read moves a 32-byte sector for 4 bytes,
/// but a cached segment also costs its load's latency and a barrier per chunk; 2 makes the
/// threshold th = 2c/r = 1: a feature is cached when it is expected at least once per chunk.
pub const RANDOM_TO_COALESCED: f64 = 2.0;

/// The importance cache's size by the paper's cost rule: the longest prefix of features (in
/// the re-indexed order, `counts` being their sample counts) whose average degree per chunk
/// is at least th = 2c/r (one coalesced load and one write-back against a random access per
/// edge; see [`RANDOM_TO_COALESCED`]), at most `max_features`.
pub fn hot_features(counts: &[u32], n_chunks: usize, max_features: usize) -> usize {
    let th = 2.0 / RANDOM_TO_COALESCED;
    let chunks = n_chunks.max(1) as f64;
    counts
        .iter()
        .take(max_features)
        .take_while(|&&c| c as f64 / chunks >= th)
        .count()
}

/// Cuts `x`'s rows into parts of whole chunks whose arrays each fit `max_bytes` (one storage
/// binding): 8 bytes per nonzero for either edge array, and the index words of
/// [`Chunks::meta`]. Fails with [`Error::TooLarge`] when one chunk alone does not fit.
pub fn split_rows(x: &Csr, chunk: usize, max_bytes: u64) -> Result<Vec<std::ops::Range<usize>>> {
    let fits = |rows: usize, nnz: usize| {
        let chunks = rows.div_ceil(chunk) as u64;
        let meta = 4 * (2 * rows as u64 + chunks + 2 * nnz as u64 + 3);
        8 * nnz as u64 <= max_bytes && meta <= max_bytes
    };
    let n = x.nrows;
    let mut parts = vec![];
    let mut start = 0;
    while start < n {
        let mut end = start;
        while end < n {
            let next = (end + chunk).min(n);
            let nnz = (x.row_ptr[next] - x.row_ptr[start]) as usize;
            if !fits(next - start, nnz) {
                break;
            }
            end = next;
        }
        if end == start {
            let next = (start + chunk).min(n);
            return Err(Error::TooLarge {
                what: format!("wide chunk of samples {start}..{next}"),
                needed: format!(
                    "{} bytes of edges in one binding",
                    8 * (x.row_ptr[next] - x.row_ptr[start]) as u64
                ),
                limit: format!("{max_bytes} bytes"),
            });
        }
        parts.push(start..end);
        start = end;
    }
    if parts.is_empty() {
        parts.push(0..0);
    }
    Ok(parts)
}

/// Async mode's step scale per feature when `in_flight` (S, ≥ 1, may be fractional)
/// mini-batches compute their gradients from the same parameters: 1 / max(1, p_j · S), p_j =
/// count_j / N being the share of the `n_samples` = N samples holding feature j, so p_j · S
/// is how many mini-batches' worth of samples hold it in the window. A hot feature's summed
/// update then moves it by about one mini-batch step (the stale sum of S steps is what
/// diverges), while a feature seen in fewer than B samples of the window (nearly all of
/// them) moves exactly as its summed gradients say. Scaling by the mini-batches that hold the
/// feature (S·(1 − (1 − p_j)^B)) instead is stable too but slows every feature seen more
/// than once per window, and letting hot features take two mini-batch steps per window
/// (1 / max(1, p_j·S/2)) already diverges (`tests/wide_async.rs` has the sweep). `counts` are the
/// features' sample counts; the result covers the features up to the last one scaled below
/// 1 (the rest: 1), with the bias's scale (every sample holds it: 1/S) second.
pub fn async_scale(counts: &[u32], n_samples: usize, in_flight: f64) -> (Vec<f32>, f32) {
    let (n, s) = (n_samples.max(1) as f64, in_flight.max(1.0));
    let mut scale: Vec<f32> = counts
        .iter()
        .map(|&c| (1.0 / (c as f64 / n * s).max(1.0)) as f32)
        .collect();
    let len = scale.iter().rposition(|&v| v < 1.0).map_or(0, |i| i + 1);
    scale.truncate(len);
    (scale, (1.0 / s) as f32)
}

/// Async mode's cold tail: the first feature from which each is expected in at most one of
/// the S · B samples in flight (`in_flight` mini-batches of `batch`: count_j · S · B ≤ N), so
/// about one workgroup at most updates it at a time: the bound of
/// [`crate::wide::FlowVariant::plain_writes`]. [`async_scale`]'s bound, p_j · S ≤ 1, is
/// B times looser: a feature just past it is in about B samples in flight, spread over
/// nearly every chunk. Without re-indexing, cold features before the result stay atomic.
pub fn cold_from(counts: &[u32], n_samples: usize, in_flight: f64, batch: usize) -> usize {
    let window = in_flight.max(1.0) * batch.max(1) as f64;
    let n = n_samples.max(1) as f64;
    counts
        .iter()
        .rposition(|&c| c as f64 * window > n)
        .map_or(0, |i| i + 1)
}
