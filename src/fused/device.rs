//! X and the arrays derived from it on the device: X itself (CSR in row bands, or dense in
//! row bands), the long-row chunks, the column-sorted tiles, the hot-column rewrite, and the
//! scratch a variant needs; [`Plan::build`] uploads them once per plan.

use std::sync::Arc;

use super::{bands, hot, long, split, stream, tiles, Config, Matrix, Plan, TransposeX, Variant};
use crate::gpu::{Gpu, GpuBuffer};
use crate::{Error, Result};

/// X on the device.
pub(super) enum DeviceX {
    Sparse {
        col_idx: GpuBuffer<u32>,
        values: GpuBuffer<f32>,
        /// Row bands, each binding a window of `col_idx` / `values` ([`bands`]; one when X
        /// fits one binding).
        bands: Vec<bands::SparseBand>,
    },
    Dense {
        /// Row stride in floats ([`super::dense::x_stride`]: n, rows unpadded).
        stride: usize,
        /// `m · stride` floats.
        data: GpuBuffer<f32>,
        /// Row bands, each within one storage binding and starting at an aligned offset
        /// ([`super::config::dense_band_rows`] rows each but the last).
        bands: Vec<std::ops::Range<usize>>,
    },
}

impl DeviceX {
    /// Sets of two-pass partials (groups × n each): one per dense band; one for sparse X,
    /// whose bands add to the same partials in band order.
    pub(super) fn partial_sets(&self) -> usize {
        match self {
            DeviceX::Dense { bands, .. } => bands.len(),
            DeviceX::Sparse { .. } => 1,
        }
    }

    pub(super) fn n_bands(&self) -> usize {
        match self {
            DeviceX::Dense { bands, .. } => bands.len(),
            DeviceX::Sparse { bands, .. } => bands.len(),
        }
    }
}

/// The device side of [`long`]: per band, its chunks `[row, begin, end, slot]` (positions
/// rebased to the band's window, [`bands::split_chunks`]), their count and the global index
/// of its first chunk; one dot product per long row (slots numbered over all bands). Folded
/// ([`Config::fold`]): the slot is the row's first chunk and count ([`long::fold_codes`]) and
/// `dots` holds one partial per chunk.
pub(super) struct LongRows {
    pub(super) chunks: Vec<(GpuBuffer<u32>, u32, u32)>,
    pub(super) nchunks: u32,
    pub(super) dots: GpuBuffer<f32>,
    pub(super) folded: bool,
}

/// The device side of [`tiles`]: per band, its tiles' row ranges (rebased to the band) and
/// their count; packed keys and values (X's length, bound through each band's window).
pub(super) struct SortedX {
    pub(super) rows: Vec<(GpuBuffer<u32>, u32)>,
    pub(super) keys: GpuBuffer<u32>,
    pub(super) values: GpuBuffer<f32>,
    pub(super) pos_bits: u32,
    /// Wide keys: each entry's column ([`tiles::Tiles::cols`]).
    pub(super) cols: Option<GpuBuffer<u32>>,
    /// (entries in tiles, adds of the segmented scatter at the adapter's smallest subgroup).
    pub(super) adds: (usize, usize),
}

/// The device side of [`stream`]: the row tiles (`[first entry, entries, first row index,
/// rows]` each) followed by the long rows (`[first entry, padded entries, X's row, entries]`
/// each), keys and values as `vec4` words, each invocation's lead row (none for unit tiles),
/// X's row of each tile row, and the rows of the fullest tile (the kernel's RMAX).
pub(super) struct StreamX {
    pub(super) tiles: GpuBuffer<u32>,
    pub(super) keys: GpuBuffer<u32>,
    pub(super) values: GpuBuffer<f32>,
    pub(super) lead: GpuBuffer<u32>,
    pub(super) rows: GpuBuffer<u32>,
    pub(super) ntiles: u32,
    /// Long rows after the tiles in `tiles`.
    pub(super) nlong: u32,
    pub(super) rows_max: u32,
    /// Rows of each item in the kernel's order: 1 per long row, then each tile's.
    pub(super) item_rows: Vec<u32>,
}

impl StreamX {
    /// ceil(log₂(N + 1)) for N the most rows one of `groups` workgroups takes (items are
    /// strided over the grid): the fixed-point sums' headroom ([`Config::wg_fixed`]).
    pub(super) fn ln_rows(&self, groups: u32) -> u32 {
        let g = groups.max(1) as usize;
        let mut per = vec![0u64; g];
        for (i, &r) in self.item_rows.iter().enumerate() {
            per[i % g] += u64::from(r);
        }
        let most = per.into_iter().max().unwrap_or(0);
        (u64::BITS - most.leading_zeros()).max(1)
    }
}

