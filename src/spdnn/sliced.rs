//! The sliced-ELL fast path (`spdnn.sliced` → scan → `spdnn.select`), the path that scales to
//! large N. Each layer's W is cut into blocks of B = WG·T output neurons and slices of S
//! input columns; the entries of one (block, slice, t) are grouped G lanes at a time, each
//! group an ELL of its own width, so a slice's staged rows serve every output of the block
//! and the gathers hit workgroup memory whatever N is. Rows are never moved: the active list
//! holds row ids, each layer writes its rows in place of the other activation buffer, and
//! the selection after each layer moves ids only (4 bytes per row, not 4·N).
//! Three dispatches per layer: `spdnn.sliced`, the scan's first pass over the flags (blocks
//! of 1,024), and `spdnn.select`, which adds the earlier blocks' totals itself and sizes the
//! next layer's grid on the device (indirect dispatch); `spdnn.rejoin` after the layers
//! where scalar rows rejoin.
//!
//! Scalar rows ([`Options::scalar_rows`]): a layer whose column sums are all one value s
//! maps a constant row c·1 to the constant row f(c·s)·1 (y·W = c·colsum(W), exact algebra).
//! A constant row whose next layer is such leaves the active list for a per-chunk list of
//! (row id, c), which `spdnn.select` advances by one scalar per row and layer; before the
//! first layer that is not uniform (and after the last) `spdnn.rejoin` puts the rows back,
//! their value in the constancy words (see `spdnn.sliced`).
//!
//! The tiling lives in [`tiling`], the kernels and their bindings in [`kernels`], the device
//! state of one chunk of rows in [`chunk`].

mod chunk;
mod kernels;
mod tiling;

use std::ops::Range;
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Batch, ExclusiveScan, Gpu, GpuBuffer, Kernel};
use crate::sparse::Csr;
use crate::spdnn::{loops, Network, Options};

use super::sliced_ell::{column_sums, uniform_value, SlicedEll};
use crate::{Error, Result};
use chunk::Chunk;
pub use tiling::{Tiling, MAX_RV, MAX_T, MAX_UNROLL};

/// Invocations per workgroup of `spdnn.select` and `spdnn.reset`.
const SMALL_WG: u32 = 256;
// A workgroup of spdnn.select covers slots of one scan block (it adds that block's offset).
const _: () = assert!(ExclusiveScan::BLOCK.is_multiple_of(SMALL_WG as usize));

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SlicedParams {
    n: u32,
    slices: u32,
    blocks: u32,
    bias: f32,
    /// The layer's one weight value when packed (unused otherwise).
    weight: f32,
    /// The layer's index (its fast-path counters).
    layer: u32,
    /// 1 when the layer may take the constant-row fast path (constant rows on, not layer 0).
    fast: u32,
    /// l mod 2: the half of the constancy words the layer writes (it reads the other).
    half: u32,
    /// The least and greatest column sum.
    cmin: f32,
    cmax: f32,
    /// 1 when every column sum is ≥ 0 (and a packed layer's weight > 0): a fast tile whose
    /// rows' outputs are each one value may leave them unwritten.
    lazy: u32,
    /// 1 when the next layer is uniform (`SlicedPlan::scalar_layers`): constant rows may leave
    /// for the scalar list.
    to_scalar: u32,
}

/// Fast-path counter words per layer: three counters (fast tiles, tiles run, fast tiles
/// that wrote nothing), each spread over 16 slots 8 words apart (`STAT_SLOTS`,
/// `STAT_STRIDE` in `spdnn.sliced`), so the workgroups' atomics do not all meet at one
/// address.
const STAT_SLOTS: usize = 16;
const STAT_STRIDE: usize = 8;
const STAT_WORDS: usize = 3 * STAT_SLOTS * STAT_STRIDE;

