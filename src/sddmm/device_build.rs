//! Plan steps built on the GPU (the plan's "on the GPU where it pays"): the row of every
//! nonzero for the COO kernels, and the SM-L2 and SM-SM tilings.
//!
//! A tiling is a bucket sort of S's nonzeros: a bucket ("key") is one active row of one
//! column panel (SM-L2) or one tile (SM-SM), and keys run in the order the kernels take
//! nonzeros (`shaders/sddmm/tile_key.wgsl`). One pass counts every bucket with atomics; the
//! host scans the counts and cuts the blocks (work in the number of buckets, not nonzeros,
//! with the same [`tiles::block_segments`] as the host tiling, so both cut identical blocks);
//! a second pass places every nonzero. Sᵀ's tiling is read straight off S's CSR arrays by
//! swapping row and column in the key: no transpose is built.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::sddmm::arrays::{PanelArrays, TileArrays};
use crate::sddmm::{tiles, Config};
use crate::sparse::{offsets, Csr};
use crate::Result;

/// Threads per workgroup of the build kernels (one invocation per nonzero).
const WG: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct ExpandParams {
    nnz: u32,
    nrows: u32,
    pad: [u32; 2],
}

/// The row of every nonzero of `s`, built on the GPU from its row offsets (the queue runs
/// it before any later dispatch that reads it).
pub(crate) fn expand_rows(gpu: &Gpu, s: &Csr) -> Result<GpuBuffer<u32>> {
    let rows = GpuBuffer::<u32>::zeroed(gpu, "sddmm.rows", s.nnz())?;
    if s.nnz() == 0 {
        return Ok(rows);
    }
    let row_ptr = GpuBuffer::upload(gpu, "sddmm.row_ptr", &s.row_ptr)?;
    let kernel = gpu.kernel(&KernelSpec {
        name: "sddmm/expand_rows",
        defines: vec![],
        constants: vec![("WG", WG as f64)],
        bindings: &[Binding::Uniform, Binding::Read, Binding::ReadWrite],
    })?;
    let params = gpu.uniform(
        "sddmm.expand_rows",
        &ExpandParams {
            nnz: s.nnz() as u32,
            nrows: s.nrows as u32,
            pad: [0; 2],
        },
    );
    let bg = kernel.bind(gpu, &[&params, row_ptr.raw(), rows.raw()])?;
    let mut batch = Batch::new(gpu);
    batch.dispatch(&kernel, bg, gpu.grid(s.nnz().div_ceil(WG as usize) as u32)?)?;
    batch.submit()?;
    Ok(rows)
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct TileParams {
    nnz: u32,
    transposed: u32,
    rows: u32,
    col_tiles: u32,
    tj: u32,
    ti: u32,
    pad: [u32; 2],
}

/// S's nonzeros on the device as (row, column, value) per nonzero, CSR order.
struct Source {
    rows: GpuBuffer<u32>,
    cols: GpuBuffer<u32>,
    vals: GpuBuffer<f32>,
}

/// Buckets a GPU-built tiling may use: the host scans and blocks them, so beyond about one
/// per nonzero the host tiling is as cheap and the GPU one does not pay.
fn keys_pay_off(keys: usize, nnz: usize, gpu: &Gpu) -> bool {
    let binding = gpu.caps.max_storage_binding_bytes as usize;
    nnz > 0 && keys <= nnz + (1 << 20) && keys * 8 <= binding && keys < u32::MAX as usize
}

/// The pieces every GPU-built tiling shares: S uploaded, the bucket counts, and the place
/// pass that writes the per-nonzero arrays once the host has turned the counts into each
/// bucket's first position (`cursor`) and, for panels, first pieces (`seg`).
struct Builder<'g> {
    gpu: &'g Gpu,
    source: Source,
    params: wgpu::Buffer,
    defines: Vec<&'static str>,
    nnz: usize,
}