impl StreamX {
    fn build(gpu: &Gpu, x: &crate::sparse::Csr, config: &Config) -> Result<StreamX> {
        // Unit tiles are cut for a unit's lanes, and hold as many rows as entries.
        let wg = config.tile_lanes();
        // The caller's cap on a tile's rows (already within what workgroup memory holds).
        let cap = match config.row_tile {
            _ if config.unit > 0 => config.tile,
            0 => super::config::stream_rows_cap(
                gpu,
                x.ncols,
                wg,
                config.tile,
                super::config::StreamFootprint::of(config),
            ),
            rows => rows,
        };
        let s = stream::build(x, wg, config.tile / wg, config.long_row, cap)?;
        // Unit tiles find their lanes' first tile rows by a subgroup scan.
        let lead = if config.unit > 0 { vec![] } else { s.leads() };
        // Every buffer holds a vec4 at least (an X with no tile reads none of them).
        let pad4 = |mut v: Vec<u32>| {
            v.resize(v.len().max(4), 0);
            v
        };
        let mut values = s.values;
        values.resize(values.len().max(4), 0.0);
        let items: Vec<u32> = s.tiles.iter().chain(&s.longs).flatten().copied().collect();
        let item_rows = std::iter::repeat_n(1, s.longs.len())
            .chain(s.tiles.iter().map(|t| t[3]))
            .collect();
        Ok(StreamX {
            item_rows,
            ntiles: s.tiles.len() as u32,
            nlong: s.longs.len() as u32,
            rows_max: s.rows_max.max(1),
            tiles: GpuBuffer::upload(gpu, "fused.stream_tiles", &pad4(items))?,
            keys: GpuBuffer::upload(
                gpu,
                "fused.stream_keys",
                &pad4(if config.key16 {
                    stream::pack16(&s.keys)?
                } else {
                    s.keys
                }),
            )?,
            values: GpuBuffer::upload(gpu, "fused.stream_values", &values)?,
            lead: GpuBuffer::upload(gpu, "fused.stream_lead", &pad4(lead))?,
            rows: GpuBuffer::upload(gpu, "fused.stream_rows", &pad4(s.rows))?,
        })
    }
}

/// The device side of [`split`]: X's column-split copy (packed 32-bit keys, or 16-bit words
/// under [`Config::key16`], and values), its chunks (`[first, end, tile's first row, 0]`
/// each) and the scatter's grid.
pub(super) struct SplitX {
    pub(super) keys: GpuBuffer<u32>,
    pub(super) values: GpuBuffer<f32>,
    pub(super) chunks: GpuBuffer<u32>,
    pub(super) nchunks: u32,
    /// X's column indices 16 bits each, two per word, for the row pass (n ≤ 65,536).
    pub(super) col16: Option<GpuBuffer<u32>>,
    pub(super) row_bits: u32,
    /// Workgroups of `fused.split` (chunks strided over them).
    pub(super) groups: u32,
    /// Adds of the scatter at the adapter's smallest subgroup size (counted on the host).
    pub(super) adds: usize,
}

