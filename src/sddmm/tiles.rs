//! Host-side tilings of S for the tiled kernels. Both produce nonzeros in block order with a
//! `perm` back to CSR order, and `blocks[b] = (x, y, first nonzero, end)`.

use crate::sparse::bucket::{balanced_cuts, bucket_entries, par_fill, threads};
use crate::sparse::Csr;

/// SM-L2 tiling: column panels of width `tj`; per panel the active rows (rows with at least
/// one nonzero in it), grouped into blocks of at most `ti` active rows and at most
/// `max_nnz` nonzeros. A row with more nonzeros than that is split over several blocks
/// (each stages its A row again), so one heavy power-law row cannot stall a whole panel.
pub struct PanelTiling {
    /// Per block: (first entry in `active_rows`, number of active rows, first nonzero, end,
    /// panel column base, 0, 0, 0). Blocks are in panel order.
    pub blocks: Vec<[u32; 8]>,
    /// Active rows of every block, block after block.
    pub active_rows: Vec<u32>,
    /// Per nonzero: local row (within its block) << 16 | column − panel base when
    /// compressed, else the local row alone.
    pub idx: Vec<u32>,
    /// Per nonzero: global column (empty when compressed).
    pub cols: Vec<u32>,
    /// Per nonzero: S value.
    pub vals: Vec<f32>,
    /// Per nonzero: its index in the CSR order of the original S.
    pub perm: Vec<u32>,
    /// Number of column panels.
    pub n_panels: usize,
}

/// Builds the SM-L2 tiling of `s`. `to_original[e]` maps `s`'s CSR index to the caller's
/// CSR index (identity when `None`; used when `s` is a transpose). Compression needs
/// `tj <= 65536` and `ti <= 65536`.
pub fn panels(
    s: &Csr,
    to_original: Option<&[u32]>,
    tj: usize,
    ti: usize,
    max_nnz: usize,
    compress: bool,
) -> PanelTiling {
    assert!(tj > 0 && ti > 0 && max_nnz > 0);
    assert!(!compress || (tj <= 1 << 16 && ti <= 1 << 16));
    let n_panels = s.ncols.div_ceil(tj).max(1);
    let nnz = s.nnz();
    // Panel order, rows in order within a panel (a stable parallel counting sort).
    let order = bucket_entries(s, n_panels, |c| c as usize / tj);
    let panel_start = order.start;
    let rows = order.row;
    let gather = |out: &mut Vec<u32>, f: &(dyn Fn(usize) -> u32 + Sync)| {
        out.resize(nnz, 0);
        par_fill(out, |offset, chunk| {
            for (k, v) in chunk.iter_mut().enumerate() {
                *v = f(order.entry[offset + k] as usize);
            }
        });
    };
    let (mut cols, mut perm) = (Vec::new(), Vec::new());
    gather(&mut cols, &|e| s.col_idx[e]);
    gather(&mut perm, &|e| to_original.map_or(e as u32, |m| m[e]));
    let mut vals = vec![0f32; nnz];
    par_fill(&mut vals, |offset, chunk| {
        for (k, v) in chunk.iter_mut().enumerate() {
            *v = s.values[order.entry[offset + k] as usize];
        }
    });
    // Panels own disjoint spans of idx: build their blocks in parallel, panels dealt to
    // threads in contiguous groups of roughly equal nonzero counts.
    let mut idx = vec![0u32; nnz];
    let parts = if nnz < 1 << 16 {
        1
    } else {
        threads().min(n_panels)
    };
    let bounds = balanced_cuts(n_panels, parts, |p| panel_start[p]);
    let pieces: Vec<(Vec<[u32; 8]>, Vec<u32>)> = std::thread::scope(|scope| {
        let mut rest = &mut idx[..];
        let mut handles = Vec::new();
        for w in bounds.windows(2) {
            let span = panel_start[w[0]]..panel_start[w[1]];
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(span.len());
            rest = tail;
            let (rows, cols, panel_start) = (&rows, &cols, &panel_start);
            let panels = w[0]..w[1];
            handles.push(scope.spawn(move || {
                let mut out = (Vec::new(), Vec::new());
                for p in panels {
                    let (lo, hi) = (panel_start[p], panel_start[p + 1]);
                    let first = span.start;
                    block_panel(
                        p * tj,
                        lo..hi,
                        rows,
                        cols,
                        ti,
                        max_nnz,
                        compress,
                        &mut mine[lo - first..hi - first],
                        &mut out,
                    );
                }
                out
            }));
        }
        handles
            .into_iter()
            .map(|h| h.join().expect("tiling thread panicked"))
            .collect()
    });
    let mut blocks = Vec::new();
    let mut active_rows = Vec::new();
    for (piece_blocks, piece_rows) in pieces {
        let offset = active_rows.len() as u32;
        blocks.extend(piece_blocks.into_iter().map(|mut b| {
            b[0] += offset;
            b
        }));
        active_rows.extend(piece_rows);
    }
    PanelTiling {
        blocks,
        active_rows,
        idx,
        cols: if compress { Vec::new() } else { cols },
        vals,
        perm,
        n_panels,
    }
}

