//! The device state of one chunk of input rows: its activations, active-row ids,
//! constancy words and scalar-row lists, and the bind groups of every dispatch over it.

use bytemuck::{Pod, Zeroable};

use crate::gpu::{ExclusiveScan, Gpu, GpuBuffer, Kernel};
use crate::sparse::Csr;
use crate::Result;

use super::{scalar_step, LayerWeights, Tiling, STAT_WORDS};

/// `spdnn.select`'s parameters: the chunk's rows, the half of the constancy words the next
/// layer writes, and the scalar rows' advance through layer `layer`.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SelectParams {
    cap: u32,
    half: u32,
    layer: u32,
    /// 1 when the layer is uniform and follows another (scalar rows advance).
    advance: u32,
    /// The layer's one column sum, its packed weight (else 1), the bias.
    s: f32,
    weight: f32,
    bias: f32,
    /// The `stats` word counting the rows carried through the layer.
    carried: u32,
    /// The next `spdnn.sliced` grid: rows per tile, blocks of outputs, the most workgroups
    /// per dimension, and 1 when `spdnn.rejoin` follows (its rows counted too).
    tile_rows: u32,
    blocks: u32,
    max_x: u32,
    rejoin: u32,
    /// 1 when the scan's passes after the first are `spdnn.select`'s (the totals of the
    /// blocks before each slot's added there).
    deferred: u32,
    pad: [u32; 3],
}

/// `spdnn.reset`'s and `spdnn.rejoin`'s parameters: the chunk's rows, and the counter words
/// to clear (reset) or the layer (rejoin).
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SmallParams {
    cap: u32,
    x: u32,
    pad: [u32; 2],
}

/// The device state of one chunk of input rows.
pub(super) struct Chunk {
    pub(super) start: usize,
    pub(super) rows: usize,
    pub(super) ids: [GpuBuffer<u32>; 2],
    pub(super) count: GpuBuffer<u32>,
    pub(super) pos: GpuBuffer<u32>,
    pub(super) scan: ExclusiveScan,
    /// Held for the bind groups (layer 0 reads the inputs; the layers and the selection
    /// set and clear the flags; the constancy words, 4 per row, see `spdnn.sliced`).
    _input: GpuBuffer<f32>,
    _flags: GpuBuffer<u32>,
    pub(super) konst: GpuBuffer<u32>,
    /// Invocations of the reset dispatch: the rows, or the counter words the first chunk
    /// clears when more.
    pub(super) reset_items: u32,
    /// Scalar rows: the lists after even and odd layers ((id, c bits) pairs) and the three
    /// rotating counts (see `spdnn.select`); held for the bind groups.
    _scal: [GpuBuffer<u32>; 2],
    _scount: GpuBuffer<u32>,
    /// The grid of the next layer's `spdnn.sliced` (x, y, z), written by `spdnn.select`.
    pub(super) args: GpuBuffer<u32>,
    /// The two activation buffers (layer l writes `y[l % 2]`); the inputs are apart so a
    /// plan can run again.
    pub(super) y: [GpuBuffer<f32>; 2],
    pub(super) reset: wgpu::BindGroup,
    pub(super) layers: Vec<wgpu::BindGroup>,
    pub(super) selects: Vec<wgpu::BindGroup>,
    /// `spdnn.rejoin` after the layers whose [`ScalarStep::rejoin`](super::ScalarStep::rejoin).
    pub(super) rejoins: Vec<Option<wgpu::BindGroup>>,
}