/// One layer's sliced ELL on the device.
struct LayerWeights {
    seg: GpuBuffer<u32>,
    pos: GpuBuffer<u32>,
    val: GpuBuffer<f32>,
    /// Column sums ([`column_sums`]); one unused word when constant rows are off.
    csum: GpuBuffer<f32>,
    params: wgpu::Buffer,
    /// The one column sum of a uniform layer with scalar rows on (`SlicedPlan::scalar_layers`).
    sum: Option<f32>,
    /// What multiplies c·s: the packed layer's weight, else 1 (as `spdnn.sliced`'s epilogue).
    scale: f32,
    /// The network's bias (for `spdnn.select`'s advance).
    bias: f32,
}

/// Where a layer stands for scalar rows: whether the rows carried advance through it,
/// whether rows may leave for the list after it, whether they all rejoin after it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct ScalarStep {
    advance: bool,
    to_scalar: bool,
    rejoin: bool,
}

/// Layer `l`'s [`ScalarStep`] from the layers' uniformity: rows leave after `l ≥ 1` when
/// layer `l + 1` exists and is uniform; rows carried after `l − 1` (whose layer `l` is then
/// uniform) advance through it, and rejoin unless layer `l + 1` is uniform too.
fn scalar_step(uniform: &[bool], l: usize) -> ScalarStep {
    let to_scalar = l >= 1 && uniform.get(l + 1).copied().unwrap_or(false);
    let advance = l >= 2 && uniform[l];
    ScalarStep {
        advance,
        to_scalar,
        rejoin: advance && !to_scalar,
    }
}

/// A prepared sliced-ELL inference of fixed inputs through a fixed network.
pub(crate) struct SlicedPlan {
    n: usize,
    tiling: Tiling,
    layers: usize,
    chunks: Vec<Chunk>,
    sliced: Arc<Kernel>,
    select: Arc<Kernel>,
    reset: Arc<Kernel>,
    rejoin: Arc<Kernel>,
    peak_bytes: u64,
    fill: f64,
    packed: bool,
    constant_rows: bool,
    /// Whether a slice's output segments run together (see [`Options::segments_together`]).
    together: bool,
    /// Per layer: its column sums are all one value and scalar rows are on.
    scalar_layers: Vec<bool>,
    /// Fast-path counters ([`STAT_WORDS`] per layer), then one word per layer counting the
    /// scalar rows carried through it; cleared by the first chunk's reset.
    stats: GpuBuffer<u32>,
}

/// Refuses layer `l` (0-based) when an invocation of `spdnn.sliced` over its sliced ELL
/// `seg` would loop past a software device's budget (a column of W with tens of thousands
/// of sources, walked by one invocation), naming the tiling, the iterations and the cap.
fn check_loop_budget(
    gpu: &Gpu,
    seg: &[u32],
    (tiling, walk): (&Tiling, (bool, bool)),
    n: usize,
    l: usize,
) -> Result<()> {
    // Devices without a loop cap: nothing to count.
    let Some(budget) = crate::gpu::loop_cap::budget(gpu.caps.loop_cap) else {
        return Ok(());
    };
    let (words, iterations) = loop_iterations(seg, (tiling, walk), n);
    if iterations <= budget {
        return Ok(());
    }
    Err(loops::refuse(
        &gpu.caps,
        &format!(
            "spdnn.sliced on layer {} (N = {n}, T = {}, RV = {}, slices of {}: {words} ELL \
             words per lane in one invocation, from the layer's heaviest columns)",
            l + 1,
            tiling.t,
            tiling.rv,
            tiling.slice
        ),
        iterations,
    ))
}

/// The ELL words per lane and the loop iterations of the busiest `spdnn.sliced` invocation,
/// with a slice's segments together (and their bounds prefetched) as `walk` says.
fn loop_iterations(seg: &[u32], (tiling, walk): (&Tiling, (bool, bool)), n: usize) -> (u64, u64) {
    let words = loops::sliced_words(seg, tiling, n, walk.0);
    (words, loops::sliced(tiling, n, words, walk))
}