/// Where the first piece of one active row's nonzeros (a segment) landed. A segment heavier
/// than what its block still takes continues in blocks of its own, as their local row 0.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FirstPiece {
    /// End (panel-order position) of the first piece.
    pub end: u32,
    /// The first piece's local row within its block.
    pub local: u32,
}

/// Cuts one panel's segments, (active row, nonzeros > 0) with rows ascending and nonzeros
/// from panel-order position `first` on, into blocks of at most `ti` active rows and
/// `max_nnz` nonzeros. Appends to `out` = (blocks, active rows), block row starts relative
/// to `out`'s active rows, and returns every segment's first piece, in order. Shared by the
/// host tiling and the one built on the GPU, so both cut identical blocks.
pub fn block_segments(
    col_base: u32,
    first: usize,
    segments: &[(u32, usize)],
    ti: usize,
    max_nnz: usize,
    out: &mut (Vec<[u32; 8]>, Vec<u32>),
) -> Vec<FirstPiece> {
    let (blocks, active_rows) = out;
    let mut pieces = Vec::with_capacity(segments.len());
    let mut e = first;
    // The open block: (first active row, local rows so far, first nonzero).
    let mut open: Option<(u32, u32, usize)> = None;
    let close = |blocks: &mut Vec<[u32; 8]>, (rows, n, start): (u32, u32, usize), end: usize| {
        blocks.push([rows, n, start as u32, end as u32, col_base, 0, 0, 0]);
    };
    for &(row, len) in segments {
        let mut left = len;
        while left > 0 {
            let block = match open {
                Some(b) if (b.1 as usize) < ti && e - b.2 < max_nnz => b,
                full => {
                    if let Some(b) = full {
                        close(blocks, b, e);
                    }
                    (active_rows.len() as u32, 0, e)
                }
            };
            let take = left.min(max_nnz - (e - block.2));
            if left == len {
                pieces.push(FirstPiece {
                    end: (e + take) as u32,
                    local: block.1,
                });
            }
            active_rows.push(row);
            open = Some((block.0, block.1 + 1, block.2));
            e += take;
            left -= take;
        }
    }
    if let Some(b) = open {
        close(blocks, b, e);
    }
    pieces
}

/// Cuts panel `nonzeros` (positions in panel order; rows ascending) into blocks (see
/// [`block_segments`]) and writes each nonzero's index word into `idx` (the panel's own
/// span).
#[allow(clippy::too_many_arguments)]
fn block_panel(
    col_base: usize,
    nonzeros: std::ops::Range<usize>,
    rows: &[u32],
    cols: &[u32],
    ti: usize,
    max_nnz: usize,
    compress: bool,
    idx: &mut [u32],
    out: &mut (Vec<[u32; 8]>, Vec<u32>),
) {
    let base = col_base as u32;
    let lo = nonzeros.start;
    // Runs of equal rows: the panel's segments.
    let mut segments: Vec<(u32, usize)> = Vec::new();
    for &r in &rows[nonzeros] {
        match segments.last_mut() {
            Some((row, len)) if *row == r => *len += 1,
            _ => segments.push((r, 1)),
        }
    }
    let pieces = block_segments(base, lo, &segments, ti, max_nnz, out);
    let mut start = lo;
    for (&(_, len), piece) in segments.iter().zip(pieces) {
        for d in start..start + len {
            let local = if d < piece.end as usize {
                piece.local
            } else {
                0
            };
            idx[d - lo] = if compress {
                (local << 16) | (cols[d] - base)
            } else {
                local
            };
        }
        start += len;
    }
}

/// SM-SM tiling: tiles of `ti` rows × `tj` columns; one block per non-empty tile.
pub struct TileTiling {
    /// Per block: (first row, first column, first nonzero, end).
    pub blocks: Vec<[u32; 4]>,
    /// Per nonzero: local row << 16 | local column.
    pub idx: Vec<u32>,
    /// Per nonzero: S value.
    pub vals: Vec<f32>,
    /// Per nonzero: its index in the CSR order of the original S.
    pub perm: Vec<u32>,
}