impl SplitX {
    fn build(gpu: &Gpu, x: &crate::sparse::Csr, config: &Config) -> Result<SplitX> {
        let chunk = super::SPLIT_EPL * config.workgroup;
        // A subgroup's consecutive slots of a chunk: EPL rounds of its lanes (the 16-bit
        // layout needs one fixed subgroup size, the configuration checked it).
        let segment = super::SPLIT_EPL * gpu.caps.subgroup_min_size.max(1);
        let (keys, values, chunks, row_bits, adds) = if config.key16 {
            let l = split::build16(x, config.row_tile, chunk, segment)?;
            let adds = l.adds(segment as usize);
            (l.packed(), l.values, l.chunks, 0, adds)
        } else {
            let l = split::build(x, config.row_tile, chunk)?;
            let adds = l.adds(segment as usize);
            (l.keys, l.values, l.chunks, l.row_bits, adds)
        };
        let nchunks = chunks.len() as u32;
        // Every buffer holds an element at least (an empty X has no chunk to read them).
        let mut flat: Vec<u32> = chunks.iter().flatten().copied().collect();
        if flat.is_empty() {
            flat.resize(4, 0);
        }
        let (mut keys, mut values) = (keys, values);
        if keys.is_empty() {
            keys.push(0);
            values.push(0.0);
        }
        let max_groups = gpu.caps.max_workgroups_per_dimension;
        let per_chunk = super::loops::split_chunk(super::SPLIT_EPL);
        let budget = crate::gpu::loop_cap::budget(gpu.caps.loop_cap);
        let mut groups = nchunks.clamp(1, max_groups);
        if let Some(k) = super::loops::max_per_invocation(budget, per_chunk, 1) {
            let need = (nchunks as u64).div_ceil(k.max(1));
            if k == 0 || need > max_groups as u64 {
                return Err(Error::TooLarge {
                    what: format!("the column-split scatter's {nchunks} chunks"),
                    needed: format!("{need} workgroups within the device's loop budget"),
                    limit: format!("{max_groups} workgroups on {}", gpu.caps.adapter_name),
                });
            }
            groups = groups.max(need as u32);
        }
        let col16 = if x.ncols <= 1 << 16 {
            let mut packed: Vec<u32> =
                crate::limits::try_with_capacity("16-bit column indices", x.nnz() / 2 + 1)?;
            packed.extend(
                x.col_idx
                    .chunks(2)
                    .map(|p| p[0] | p.get(1).map_or(0, |&c| c << 16)),
            );
            if packed.is_empty() {
                packed.push(0);
            }
            Some(GpuBuffer::upload(gpu, "fused.split_col16", &packed)?)
        } else {
            None
        };
        Ok(SplitX {
            col16,
            keys: GpuBuffer::upload(gpu, "fused.split_keys", &keys)?,
            values: GpuBuffer::upload(gpu, "fused.split_values", &values)?,
            chunks: GpuBuffer::upload(gpu, "fused.split_chunks", &flat)?,
            nchunks,
            row_bits,
            groups,
            adds,
        })
    }
}

/// Columns per invocation of the main kernel's workgroup at most for the one-dispatch
/// ending ([`Config::fold`]): its last workgroup writes all of w alone, so n stays within a
/// few rounds of it.
pub const FINISH_COLUMNS: usize = 4;

/// Whether the main kernel (`fused.sparse` or `fused.sorted` with w in workgroup memory) still
/// fits the device's workgroup memory with the FINISH flag beside its own arrays: the
/// reduction scratch without subgroup shuffles, the sorted tile's products, the copy of w
/// and the hot copies. The launch model may fill workgroup memory exactly (sorted at 1,024 invocations and
/// n = 4,096 on an H200: 32 KiB of products and 16 KiB of w, all of 48 KiB); one flag more
/// was past the limit, which wgpu does not check, and that dispatch never finished.
fn finish_fits(gpu: &Gpu, config: &Config, n: usize) -> bool {
    // The stream kernel's row cap already leaves room for the flag.
    if config.variant == Variant::Stream {
        return true;
    }
    let scratch = if config.subgroup_reduce {
        0
    } else {
        4 * config.workgroup as u64
    };
    let copies = if config.workgroup_w {
        let wg_mem = gpu.caps.max_workgroup_storage_bytes;
        config.hot_cols as u64 * super::config::hot_copies_of(config, n, wg_mem) as u64
    } else {
        0
    };
    let shared = scratch + 4 * config.tile as u64 + 4 * (n.max(1) as u64 + copies);
    shared + super::config::FINISH_FLAG_BYTES <= gpu.caps.max_workgroup_storage_bytes as u64
}

/// The one-dispatch ending's accumulator (n, zero between runs) and finished-workgroup count.
pub(super) struct Finish {
    pub(super) acc: GpuBuffer<f32>,
    pub(super) counter: GpuBuffer<u32>,
}

/// Layouts of X another plan of the same X may share with a new one (each used only where the
/// new configuration matches the one it was built for; the transpose's matrices where their
/// panels and row order match, its grids built again where the rest differs).
#[derive(Default)]
pub(super) struct Layouts {
    pub(super) hot: Option<Arc<(GpuBuffer<u32>, GpuBuffer<u32>)>>,
    pub(super) sorted: Option<Arc<SortedX>>,
    pub(super) split: Option<Arc<SplitX>>,
    pub(super) stream: Option<Arc<StreamX>>,
    pub(super) transpose: Option<Arc<TransposeX>>,
}