impl<'g> Builder<'g> {
    fn new(gpu: &'g Gpu, s: &Csr, params: TileParams, defines: Vec<&'static str>) -> Result<Self> {
        let source = Source {
            rows: expand_rows(gpu, s)?,
            cols: GpuBuffer::upload(gpu, "sddmm.build.cols", &s.col_idx)?,
            vals: GpuBuffer::upload(gpu, "sddmm.build.vals", &s.values)?,
        };
        Ok(Builder {
            gpu,
            source,
            params: gpu.uniform("sddmm.tile_params", &params),
            defines,
            nnz: s.nnz(),
        })
    }

    fn groups(&self) -> Result<[u32; 3]> {
        self.gpu.grid(self.nnz.div_ceil(WG as usize) as u32)
    }

    /// Nonzeros per bucket, read back.
    fn count(&self, keys: usize) -> Result<Vec<u32>> {
        let gpu = self.gpu;
        let counts = GpuBuffer::<u32>::zeroed(gpu, "sddmm.tile_counts", keys)?;
        let kernel = gpu.kernel(&KernelSpec {
            name: "sddmm/tile_count",
            defines: self.defines.clone(),
            constants: vec![("WG", WG as f64)],
            bindings: &[
                Binding::Uniform,
                Binding::Read,
                Binding::Read,
                Binding::ReadWrite,
            ],
        })?;
        let bg = kernel.bind(
            gpu,
            &[
                &self.params,
                self.source.rows.raw(),
                self.source.cols.raw(),
                counts.raw(),
            ],
        )?;
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, bg, self.groups()?)?;
        batch.submit()?;
        counts.read(gpu)
    }

    /// Places every nonzero. `seg` (panels) gives each bucket's first piece; `cols` is
    /// filled only for uncompressed panels.
    fn place(&self, starts: &[u32], seg: Option<&[[u32; 2]]>, with_cols: bool) -> Result<Placed> {
        let (gpu, nnz) = (self.gpu, self.nnz);
        let cursor = GpuBuffer::upload(gpu, "sddmm.tile_cursor", starts)?;
        let idx = GpuBuffer::<u32>::zeroed(gpu, "sddmm.idx", nnz)?;
        let vals = GpuBuffer::<f32>::zeroed(gpu, "sddmm.vals", nnz)?;
        let perm = GpuBuffer::<u32>::zeroed(gpu, "sddmm.perm", nnz)?;
        let cols = GpuBuffer::<u32>::zeroed(gpu, "sddmm.cols", if with_cols { nnz } else { 0 })?;
        let seg = seg
            .map(|s| GpuBuffer::upload(gpu, "sddmm.tile_first_pieces", s))
            .transpose()?;
        let mut bindings = vec![
            Binding::Uniform,
            Binding::Read,
            Binding::Read,
            Binding::Read,
            Binding::ReadWrite,
            Binding::ReadWrite,
            Binding::ReadWrite,
            Binding::ReadWrite,
        ];
        let mut buffers = vec![
            &self.params,
            self.source.rows.raw(),
            self.source.cols.raw(),
            self.source.vals.raw(),
            cursor.raw(),
            idx.raw(),
            vals.raw(),
            perm.raw(),
        ];
        if let Some(seg) = &seg {
            bindings.push(Binding::Read);
            buffers.push(seg.raw());
            if with_cols {
                bindings.push(Binding::ReadWrite);
                buffers.push(cols.raw());
            }
        }
        let kernel = gpu.kernel(&KernelSpec {
            name: "sddmm/tile_place",
            defines: self.defines.clone(),
            constants: vec![("WG", WG as f64)],
            bindings: &bindings,
        })?;
        let bg = kernel.bind(gpu, &buffers)?;
        let mut batch = Batch::new(gpu);
        batch.dispatch(&kernel, bg, self.groups()?)?;
        batch.submit()?;
        Ok(Placed {
            idx,
            vals,
            perm,
            cols,
        })
    }
}

/// The per-nonzero arrays a place pass writes, in tiling order.
struct Placed {
    idx: GpuBuffer<u32>,
    vals: GpuBuffer<f32>,
    perm: GpuBuffer<u32>,
    /// Global columns (uncompressed panels only; else empty).
    cols: GpuBuffer<u32>,
}

