//! One gather pass's grids over a CSR matrix (X or Xᵀ, or a column panel of either): the row
//! or tile kernel's workgroups per row band and the long rows' chunks, cut from the matrix's
//! row offsets alone, so plans of other grids rebuild them without the entries.

use super::{long_row, mean_row_len, offsets_nnz};
use crate::fused::bands::{self, SparseBand};
use crate::fused::config::grid;
use crate::fused::gather_tiles::{self, TileRule};
use crate::fused::{long, loops, Options};
use crate::gpu::{loop_cap, Caps, Gpu, GpuBuffer, Residency};
use crate::{Error, Result};

/// One CSR operand of the gathers (X or Xᵀ): lanes per row, the long-row threshold, and per
/// band its grid and long-row chunks.
pub(crate) struct RowPass {
    pub(super) vs: u32,
    pub(super) workgroup: u32,
    pub(super) subgroups: bool,
    pub(super) long_len: u32,
    /// `fused.gather_tiles` in place of the row kernel: (entries per invocation, lanes per row
    /// at most).
    pub(super) tiled: Option<(u32, u32)>,
    /// With tiles: the pipeline over resident workgroups (the grid below is sized for it).
    pub(super) pipe: bool,
    pub(super) bands: Vec<BandPass>,
}

/// A band's share of a [`RowPass`].
pub(super) struct BandPass {
    /// Rows per vector (0 with tiles) and workgroups of the row or tile kernel.
    pub(super) c: u32,
    pub(super) groups: u32,
    /// With tiles, (first row, its first entry) per tile and then (the band's rows, its
    /// entries) ([`gather_tiles::with_entries`]); a stand-in record for the row kernel.
    /// `ntiles` tiles.
    pub(super) tiles: GpuBuffer<u32>,
    pub(super) ntiles: u32,
    /// `[row, begin, end, 0]` per chunk (the matrix's row, positions rebased to the band's
    /// window), at least one record so the buffer binds; `nchunks` of them are real.
    pub(super) chunks: GpuBuffer<u32>,
    pub(super) nchunks: u32,
    /// Workgroups of `fused.gather_chunks` (chunks strided over them).
    pub(super) chunk_groups: u32,
}