impl Chunk {
    /// Rows `start .. start + rows` of `y0`; the reset clears the first `clear` words of
    /// `stats`. Kernels: sliced, select, reset, rejoin.
    pub(super) fn new(
        gpu: &Gpu,
        n: usize,
        y0: &Csr,
        (start, rows, clear): (usize, usize, usize),
        (weights, scalar_layers, tiling): (&[LayerWeights], &[bool], &Tiling),
        stats: &GpuBuffer<u32>,
        [sliced, select, reset, rejoin]: [&Kernel; 4],
    ) -> Result<Self> {
        let mut dense = vec![0f32; rows * n];
        for r in 0..rows {
            for e in y0.row_range(start + r) {
                dense[r * n + y0.col_idx[e] as usize] = y0.values[e];
            }
        }
        let input = GpuBuffer::upload(gpu, "spdnn.y0", &dense)?;
        drop(dense);
        let y = [
            GpuBuffer::<f32>::zeroed(gpu, "spdnn.y_a", rows * n)?,
            GpuBuffer::<f32>::zeroed(gpu, "spdnn.y_b", rows * n)?,
        ];
        let flags = GpuBuffer::<u32>::zeroed(gpu, "spdnn.flags", rows)?;
        let pos = GpuBuffer::<u32>::zeroed(gpu, "spdnn.pos", rows)?;
        let ids = [
            GpuBuffer::<u32>::zeroed(gpu, "spdnn.ids", rows)?,
            GpuBuffer::<u32>::zeroed(gpu, "spdnn.ids", rows)?,
        ];
        let count = GpuBuffer::<u32>::zeroed(gpu, "spdnn.count", 1)?;
        let konst = GpuBuffer::<u32>::zeroed(gpu, "spdnn.konst", 4 * rows)?;
        // One word each when no layer is uniform (the bindings only).
        let scal_len = if scalar_layers.iter().any(|&u| u) {
            2 * rows
        } else {
            1
        };
        let scal = [
            GpuBuffer::<u32>::zeroed(gpu, "spdnn.scal", scal_len)?,
            GpuBuffer::<u32>::zeroed(gpu, "spdnn.scal", scal_len)?,
        ];
        let scount = GpuBuffer::<u32>::zeroed(gpu, "spdnn.scount", 4)?;
        let args = GpuBuffer::<u32>::zeroed_indirect(gpu, "spdnn.sliced.args", 3)?;
        // The scan's first pass only: spdnn.select adds the earlier blocks' totals.
        let scan = ExclusiveScan::new(gpu, rows)?;
        let dummy = GpuBuffer::<u32>::zeroed(gpu, "spdnn.totals", 1)?;
        let deferred = scan.totals();
        let small = |x: usize| {
            gpu.uniform(
                "spdnn.small",
                &SmallParams {
                    cap: rows as u32,
                    x: x as u32,
                    pad: [0; 2],
                },
            )
        };
        let reset_bg = reset.bind(
            gpu,
            &[
                &small(clear),
                ids[0].raw(),
                count.raw(),
                konst.raw(),
                stats.raw(),
                scount.raw(),
            ],
        )?;
        let mut layers = Vec::with_capacity(weights.len());
        for (l, w) in weights.iter().enumerate() {
            let y_in = if l == 0 { &input } else { &y[(l - 1) % 2] };
            layers.push(sliced.bind(
                gpu,
                &[
                    &w.params,
                    count.raw(),
                    w.seg.raw(),
                    w.pos.raw(),
                    w.val.raw(),
                    ids[l % 2].raw(),
                    y_in.raw(),
                    y[l % 2].raw(),
                    flags.raw(),
                    pos.raw(),
                    w.csum.raw(),
                    konst.raw(),
                    stats.raw(),
                    scal[l % 2].raw(),
                    scount.raw(),
                ],
            )?);
        }
        // After layer l (ids[l % 2] → ids[1 − l % 2]) the next layer writes half 1 − l % 2;
        // scalar rows go from the list after l − 1 to the list after l (`spdnn.select`).
        let layer_count = weights.len();
        let mut selects = Vec::with_capacity(layer_count);
        let mut rejoins = Vec::with_capacity(layer_count);
        for (l, w) in weights.iter().enumerate() {
            let from = l % 2;
            let step = scalar_step(scalar_layers, l);
            let params = gpu.uniform(
                "spdnn.select",
                &SelectParams {
                    cap: rows as u32,
                    half: (1 - from) as u32,
                    layer: l as u32,
                    advance: u32::from(step.advance),
                    s: w.sum.unwrap_or(0.0),
                    weight: w.scale,
                    bias: w.bias,
                    carried: (layer_count * STAT_WORDS + l) as u32,
                    tile_rows: tiling.rows() as u32,
                    blocks: n.div_ceil(tiling.block()) as u32,
                    max_x: gpu.caps.max_workgroups_per_dimension.max(1),
                    rejoin: u32::from(step.rejoin),
                    deferred: u32::from(deferred.is_some()),
                    pad: [0; 3],
                },
            );
            selects.push(select.bind(
                gpu,
                &[
                    &params,
                    flags.raw(),
                    pos.raw(),
                    ids[from].raw(),
                    ids[1 - from].raw(),
                    count.raw(),
                    konst.raw(),
                    scal[1 - from].raw(),
                    scal[from].raw(),
                    scount.raw(),
                    stats.raw(),
                    args.raw(),
                    deferred.unwrap_or(&dummy).raw(),
                ],
            )?);
            rejoins.push(if step.rejoin {
                Some(rejoin.bind(
                    gpu,
                    &[
                        &small(l),
                        scal[from].raw(),
                        scount.raw(),
                        ids[1 - from].raw(),
                        count.raw(),
                        konst.raw(),
                    ],
                )?)
            } else {
                None
            });
        }
        Ok(Chunk {
            start,
            rows,
            ids,
            count,
            pos,
            _input: input,
            _flags: flags,
            konst,
            reset_items: rows.max(clear) as u32,
            scan,
            y,
            reset: reset_bg,
            layers,
            selects,
            rejoins,
            _scal: scal,
            _scount: scount,
            args,
        })
    }
}