impl Plan {
    /// A plan of `config` on `x` (re-indexed where `order`, its new → old column
    /// permutation, is given), X on the device as `dx`, with the layouts in `shared`.
    pub(super) fn build(
        gpu: &Gpu,
        (x, order): (Matrix, Option<&[u32]>),
        config: Config,
        dx: Arc<DeviceX>,
        shared: Layouts,
    ) -> Result<Plan> {
        let Layouts {
            hot,
            sorted,
            split,
            stream,
            transpose,
        } = shared;
        let (m, n) = x.shape();
        let scratch = match config.variant {
            Variant::TwoPass => {
                let len = (config.groups as usize)
                    .checked_mul(dx.partial_sets())
                    .and_then(|g| g.checked_mul(n))
                    .unwrap_or(usize::MAX);
                GpuBuffer::<f32>::check_fits(gpu, "fused two-pass partials", len)?;
                if (len as u64) * 4 > gpu.caps.max_storage_binding_bytes {
                    return Err(Error::TooLarge {
                        what: "fused two-pass partials".into(),
                        needed: format!("{} bytes in one storage binding", len as u64 * 4),
                        limit: format!("{} bytes", gpu.caps.max_storage_binding_bytes),
                    });
                }
                Some(GpuBuffer::zeroed(gpu, "fused.partials", len)?)
            }
            Variant::Unfused | Variant::Split | Variant::Transpose => {
                Some(GpuBuffer::zeroed(gpu, "fused.p", m.max(1))?)
            }
            _ => None,
        };
        let hot = match (x, hot) {
            (Matrix::Sparse(_), _) if config.hot_cols == 0 || config.hot_prefix() => None,
            (Matrix::Sparse(_), Some(shared)) => Some(shared),
            (Matrix::Sparse(s), None) => {
                let h = hot::build(s, config.hot_cols as usize)?;
                Some(Arc::new((
                    GpuBuffer::upload(gpu, "fused.hot_col_idx", &h.col_idx)?,
                    GpuBuffer::upload(gpu, "fused.hot_cols", &h.cols)?,
                )))
            }
            (Matrix::Dense(_), _) => None,
        };
        let sparse_bands = match &*dx {
            DeviceX::Sparse { bands, .. } => &bands[..],
            DeviceX::Dense { .. } => &[],
        };
        let long = match x {
            // The stream kernel takes its long rows itself ([`stream`]), the transpose's
            // gathers theirs ([`super::transpose`]).
            Matrix::Sparse(s)
                if config.long_row != u32::MAX
                    && !matches!(config.variant, Variant::Stream | Variant::Transpose) =>
            {
                let (chunks, rows) = long::chunks(&s.row_ptr, config.long_row)?;
                let folded = config
                    .fold
                    .then(|| long::fold_codes(&chunks))
                    .flatten()
                    .filter(|_| folded_fits_loop_budget(gpu, &config, s, n, chunks.len()));
                let (records, dots) = match &folded {
                    Some(f) => (f, chunks.len()),
                    None => (&chunks, rows),
                };
                if chunks.is_empty() {
                    None
                } else {
                    // Bands hold consecutive rows, so each band's chunks are consecutive.
                    let mut base = 0;
                    let per_band = bands::split_chunks(records, sparse_bands)
                        .into_iter()
                        .map(|c| {
                            let n = (c.len() / 4) as u32;
                            base += n;
                            Ok((
                                GpuBuffer::upload(gpu, "fused.long_chunks", &c)?,
                                n,
                                base - n,
                            ))
                        })
                        .collect::<Result<_>>()?;
                    Some(LongRows {
                        chunks: per_band,
                        nchunks: chunks.len() as u32,
                        dots: GpuBuffer::zeroed(gpu, "fused.long_dots", dots)?,
                        folded: folded.is_some(),
                    })
                }
            }
            _ => None,
        };
        let is_sorted = config.variant == Variant::Sorted && config.tile > 0;
        let sorted = match (x, sorted) {
            (Matrix::Sparse(_), Some(shared)) if is_sorted => Some(shared),
            (Matrix::Sparse(s), _) if is_sorted => {
                // Tiles never cross a band's first row, so each band takes whole tiles.
                let starts: Vec<usize> = sparse_bands.iter().map(|b| b.rows.start).collect();
                let long = config.long_row.min(config.tile);
                let t = tiles::build_banded(
                    s,
                    config.tile,
                    long,
                    !tiles::fits(s.ncols, config.tile),
                    &starts,
                )?;
                let sg = gpu.caps.subgroup_min_size.max(1) as usize;
                let per_band = bands::split_tiles(&t.rows, sparse_bands)
                    .into_iter()
                    .map(|r| {
                        let n = (r.len() / 2) as u32;
                        Ok((GpuBuffer::upload(gpu, "fused.tile_rows", &r)?, n))
                    })
                    .collect::<Result<_>>()?;
                Some(Arc::new(SortedX {
                    adds: tiles::adds(&t, &s.row_ptr, sg),
                    rows: per_band,
                    keys: GpuBuffer::upload(gpu, "fused.tile_keys", &t.keys)?,
                    values: GpuBuffer::upload(gpu, "fused.tile_values", &t.values)?,
                    pos_bits: t.pos_bits,
                    cols: match &t.cols {
                        Some(c) => Some(GpuBuffer::upload(gpu, "fused.tile_cols", c)?),
                        None => None,
                    },
                }))
            }
            _ => None,
        };
        let split = match (x, split) {
            (Matrix::Sparse(_), Some(shared)) if config.variant == Variant::Split => Some(shared),
            (Matrix::Sparse(s), _) if config.variant == Variant::Split => {
                Some(Arc::new(SplitX::build(gpu, s, &config)?))
            }
            _ => None,
        };
        let stream = match (x, stream) {
            (Matrix::Sparse(_), Some(shared)) if config.variant == Variant::Stream => Some(shared),
            (Matrix::Sparse(s), _) if config.variant == Variant::Stream => {
                Some(Arc::new(StreamX::build(gpu, s, &config)?))
            }
            _ => None,
        };
        let transpose = match (x, transpose) {
            // Another plan's matrices, with its grids where they fit this configuration.
            (Matrix::Sparse(s), Some(shared)) if config.variant == Variant::Transpose => {
                Some(if shared.fits(&config) {
                    shared
                } else {
                    Arc::new(shared.regrid(gpu, s, sparse_bands, &config)?)
                })
            }
            (Matrix::Sparse(s), _) if config.variant == Variant::Transpose => {
                let order = order.filter(|_| config.xt_caller);
                Some(Arc::new(TransposeX::build(
                    gpu,
                    s,
                    sparse_bands,
                    &config,
                    order,
                )?))
            }
            _ => None,
        };
        let finish = if config.fold
            && config.workgroup_w
            && matches!(
                config.variant,
                Variant::Fused | Variant::Sorted | Variant::Stream
            )
            && matches!(x, Matrix::Sparse(_))
            && long.is_none()
            && n <= FINISH_COLUMNS * config.workgroup as usize
            && finish_fits(gpu, &config, n)
        {
            Some(Finish {
                acc: GpuBuffer::zeroed(gpu, "fused.finish_acc", n.max(1))?,
                counter: GpuBuffer::zeroed(gpu, "fused.finish_count", 4)?,
            })
        } else {
            None
        };
        Ok(Plan {
            m,
            n,
            nnz: x.nnz(),
            config,
            x: dx,
            hot,
            used_cols: None,
            scratch,
            long,
            sorted,
            split,
            stream,
            transpose,
            finish,
            dummy: Arc::new(GpuBuffer::zeroed(gpu, "fused.absent", 4)?),
            reindex: None,
            col_share: None,
            built_s: 0.0,
            tuning: None,
        })
    }
}