impl RowPass {
    /// The passes over the matrix whose CSR row offsets are `rows` (uploaded in `bands`) at
    /// `vs` lanes per row and `wg` invocations:
    /// Eq. 5's C per band (within a software device's loop budget) and the chunks of the rows
    /// longer than `long_len` (`None`: [`long_row`]). With `tiled` (entries per invocation,
    /// lanes per row at most), tiles of `wg` × that many entries in place of the row grid,
    /// and every row longer than a tile in the chunks; with `pipe` too, one workgroup per
    /// resident slot (each taking many tiles, the next one's loads in flight during this
    /// one's gathers) instead of one per tile.
    pub(super) fn build(
        gpu: &Gpu,
        rows: &[u32],
        bands: &[SparseBand],
        (vs, wg, subgroups): (u32, u32, bool),
        long_len: Option<u32>,
        (tiled, pipe): (Option<(u32, u32)>, bool),
    ) -> Result<RowPass> {
        let caps = &gpu.caps;
        let nnz = offsets_nnz(rows);
        let mu = mean_row_len(rows);
        let nv = (wg / vs).max(1);
        let scratch = if subgroups { 0 } else { 4 * wg };
        let per_row = (loops::sparse_row(mu, vs, nv, false), 1);
        let r = Residency::of(caps);
        let options = Options::default();
        let resident = r.units.saturating_mul(r.groups_resident(wg, scratch)) as u64;
        let long_len = long_len.unwrap_or_else(|| long_row(nnz, resident * nv as u64));
        let rule = tiled.map(|(epl, tpr_max)| TileRule {
            wg,
            tile: epl * wg,
            long: long_len.min(epl * wg),
            tpr_max,
        });
        let long_len = rule.map_or(long_len, |t| t.long);
        let (records, _) = long::chunks(rows, long_len)?;
        let chunk = long_len.min(long::CHUNK_MAX);
        let per_band = bands::split_chunks(&records, bands);
        let budget = loop_cap::budget(caps.loop_cap);
        let max_groups = caps.max_workgroups_per_dimension;
        let mut out = Vec::with_capacity(bands.len());
        for (band, mut flat) in bands.iter().zip(per_band) {
            let ((c, groups), tiles) = match &rule {
                None => (
                    grid(
                        &options,
                        band.rows.len(),
                        nv,
                        (&r, wg, scratch),
                        caps,
                        per_row,
                    )?,
                    vec![0, 0],
                ),
                Some(rule) => {
                    let starts = gather_tiles::cut(rows, band.rows.clone(), rule)?;
                    let ntiles = (starts.len() - 1) as u32;
                    let tiles = gather_tiles::with_entries(rows, band, &starts)?;
                    let mut groups = ntiles.clamp(1, max_groups);
                    // A workgroup's tiles, each its offsets, loads, a row's sum and reduction.
                    let per_tile = (rule.tile / wg) as u64
                        + rule.serial_max() as u64
                        + 2 * wg.ilog2() as u64
                        + 4;
                    if pipe {
                        // The kernel's products and row offsets in workgroup memory; on a
                        // device with a loop budget, enough workgroups to stay within it.
                        let shared = 4 * (rule.tile + wg + 1);
                        let resident = r.units.saturating_mul(r.groups_resident(wg, shared));
                        let need = budget.map_or(1, |b| {
                            let per = (b / per_tile).clamp(1, u32::MAX as u64) as u32;
                            ntiles.div_ceil(per)
                        });
                        groups = groups.min(resident.max(need)).max(1);
                    }
                    let iterations = (ntiles as u64).div_ceil(groups as u64) * per_tile;
                    within(budget, iterations, caps, || format!("{ntiles} row tiles"))?;
                    ((0, groups), tiles)
                }
            };
            let nchunks = (flat.len() / 4) as u32;
            let chunk_groups = nchunks.clamp(1, max_groups);
            // A workgroup's chunks, each its entries over the workgroup and a tree sum.
            let per_chunk = (chunk as u64).div_ceil(wg as u64) + 2 * wg.ilog2() as u64 + 2;
            let iterations = (nchunks as u64).div_ceil(chunk_groups as u64) * per_chunk;
            within(budget, iterations, caps, || {
                format!("{nchunks} long-row chunks")
            })?;
            if flat.is_empty() {
                flat.resize(4, 0);
            }
            out.push(BandPass {
                c,
                groups,
                ntiles: (tiles.len() / 2 - 1) as u32,
                tiles: GpuBuffer::upload(gpu, "fused.gather_tiles", &tiles)?,
                chunks: GpuBuffer::upload(gpu, "fused.gather_chunks", &flat)?,
                nchunks,
                chunk_groups,
            });
        }
        Ok(RowPass {
            vs,
            workgroup: wg,
            subgroups,
            long_len,
            tiled,
            pipe: pipe && tiled.is_some(),
            bands: out,
        })
    }

    /// Row tiles over all bands (0 for the row kernel).
    pub(crate) fn tiles(&self) -> usize {
        self.bands.iter().map(|b| b.ntiles as usize).sum()
    }

    /// Long-row chunks over all bands.
    pub(crate) fn chunks(&self) -> usize {
        self.bands.iter().map(|b| b.nchunks as usize).sum()
    }

    /// Dispatches of one pass: the row kernel per band, and the chunk kernel where a band has
    /// chunks.
    pub(super) fn dispatches(&self) -> usize {
        self.bands
            .iter()
            .map(|b| 1 + usize::from(b.nchunks > 0))
            .sum()
    }
}

/// Refuses `iterations` loop iterations per invocation beyond a software device's loop
/// `budget` (none on hardware); `what` names the work of a gather that would take them.
fn within(
    budget: Option<u64>,
    iterations: u64,
    caps: &Caps,
    what: impl FnOnce() -> String,
) -> Result<()> {
    match budget.filter(|&b| iterations > b) {
        Some(b) => Err(Error::TooLarge {
            what: format!("{} of a gather", what()),
            needed: format!("{iterations} loop iterations per invocation"),
            limit: format!("{b} on {}", caps.adapter_name),
        }),
        None => Ok(()),
    }
}