impl SlicedPlan {
    /// Uploads the network in sliced ELL and the inputs, and prepares every dispatch.
    pub fn new(gpu: &Gpu, net: &Network, y0: &Csr, options: &Options) -> Result<Self> {
        let n = net.n;
        let tiling = Tiling::new(gpu, n, options)?;
        let row_bytes = (n * 4) as u64;
        // A chunk's dense rows, and its per-row constancy words (16 bytes) and scalar-row
        // list (8 bytes), each within one binding (the latter two matter for N < 4).
        let per_row = row_bytes.max(if options.constant_rows { 16 } else { 4 });
        let fit = (gpu.caps.max_storage_binding_bytes / per_row) as usize;
        if fit == 0 {
            return Err(Error::TooLarge {
                what: "one dense row of activations".into(),
                needed: format!("{row_bytes} bytes"),
                limit: format!("{} bytes per binding", gpu.caps.max_storage_binding_bytes),
            });
        }
        // Layers whose weights are all one value (the challenge's 1/16) drop the values
        // and pack two u16 positions per word; slices must then be addressable in 16 bits.
        let uniform: Vec<Option<f32>> = net.layers.iter().map(uniform_value).collect();
        let packed = options.pack_uniform
            && tiling.slice < u32::from(u16::MAX)
            && uniform.iter().all(Option::is_some);
        // Scalar rows ride on the constancy words.
        let scalar_rows = options.constant_rows && options.scalar_rows;
        let (mut slots, mut nnz) = (0usize, 0usize);
        // Laid out on every core a group of layers at a time (bounded host memory).
        let ells = net.layers.chunks(64).flat_map(|group| {
            crate::sparse::bucket::par_map(group.len(), |i| {
                SlicedEll::new(&group[i], &tiling, packed)
            })
        });
        let constant_rows = options.constant_rows;
        let mut together = options.segments_together;
        let prefetch = options.prefetch_bounds;
        // Scalar rows: the layers whose column sums are all one (finite) value.
        let sums: Vec<Option<f32>> = net
            .layers
            .iter()
            .map(|w| {
                if !scalar_rows {
                    return None;
                }
                let csum = column_sums(w, packed);
                let first = *csum.first()?;
                (first.is_finite() && csum.iter().all(|&c| c == first)).then_some(first)
            })
            .collect();
        let scalar_layers: Vec<bool> = sums.iter().map(Option::is_some).collect();
        let weights = net
            .layers
            .iter()
            .zip(&uniform)
            .zip(ells)
            .enumerate()
            .map(|(l, ((w, &value), ell))| {
                let ell = ell?;
                // Together walks each slice's T segments as long as the longest: where that
                // passes a software device's loop budget, the plan runs them one after
                // another (the same sums, never more turns, so earlier layers stay within).
                if together {
                    let over = crate::gpu::loop_cap::budget(gpu.caps.loop_cap).is_some_and(|b| {
                        loop_iterations(&ell.seg, (&tiling, (true, prefetch)), n).1 > b
                    });
                    together = !over;
                }
                let walk = (together, together && prefetch);
                check_loop_budget(gpu, &ell.seg, (&tiling, walk), n, l)?;
                slots += ell.slots;
                nnz += w.nnz();
                let csum = if constant_rows {
                    column_sums(w, packed)
                } else {
                    vec![0.0]
                };
                let cmin = csum.iter().copied().fold(f32::INFINITY, f32::min);
                let cmax = csum.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let weight = value.unwrap_or(0.0);
                let lazy = constant_rows && cmin >= 0.0 && (!packed || weight > 0.0);
                Ok(LayerWeights {
                    seg: GpuBuffer::upload(gpu, "spdnn.sliced.seg", &ell.seg)?,
                    pos: GpuBuffer::upload(gpu, "spdnn.sliced.pos", &ell.pos)?,
                    val: GpuBuffer::upload(gpu, "spdnn.sliced.val", &ell.val)?,
                    csum: GpuBuffer::upload(gpu, "spdnn.sliced.csum", &csum)?,
                    params: gpu.uniform(
                        "spdnn.sliced.params",
                        &SlicedParams {
                            n: n as u32,
                            slices: n.div_ceil(tiling.slice as usize) as u32,
                            blocks: n.div_ceil(tiling.block()) as u32,
                            bias: net.bias,
                            weight,
                            layer: l as u32,
                            fast: u32::from(constant_rows && l > 0),
                            half: (l % 2) as u32,
                            cmin,
                            cmax,
                            lazy: u32::from(lazy),
                            to_scalar: u32::from(scalar_step(&scalar_layers, l).to_scalar),
                        },
                    ),
                    sum: sums[l],
                    scale: if packed { weight } else { 1.0 },
                    bias: net.bias,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let options = &Options {
            segments_together: together,
            prefetch_bounds: together && prefetch,
            ..options.clone()
        };
        let [sliced, select, rejoin, reset] =
            kernels::build(gpu, &tiling, options, (packed, scalar_rows))?;
        let stat_words = if constant_rows {
            net.layers.len() * (STAT_WORDS + 1)
        } else {
            1
        };
        let stats = GpuBuffer::<u32>::zeroed(gpu, "spdnn.sliced.stats", stat_words)?;
        let per = options.chunk_rows.unwrap_or(usize::MAX).min(fit).max(1);
        let mut chunks = Vec::new();
        let mut start = 0;
        while start < y0.nrows {
            let rows = per.min(y0.nrows - start);
            // The first chunk's reset clears the counters of the run.
            let clear = if start == 0 && constant_rows {
                stat_words
            } else {
                0
            };
            chunks.push(Chunk::new(
                gpu,
                n,
                y0,
                (start, rows, clear),
                (&weights, &scalar_layers, &tiling),
                &stats,
                [&sliced, &select, &reset, &rejoin],
            )?);
            start += rows;
        }
        let peak_bytes = chunks.iter().map(|c| 3 * c.rows as u64 * row_bytes).sum();
        Ok(SlicedPlan {
            n,
            tiling,
            layers: net.layers.len(),
            chunks,
            sliced,
            select,
            reset,
            rejoin,
            peak_bytes,
            fill: slots as f64 / nnz.max(1) as f64,
            packed,
            constant_rows,
            together,
            scalar_layers,
            stats,
        })
    }

    /// Whether constant rows are detected and take the fast path.
    pub fn constant_rows(&self) -> bool {
        self.constant_rows
    }

    /// Whether a slice's output segments run together (asked for, and within a software
    /// device's loop budget).
    pub fn segments_together(&self) -> bool {
        self.together
    }

    /// Per layer, the tiles (workgroups of active rows × a block of outputs) of the last
    /// run that took the constant-row fast path, the tiles that ran, and the fast tiles
    /// that wrote no output (their rows' outputs each one value), over every chunk; `None`
    /// when constant rows are off. One readback.
    pub fn fast_tiles(&self, gpu: &Gpu) -> Result<Option<Vec<[u64; 3]>>> {
        if !self.constant_rows {
            return Ok(None);
        }
        let words = self.stats.read(gpu)?;
        let per_layer = words[..self.layers * STAT_WORDS]
            .chunks(STAT_WORDS)
            .map(|layer| {
                let count = |kind: usize| {
                    (0..STAT_SLOTS)
                        .map(|s| u64::from(layer[(kind * STAT_SLOTS + s) * STAT_STRIDE]))
                        .sum::<u64>()
                };
                [count(0), count(1), count(2)]
            })
            .collect();
        Ok(Some(per_layer))
    }

    /// Whether constant rows are carried as scalars through uniform layers.
    pub fn scalar_rows(&self) -> bool {
        self.scalar_layers.iter().any(|&u| u)
    }

    /// Per layer, whether its column sums are all one value (scalar rows on): the layers
    /// that scalar rows cross without a gather.
    pub fn scalar_layers(&self) -> &[bool] {
        &self.scalar_layers
    }

    /// Per layer, the rows of the last run (over every chunk) carried through it as
    /// scalars; `None` when constant rows are off. One readback.
    pub fn carried_rows(&self, gpu: &Gpu) -> Result<Option<Vec<u64>>> {
        if !self.constant_rows {
            return Ok(None);
        }
        let words = self.stats.read(gpu)?;
        Ok(Some(
            words[self.layers * STAT_WORDS..]
                .iter()
                .map(|&w| u64::from(w))
                .collect(),
        ))
    }

    /// Whether the layers' weights were dropped for their one value (positions packed).
    pub fn packed(&self) -> bool {
        self.packed
    }

    /// ELL slots per nonzero of W over all layers (1 = no padding).
    pub fn fill(&self) -> f64 {
        self.fill
    }

    pub fn tiling(&self) -> Tiling {
        self.tiling
    }

    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    pub fn peak_bytes(&self) -> u64 {
        self.peak_bytes
    }

    pub fn poison(&self, gpu: &Gpu) -> Result<()> {
        for c in &self.chunks {
            for b in &c.y {
                b.fill(gpu, f32::NAN)?;
            }
        }
        Ok(())
    }

    /// Records layers `layers` (a range of 0..L) of every chunk; layer 0 starts with a reset.
    pub fn record_layers(&self, batch: &mut Batch, layers: Range<usize>) -> Result<()> {
        let gpu = batch.gpu();
        let groups_per_block = |rows: usize| rows.div_ceil(self.tiling.rows());
        let blocks = self.n.div_ceil(self.tiling.block());
        for c in &self.chunks {
            let cap = c.rows as u32;
            let small = gpu.grid(cap.div_ceil(SMALL_WG))?;
            for l in layers.clone() {
                if l == 0 {
                    let grid = gpu.grid(c.reset_items.div_ceil(SMALL_WG))?;
                    batch.dispatch(&self.reset, c.reset.clone(), grid)?;
                }
                let groups = groups_per_block(c.rows) * blocks;
                let groups = u32::try_from(groups).map_err(|_| Error::TooLarge {
                    what: "the spdnn.sliced dispatch".into(),
                    needed: format!("{groups} workgroups"),
                    limit: "2³² workgroups".into(),
                })?;
                // Layer 0 runs every row; later layers the grid the last selection sized
                // for the active rows (the rows carried as scalars and the dead launch none;
                // never more than every row's, whose grid is checked here).
                let grid = gpu.grid(groups)?;
                if l == 0 {
                    batch.dispatch(&self.sliced, c.layers[l].clone(), grid)?;
                } else {
                    batch.dispatch_indirect(&self.sliced, c.layers[l].clone(), &c.args, 0)?;
                }
                c.scan.record_blocks(batch, &c.pos)?;
                batch.dispatch(&self.select, c.selects[l].clone(), small)?;
                if let Some(bg) = &c.rejoins[l] {
                    batch.dispatch(&self.rejoin, bg.clone(), small)?;
                }
            }
        }
        Ok(())
    }

    fn finals(&self, gpu: &Gpu, c: &Chunk) -> Result<Vec<u32>> {
        let ids = &c.ids[self.layers % 2];
        super::survivors::read_ids(gpu, &c.count, ids, c.rows, "spdnn.select")
    }

    pub fn categories(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        super::survivors::categories(
            self.chunks
                .iter()
                .map(|c| Ok((c.start, self.finals(gpu, c)?))),
        )
    }

    pub fn output(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        let n = self.n;
        let rows: usize = self.chunks.iter().map(|c| c.rows).sum();
        let mut out = vec![0f32; rows * n];
        let half = (self.layers - 1) % 2;
        for c in &self.chunks {
            let ids = self.finals(gpu, c)?;
            let y = c.y[half].read(gpu)?;
            // A row its constancy words call constant may be unwritten: its value is there.
            let konst = if self.constant_rows {
                c.konst.read(gpu)?
            } else {
                Vec::new()
            };
            for &id in &ids {
                let (r, s) = (c.start + id as usize, id as usize);
                let dst = &mut out[r * n..(r + 1) * n];
                match konst.get(4 * s + 2 * half..4 * s + 2 * half + 2) {
                    Some(&[lo, hi]) if lo == hi => dst.fill(f32::from_bits(hi)),
                    _ => dst.copy_from_slice(&y[s * n..(s + 1) * n]),
                }
            }
        }
        Ok(out)
    }
}
