//! Sparse X beyond one storage binding: X's rows cut into bands ([`crate::sparse::bands`])
//! whose entries fit one binding, each band's kernels recorded with its window of the entry
//! arrays bound at an aligned offset.
//!
//! Invariant of a band (rows `r0..r1`, window `w0..w1` of the entry arrays): its row offsets
//! are uploaded rebased, `row_ptr_b[i] = row_ptr[r0 + i] − w0` for `i ∈ 0..=r1 − r0`, so a
//! kernel sees the band as a CSR matrix of `r1 − r0` rows over the bound window; local row `i`
//! is X's row `r0 + i` (the kernels' `row_base` parameter), which indexes the row-indexed
//! vectors (v, y of `xty`, the unfused p, the logistic terms), bound whole like the
//! column-indexed ones (y, z, w) and the two-pass partials (m ≤ binding / 4 is checked at
//! upload). Bands start at any row, so only a single row with more entries than one binding
//! holds is refused. The bands cover every row: rows without entries between two bands join
//! the earlier band. One band (everything fits) is the whole of X with its own row offsets,
//! window `0..nnz`.

use std::ops::Range;

use crate::gpu::{Gpu, GpuBuffer};
use crate::sparse::bands::entry_bands;
use crate::sparse::Csr;
use crate::Result;

/// One row band of sparse X on the device.
pub(crate) struct SparseBand {
    /// Rows of X.
    pub rows: Range<usize>,
    /// The window of X's entry arrays bound for the band (entries; starts aligned).
    pub window: Range<usize>,
    /// The band's row offsets, rebased to `window.start` (`rows.len() + 1`).
    pub row_ptr: GpuBuffer<u32>,
}

/// X's bands for storage bindings of `binding` bytes at offsets aligned to `align` bytes:
/// (rows, window) each, covering every row in order. One band when X fits.
pub(crate) fn cut(x: &Csr, binding: u64, align: u64) -> Result<Vec<(Range<usize>, Range<usize>)>> {
    let mut bands = entry_bands(x, binding, align)?;
    if bands.is_empty() {
        return Ok(vec![(0..x.nrows, 0..0)]);
    }
    bands[0].rows.start = 0;
    let starts: Vec<usize> = bands.iter().skip(1).map(|b| b.rows.start).collect();
    for (b, &next) in bands.iter_mut().zip(starts.iter().chain([&x.nrows])) {
        b.rows.end = next;
    }
    Ok(bands
        .into_iter()
        .map(|b| {
            let w = b.window(align);
            (b.rows, w)
        })
        .collect())
}

/// Uploads each band's rebased row offsets (X's own when there is one band).
pub(crate) fn upload(
    gpu: &Gpu,
    x: &Csr,
    cuts: Vec<(Range<usize>, Range<usize>)>,
) -> Result<Vec<SparseBand>> {
    cuts.into_iter()
        .map(|(rows, window)| {
            let row_ptr = if window.start == 0 {
                GpuBuffer::upload(gpu, "fused.row_ptr", &x.row_ptr[rows.start..=rows.end])?
            } else {
                let base = window.start as u32;
                let rebased: Vec<u32> = x.row_ptr[rows.start..=rows.end]
                    .iter()
                    .map(|&p| p - base)
                    .collect();
                GpuBuffer::upload(gpu, "fused.band_row_ptr", &rebased)?
            };
            Ok(SparseBand {
                rows,
                window,
                row_ptr,
            })
        })
        .collect()
}

/// The band's window of an entry array (at least one element, so an empty X binds).
pub(crate) fn window<'a, T: bytemuck::Pod>(
    buf: &'a GpuBuffer<T>,
    band: &SparseBand,
) -> wgpu::BufferBinding<'a> {
    slice(
        buf.raw(),
        band.window.clone(),
        std::mem::size_of::<T>() as u64,
    )
}

/// Elements `range` of a buffer of `size`-byte elements; an empty range binds one element (or
/// the buffer's last bytes), which no kernel reads.
fn slice(buf: &wgpu::Buffer, range: Range<usize>, size: u64) -> wgpu::BufferBinding<'_> {
    let total = buf.size();
    let offset = (range.start as u64 * size).min(total.saturating_sub(size));
    let len = (range.len().max(1) as u64 * size).min(total - offset);
    wgpu::BufferBinding {
        buffer: buf,
        offset,
        size: std::num::NonZeroU64::new(len),
    }
}

/// Splits the long-row path's chunks `[row, begin, end, slot]` (in row order) by band,
/// rebasing entry positions to the band's window; rows (X's, indexing v and y of `xty`) and
/// slots stay global.
pub(crate) fn split_chunks(chunks: &[[u32; 4]], bands: &[SparseBand]) -> Vec<Vec<u32>> {
    bands
        .iter()
        .map(|b| {
            let w0 = b.window.start as u32;
            chunks
                .iter()
                .filter(|c| b.rows.contains(&(c[0] as usize)))
                .flat_map(|c| [c[0], c[1] - w0, c[2] - w0, c[3]])
                .collect()
        })
        .collect()
}

/// Splits the sorted tiles' row ranges (in row order, none crossing a band start) by band,
/// rebased to the band's rows.
pub(crate) fn split_tiles(tiles: &[[u32; 2]], bands: &[SparseBand]) -> Vec<Vec<u32>> {
    bands
        .iter()
        .map(|b| {
            let r0 = b.rows.start as u32;
            tiles
                .iter()
                .filter(|t| b.rows.contains(&(t[0] as usize)))
                .flat_map(|t| {
                    debug_assert!(t[1] as usize <= b.rows.end);
                    [t[0] - r0, t[1] - r0]
                })
                .collect()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csr(row_lens: &[u32]) -> Csr {
        let mut row_ptr = vec![0u32];
        let mut col_idx = Vec::new();
        for &n in row_lens {
            col_idx.extend(0..n);
            row_ptr.push(col_idx.len() as u32);
        }
        let values = vec![1.0; col_idx.len()];
        Csr::new(row_lens.len(), 64, row_ptr, col_idx, values).unwrap()
    }

    #[test]
    fn cuts_cover_every_row_with_aligned_starts_and_windows() {
        // Empty stretches between rows with entries.
        let lens: Vec<u32> = (0..400)
            .map(|i| if i % 97 < 40 { 0 } else { (i * 7 % 13) as u32 })
            .collect();
        let x = csr(&lens);
        let (binding, align) = (512u64, 64u64);
        let cuts = cut(&x, binding, align).unwrap();
        assert!(cuts.len() > 2, "{cuts:?}");
        let mut next = 0;
        for (rows, window) in &cuts {
            assert_eq!(rows.start, next);
            assert_eq!(window.start % 16, 0, "{window:?}");
            assert!(window.start <= x.row_ptr[rows.start] as usize);
            assert_eq!(window.end, x.row_ptr[rows.end] as usize);
            assert!(window.len() as u64 * 4 <= binding);
            next = rows.end;
        }
        assert_eq!(next, x.nrows);
        assert_eq!(cut(&csr(&[0, 0, 0]), 512, 64).unwrap(), vec![(0..3, 0..0)]);
        assert_eq!(cut(&x, 1 << 20, 64).unwrap(), vec![(0..400, 0..x.nnz())]);
    }
}