/// The SM-L2 tiling of `s` (of Sᵀ when `config.transposed`) built on the GPU, identical to
/// [`tiles::panels`] up to the order of nonzeros within one active row of one panel. `None`
/// when it would not pay (more buckets than about one per nonzero): build on the host.
pub(crate) fn panels(gpu: &Gpu, s: &Csr, config: &Config) -> Result<Option<PanelArrays>> {
    let (rows, cols) = config.oriented_shape(s.nrows, s.ncols);
    let tj = config.tj;
    let n_panels = cols.div_ceil(tj).max(1);
    let keys = n_panels * rows;
    if !keys_pay_off(keys, s.nnz(), gpu) {
        return Ok(None);
    }
    let mut defines = vec!["PANELS"];
    if config.compress {
        defines.push("COMPRESS");
    }
    let params = TileParams {
        nnz: s.nnz() as u32,
        transposed: config.transposed as u32,
        rows: rows as u32,
        col_tiles: n_panels as u32,
        tj: tj as u32,
        ti: config.ti as u32,
        pad: [0; 2],
    };
    let builder = Builder::new(gpu, s, params, defines)?;
    let counts = builder.count(keys)?;
    // Every bucket's first position, then the total.
    let starts = offsets(&counts);
    // Blocks panel by panel from the buckets' counts, as the host tiling cuts them.
    let mut out = (Vec::new(), Vec::new());
    let mut seg = vec![[0u32; 2]; keys];
    for p in 0..n_panels {
        let span = p * rows..(p + 1) * rows;
        let live: Vec<usize> = span.filter(|&key| counts[key] > 0).collect();
        let Some(&first) = live.first() else { continue };
        let segments: Vec<(u32, usize)> = live
            .iter()
            .map(|&key| ((key - p * rows) as u32, counts[key] as usize))
            .collect();
        let pieces = tiles::block_segments(
            (p * tj) as u32,
            starts[first] as usize,
            &segments,
            config.ti,
            config.block_nnz,
            &mut out,
        );
        for (&key, piece) in live.iter().zip(pieces) {
            seg[key] = [piece.end, piece.local];
        }
    }
    let (blocks, active_rows) = out;
    let placed = builder.place(&starts[..keys], Some(&seg), !config.compress)?;
    Ok(Some(PanelArrays {
        n_blocks: blocks.len() as u32,
        blocks: GpuBuffer::upload(gpu, "sddmm.blocks", &blocks)?,
        active_rows: GpuBuffer::upload(gpu, "sddmm.active_rows", &active_rows)?,
        idx: placed.idx,
        cols: placed.cols,
        vals: placed.vals,
        perm: placed.perm,
    }))
}