/// Builds the SM-SM tiling of `s` (`ti`, `tj` ≤ 65536). `to_original` as for [`panels`].
/// A row panel's entries stay within its own CSR span (only their order changes), so row
/// panels are tiled in parallel, each thread writing its own span.
pub fn tiles(s: &Csr, to_original: Option<&[u32]>, ti: usize, tj: usize) -> TileTiling {
    assert!(ti > 0 && tj > 0 && ti <= 1 << 16 && tj <= 1 << 16);
    let nnz = s.nnz();
    let mut idx = vec![0u32; nnz];
    let mut vals = vec![0f32; nnz];
    let mut perm = vec![0u32; nnz];
    let n_panels = s.nrows.div_ceil(ti);
    let parts = if nnz < 1 << 16 { 1 } else { threads() };
    // Row-panel boundaries of roughly equal nonzero counts, one range per thread.
    let bounds = balanced_cuts(n_panels, parts, |p| {
        s.row_ptr[(p * ti).min(s.nrows)] as usize
    });
    let blocks = std::thread::scope(|scope| {
        let (mut idx_rest, mut vals_rest, mut perm_rest) =
            (&mut idx[..], &mut vals[..], &mut perm[..]);
        let mut handles = Vec::new();
        for w in bounds.windows(2) {
            let rows = w[0] * ti..(w[1] * ti).min(s.nrows);
            let len = (s.row_ptr[rows.end] - s.row_ptr[rows.start]) as usize;
            let (i, ir) = std::mem::take(&mut idx_rest).split_at_mut(len);
            let (v, vr) = std::mem::take(&mut vals_rest).split_at_mut(len);
            let (p, pr) = std::mem::take(&mut perm_rest).split_at_mut(len);
            (idx_rest, vals_rest, perm_rest) = (ir, vr, pr);
            handles.push(scope.spawn(move || tile_rows(s, to_original, ti, tj, rows, i, v, p)));
        }
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("tiling thread panicked"))
            .collect()
    });
    TileTiling {
        blocks,
        idx,
        vals,
        perm,
    }
}

/// SM-SM tiling of the row panels in `rows` (a multiple of `ti` rows from a panel start)
/// into `idx`, `vals` and `perm`, which hold exactly their CSR span; returns their blocks.
#[allow(clippy::too_many_arguments)]
fn tile_rows(
    s: &Csr,
    to_original: Option<&[u32]>,
    ti: usize,
    tj: usize,
    rows: std::ops::Range<usize>,
    idx: &mut [u32],
    vals: &mut [f32],
    perm: &mut [u32],
) -> Vec<[u32; 4]> {
    let n_tiles = s.ncols.div_ceil(tj).max(1);
    let first = s.row_ptr[rows.start] as usize;
    let mut blocks = Vec::new();
    let mut counts = vec![0usize; n_tiles + 1];
    for r0 in rows.clone().step_by(ti) {
        let r1 = (r0 + ti).min(rows.end);
        counts.iter_mut().for_each(|c| *c = 0);
        let span = s.row_ptr[r0] as usize..s.row_ptr[r1] as usize;
        for &c in &s.col_idx[span.clone()] {
            counts[c as usize / tj + 1] += 1;
        }
        for t in 0..n_tiles {
            counts[t + 1] += counts[t];
        }
        let base = span.start - first;
        let mut next = counts.clone();
        for r in r0..r1 {
            for e in s.row_range(r) {
                let c = s.col_idx[e] as usize;
                let t = c / tj;
                let d = base + next[t];
                next[t] += 1;
                idx[d] = (((r - r0) as u32) << 16) | (c - t * tj) as u32;
                vals[d] = s.values[e];
                perm[d] = to_original.map_or(e as u32, |m| m[e]);
            }
        }
        for t in 0..n_tiles {
            if counts[t + 1] > counts[t] {
                blocks.push([
                    r0 as u32,
                    (t * tj) as u32,
                    (span.start + counts[t]) as u32,
                    (span.start + counts[t + 1]) as u32,
                ]);
            }
        }
    }
    blocks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heavy_segments_continue_as_local_row_zero_of_their_own_blocks() {
        // Rows 0 (3 nonzeros), 2 (10) and 5 (1); blocks of ≤ 2 rows and ≤ 4 nonzeros.
        let mut out = (Vec::new(), Vec::new());
        let pieces = block_segments(7, 100, &[(0, 3), (2, 10), (5, 1)], 2, 4, &mut out);
        let b = |r, n, s, e| [r, n, s, e, 7, 0, 0, 0];
        assert_eq!(
            out.0,
            vec![
                b(0, 2, 100, 104),
                b(2, 1, 104, 108),
                b(3, 1, 108, 112),
                b(4, 2, 112, 114)
            ]
        );
        assert_eq!(out.1, vec![0, 2, 2, 2, 2, 5]);
        let piece = |end, local| FirstPiece { end, local };
        assert_eq!(pieces, vec![piece(103, 0), piece(104, 1), piece(114, 1)]);
    }

    #[test]
    fn blocks_respect_both_bounds_and_cover_every_nonzero() {
        let segments: Vec<(u32, usize)> = (0..300u32)
            .map(|r| (r * 3, 1 + (r as usize * 7919) % 97))
            .collect();
        let total: usize = segments.iter().map(|s| s.1).sum();
        for (ti, max_nnz) in [(1, 1), (3, 50), (8, 1000), (64, 64)] {
            let mut out = (Vec::new(), Vec::new());
            let pieces = block_segments(0, 5, &segments, ti, max_nnz, &mut out);
            assert_eq!(pieces.len(), segments.len());
            let (blocks, rows) = out;
            let mut next = (0u32, 5u32);
            for blk in &blocks {
                assert_eq!((blk[0], blk[2]), next, "contiguous");
                assert!(blk[1] >= 1 && blk[1] as usize <= ti);
                assert!(blk[3] > blk[2] && (blk[3] - blk[2]) as usize <= max_nnz);
                next = (blk[0] + blk[1], blk[3]);
            }
            assert_eq!(next, (rows.len() as u32, 5 + total as u32));
        }
    }
}