/// Whether the folded sequence keeps every invocation of the main kernel within a software
/// device's loop budget ([`crate::gpu::loop_cap`]): its rows (sparse) or tiles (sorted), as
/// the launch model sized them, then its share of the `nchunks` long-row chunks, each
/// summing its row's chunk partials. Past the budget the plan keeps the unfolded sequence,
/// whose long-row grid is sized under it. Always true without a cap.
fn folded_fits_loop_budget(
    gpu: &Gpu,
    config: &Config,
    x: &crate::sparse::Csr,
    n: usize,
    nchunks: usize,
) -> bool {
    use crate::fused::loops;
    let Some(budget) = crate::gpu::loop_cap::budget(gpu.caps.loop_cap) else {
        return true;
    };
    let (wg, vs) = (config.workgroup, config.vs);
    let groups = config.groups.max(1) as u64;
    let mu = x.nnz() as f64 / x.nrows.max(1) as f64;
    let fixed = match (config.workgroup_w, config.hot_cols) {
        (true, _) => loops::workgroup_w(n, wg),
        (false, 0) => 1,
        (false, h) => loops::workgroup_w(h as usize, wg),
    };
    let rows = if config.tile > 0 {
        let tiles = 2 * x.nnz().div_ceil(config.tile as usize) as u64;
        let per_tile = loops::sorted_tile(config.tile / wg.max(1), wg, vs, mu);
        tiles.div_ceil(groups) * per_tile
    } else {
        let nv = (wg / vs.max(1)).max(1);
        config.rows_per_vector as u64 * loops::sparse_row(mu, vs, nv, false)
    };
    let chunk = config.long_row.min(long::CHUNK_MAX);
    let tail = (nchunks as u64).div_ceil(groups) * loops::folded_chunk(chunk, wg);
    rows + fixed + tail <= budget
}