/// The SM-SM tiling of `s` (of Sᵀ when `config.transposed`) built on the GPU, identical to
/// [`tiles::tiles`] up to the order of nonzeros within one tile. `None` when it would not
/// pay: build on the host.
pub(crate) fn tiles(gpu: &Gpu, s: &Csr, config: &Config) -> Result<Option<TileArrays>> {
    let (rows, cols) = config.oriented_shape(s.nrows, s.ncols);
    let (ti, tj) = (config.ti, config.tj);
    let col_tiles = cols.div_ceil(tj).max(1);
    let keys = rows.div_ceil(ti) * col_tiles;
    if !keys_pay_off(keys, s.nnz(), gpu) {
        return Ok(None);
    }
    let params = TileParams {
        nnz: s.nnz() as u32,
        transposed: config.transposed as u32,
        rows: rows as u32,
        col_tiles: col_tiles as u32,
        tj: tj as u32,
        ti: ti as u32,
        pad: [0; 2],
    };
    let builder = Builder::new(gpu, s, params, vec![])?;
    let counts = builder.count(keys)?;
    // Every bucket's first position, then the total.
    let starts = offsets(&counts);
    // One block per non-empty tile, row panel by row panel, as the host tiling orders them.
    let blocks: Vec<[u32; 4]> = (0..keys)
        .filter(|&key| counts[key] > 0)
        .map(|key| {
            let (panel, tile) = (key / col_tiles, key % col_tiles);
            [
                (panel * ti) as u32,
                (tile * tj) as u32,
                starts[key],
                starts[key + 1],
            ]
        })
        .collect();
    let placed = builder.place(&starts[..keys], None, false)?;
    Ok(Some(TileArrays {
        n_blocks: blocks.len() as u32,
        blocks: GpuBuffer::upload(gpu, "sddmm.blocks", &blocks)?,
        idx: placed.idx,
        vals: placed.vals,
        perm: placed.perm,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gen;
    use crate::sddmm::{config, Options, Transpose, Variant};

    /// One nonzero as a tiling places it: (CSR index, row, column, value bits) of S.
    type Entry = (u32, u32, u32, u32);

    fn gpu() -> &'static Gpu {
        static GPU: std::sync::OnceLock<Gpu> = std::sync::OnceLock::new();
        GPU.get_or_init(|| Gpu::new().unwrap_or_else(|e| panic!("{e}")))
    }

    /// S with a dense row and a dense column on a power-law rest (with empty rows and
    /// columns): heavy active rows to split, empty buckets to skip.
    fn skewed() -> Csr {
        let base = gen::power_law(700, 520, 9_000, 1.1, 3).unwrap();
        let mut coo = base.to_coo();
        for c in 0..520 {
            coo.rows.push(17);
            coo.cols.push(c);
            coo.values.push(0.5);
        }
        for r in 0..700 {
            coo.rows.push(r);
            coo.cols.push(301);
            coo.values.push(1.5);
        }
        let mut s = coo.to_csr();
        // Distinct values, so a misplaced value cannot go unnoticed.
        for (e, v) in s.values.iter_mut().enumerate() {
            *v = 0.25 + (e % 1013) as f32;
        }
        s
    }

    fn config_for(s: &Csr, options: Options) -> Config {
        config::resolve(gpu(), s, 32, &options).unwrap()
    }

    /// Every position of a panel tiling decoded back to S, sorted by CSR index.
    fn decode_panels(t: &tiles::PanelTiling, compress: bool, transposed: bool) -> Vec<Entry> {
        let mut out = Vec::new();
        for b in &t.blocks {
            for d in b[2] as usize..b[3] as usize {
                let local = if compress { t.idx[d] >> 16 } else { t.idx[d] };
                assert!(local < b[1], "local row {local} outside its block {b:?}");
                let row = t.active_rows[(b[0] + local) as usize];
                let col = if compress {
                    b[4] + (t.idx[d] & 0xffff)
                } else {
                    t.cols[d]
                };
                let (r, c) = if transposed { (col, row) } else { (row, col) };
                out.push((t.perm[d], r, c, t.vals[d].to_bits()));
            }
        }
        out.sort_unstable();
        out
    }

    /// A device-built panel tiling read back.
    fn read_back(dev: &PanelArrays, n_panels: usize) -> tiles::PanelTiling {
        let g = gpu();
        tiles::PanelTiling {
            blocks: dev.blocks.read(g).unwrap(),
            active_rows: dev.active_rows.read(g).unwrap(),
            idx: dev.idx.read(g).unwrap(),
            cols: dev.cols.read(g).unwrap(),
            vals: dev.vals.read(g).unwrap(),
            perm: dev.perm.read(g).unwrap(),
            n_panels,
        }
    }

    #[test]
    fn panels_built_on_the_device_match_the_host_tiling() {
        let s = skewed();
        for transpose in [Transpose::Never, Transpose::Always] {
            for compress in [true, false] {
                // Panels that do not divide N; blocks small enough to split heavy rows.
                for (tj, ti, block_nnz) in [(96, 8, 40), (1000, 3, 7), (250, 64, 4096)] {
                    let c = config_for(
                        &s,
                        Options {
                            variant: Variant::SmL2,
                            tj: Some(tj),
                            ti: Some(ti),
                            block_nnz: Some(block_nnz),
                            compress,
                            transpose,
                            ..Default::default()
                        },
                    );
                    let what = format!("{transpose:?} compress={compress} tj={tj} ti={ti}");
                    let (st, map) = if c.transposed {
                        let (t, m) = s.transpose_with_map();
                        (t, Some(m))
                    } else {
                        (s.clone(), None)
                    };
                    let host = tiles::panels(&st, map.as_deref(), tj, ti, block_nnz, compress);
                    let dev = panels(gpu(), &s, &c).unwrap().expect("pays off");
                    let dev = read_back(&dev, host.n_panels);
                    assert_eq!(dev.blocks, host.blocks, "{what}");
                    assert_eq!(dev.active_rows, host.active_rows, "{what}");
                    let placed = decode_panels(&dev, compress, c.transposed);
                    let expected = decode_panels(&host, compress, c.transposed);
                    assert_eq!(placed.len(), s.nnz(), "{what}");
                    assert_eq!(placed, expected, "{what}");
                    // And the host tiling itself places every nonzero of S where it is.
                    for &(e, r, col, v) in &expected {
                        let e = e as usize;
                        assert!(s.row_range(r as usize).contains(&e), "{what}");
                        assert_eq!((s.col_idx[e], s.values[e].to_bits()), (col, v), "{what}");
                    }
                }
            }
        }
    }

    #[test]
    fn tiles_built_on_the_device_match_the_host_tiling() {
        let s = skewed();
        for transpose in [Transpose::Never, Transpose::Always] {
            for (ti, tj) in [(16, 16), (7, 33), (128, 64)] {
                let c = config_for(
                    &s,
                    Options {
                        variant: Variant::SmSm,
                        ti: Some(ti),
                        tj: Some(tj),
                        transpose,
                        ..Default::default()
                    },
                );
                let what = format!("{transpose:?} ti={ti} tj={tj}");
                let (st, map) = if c.transposed {
                    let (t, m) = s.transpose_with_map();
                    (t, Some(m))
                } else {
                    (s.clone(), None)
                };
                let host = tiles::tiles(&st, map.as_deref(), ti, tj);
                let dev = tiles(gpu(), &s, &c).unwrap().expect("pays off");
                let g = gpu();
                let blocks = dev.blocks.read(g).unwrap();
                assert_eq!(blocks, host.blocks, "{what}");
                let decode = |idx: &[u32], vals: &[f32], perm: &[u32]| {
                    let mut out: Vec<Entry> = Vec::new();
                    for b in &blocks {
                        for d in b[2] as usize..b[3] as usize {
                            let (lr, lc) = (idx[d] >> 16, idx[d] & 0xffff);
                            assert!(lr < ti as u32 && lc < tj as u32, "{what}");
                            let (r, col) = (b[0] + lr, b[1] + lc);
                            let (r, col) = if c.transposed { (col, r) } else { (r, col) };
                            out.push((perm[d], r, col, vals[d].to_bits()));
                        }
                    }
                    out.sort_unstable();
                    out
                };
                let placed = decode(
                    &dev.idx.read(g).unwrap(),
                    &dev.vals.read(g).unwrap(),
                    &dev.perm.read(g).unwrap(),
                );
                assert_eq!(placed.len(), s.nnz(), "{what}");
                assert_eq!(placed, decode(&host.idx, &host.vals, &host.perm), "{what}");
            }
        }
    }

    #[test]
    fn tilings_with_more_buckets_than_nonzeros_stay_on_the_host() {
        // 1×1 panels of a 3000×3000 matrix with 10 nonzeros: 9M buckets.
        let s = gen::power_law(3000, 3000, 10, 1.1, 5).unwrap();
        let c = config_for(
            &s,
            Options {
                variant: Variant::SmL2,
                tj: Some(1),
                transpose: Transpose::Never,
                ..Default::default()
            },
        );
        assert!(panels(gpu(), &s, &c).unwrap().is_none());
    }
}
