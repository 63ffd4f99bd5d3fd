//! The dense-rows path's plan (the first fast path, fastest while a workgroup's rows fit
//! workgroup memory): W_lᵀ in column-major ELL per layer, the dense rows of each chunk
//! of inputs, and the bind groups of every layer's `spdnn.layer` → scan → `spdnn.compact`,
//! all prepared once so that [`Plan::record`] only records dispatches.

use std::ops::Range;
use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Batch, Binding, ExclusiveScan, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::sparse::Csr;
use crate::spdnn::{loops, Network, Options};
use crate::{Error, Result};

const LAYER_BINDINGS: [Binding; 8] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const COMPACT_BINDINGS: [Binding; 8] = [
    Binding::Uniform,
    Binding::Read,
    Binding::Read,
    Binding::Read,
    Binding::ReadWrite,
    Binding::Read,
    Binding::ReadWrite,
    Binding::ReadWrite,
];
const RESET_BINDINGS: [Binding; 3] = [Binding::Uniform, Binding::ReadWrite, Binding::ReadWrite];
/// Invocations per workgroup of `spdnn.reset`.
const RESET_WG: u32 = 256;
/// Most active rows per workgroup of `spdnn.layer` (`MAX_ROWS` in the shader).
const MAX_ROWS: u32 = 8;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct LayerParams {
    n: u32,
    width: u32,
    cap: u32,
    bias: f32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SizeParams {
    a: u32,
    b: u32,
    pad: [u32; 2],
}

/// One layer's W_lᵀ in ELL: slot k of output neuron j at `k · n + j` (column-major, so a
/// workgroup's neighbouring invocations read neighbouring slots); padding is column 0,
/// value 0.
struct LayerWeights {
    width: usize,
    idx: GpuBuffer<u32>,
    val: GpuBuffer<f32>,
}

impl LayerWeights {
    fn new(gpu: &Gpu, w: &Csr) -> Result<Self> {
        let n = w.ncols;
        let width = loops::max_in_degree(w);
        // Both arrays are bound whole: refused before the host builds them.
        let slots = width.saturating_mul(n).max(1);
        GpuBuffer::<u32>::check_binding(gpu, "spdnn.w_idx", slots)?;
        GpuBuffer::<f32>::check_binding(gpu, "spdnn.w_val", slots)?;
        let wt = w.transpose();
        let mut idx = vec![0u32; (width * n).max(1)];
        let mut val = vec![0f32; (width * n).max(1)];
        for j in 0..n {
            for (k, e) in wt.row_range(j).enumerate() {
                idx[k * n + j] = wt.col_idx[e];
                val[k * n + j] = wt.values[e];
            }
        }
        Ok(LayerWeights {
            width,
            idx: GpuBuffer::upload(gpu, "spdnn.w_idx", &idx)?,
            val: GpuBuffer::upload(gpu, "spdnn.w_val", &val)?,
        })
    }
}

/// The device state of one chunk of input rows.
struct Chunk {
    start: usize,
    rows: usize,
    ids: [GpuBuffer<u32>; 2],
    count: GpuBuffer<u32>,
    scan: ExclusiveScan,
    pos: GpuBuffer<u32>,
    /// The layer output (uncompacted) and the compacted next input.
    poison: [GpuBuffer<f32>; 2],
    reset: wgpu::BindGroup,
    layers: Vec<wgpu::BindGroup>,
    compacts: [wgpu::BindGroup; 2],
}

/// A prepared GPU inference of fixed inputs through a fixed network.
pub(crate) struct RowsPlan {
    n: usize,
    rows_per_workgroup: u32,
    staged: bool,
    layers: usize,
    chunks: Vec<Chunk>,
    layer: Arc<Kernel>,
    compact: Arc<Kernel>,
    reset: Arc<Kernel>,
}

/// The rows per workgroup of `spdnn.layer` under a software device's loop budget: the
/// options' when every layer's invocations fit it (or the device has no cap), else the most
/// below them that fit (fewer rows share each weight loaded; the results are the same).
/// Refused, naming N, the ELL width and the cap, when not even one row fits, or when one
/// row of `spdnn.compact` alone would not.
fn rows_under_loop_budget(
    gpu: &Gpu,
    net: &Network,
    options: &Options,
    stage_fits: impl Fn(u32) -> bool,
) -> Result<u32> {
    let want = options.rows_per_workgroup;
    let Some(budget) = crate::gpu::loop_cap::budget(gpu.caps.loop_cap) else {
        return Ok(want);
    };
    let (n, wg) = (net.n, options.workgroup_on(gpu));
    let width = net
        .layers
        .iter()
        .map(loops::max_in_degree)
        .max()
        .unwrap_or(0);
    let iterations = |rows: u32| {
        loops::layer(
            n,
            wg,
            rows,
            options.stage.unwrap_or(stage_fits(rows)),
            width,
        )
    };
    let compact = loops::compact(n, wg);
    if compact > budget {
        return Err(loops::refuse(
            &gpu.caps,
            &format!("spdnn.compact (N = {n}, workgroup {wg})"),
            compact,
        ));
    }
    (1..=want)
        .rev()
        .find(|&rows| iterations(rows) <= budget)
        .ok_or_else(|| {
            loops::refuse(
                &gpu.caps,
                &format!(
                    "spdnn.layer (dense rows; N = {n}, workgroup {wg}, ELL width {width}: the \
                     largest in-degree of a neuron, one row per workgroup)"
                ),
                iterations(1),
            )
        })
}

impl RowsPlan {
    /// Uploads the network and the inputs `y0` (`rows × n`) and prepares every dispatch.
    /// Fails on a network with no layer, inputs of another width, non-finite inputs, or
    /// sizes beyond the device's bindings (named in the error).
    pub fn new(gpu: &Gpu, net: &Network, y0: &Csr, options: &Options) -> Result<Self> {
        let n = net.n;
        if net.layers.is_empty() {
            return Err(Error::Option("a network needs at least one layer".into()));
        }
        if y0.ncols != n {
            return Err(Error::Shape(format!(
                "inputs have {} columns, the network has {n} neurons",
                y0.ncols
            )));
        }
        y0.validate()?;
        let wg = options.workgroup_on(gpu);
        if wg == 0 || wg > gpu.caps.max_invocations_per_workgroup {
            return Err(Error::Option(format!(
                "workgroup of {wg} invocations (the device allows 1..={})",
                gpu.caps.max_invocations_per_workgroup
            )));
        }
        if !(1..=MAX_ROWS).contains(&options.rows_per_workgroup) {
            return Err(Error::Option(format!(
                "{} rows per workgroup (1..={MAX_ROWS})",
                options.rows_per_workgroup
            )));
        }
        let stage_fits = |rows: u32| {
            u64::from(rows) * n as u64 * 4 + 64 <= u64::from(gpu.caps.max_workgroup_storage_bytes)
        };
        let rows_wg = rows_under_loop_budget(gpu, net, options, stage_fits)?;
        let stage_bytes = u64::from(rows_wg) * n as u64 * 4;
        let fits = stage_fits(rows_wg);
        let staged = match options.stage {
            Some(true) if !fits => {
                return Err(Error::TooLarge {
                    what: "staging the rows of spdnn.layer".into(),
                    needed: format!(
                        "{} bytes of workgroup memory ({rows_wg} rows of {n} floats and the \
                         kernel's flags)",
                        stage_bytes + 64
                    ),
                    limit: format!("{} bytes", gpu.caps.max_workgroup_storage_bytes),
                })
            }
            Some(s) => s,
            None => fits,
        };
        let kernel = |name, bindings, constants| {
            gpu.kernel(&KernelSpec {
                name,
                defines: vec![],
                constants,
                bindings,
            })
        };
        let layer = kernel(
            "spdnn/layer",
            &LAYER_BINDINGS[..],
            vec![
                ("WG", f64::from(wg)),
                ("ROWS", f64::from(rows_wg)),
                ("STAGED", if staged { 1.0 } else { 0.0 }),
                (
                    "STAGE_LEN",
                    if staged {
                        (rows_wg as usize * n) as f64
                    } else {
                        1.0
                    },
                ),
            ],
        )?;
        let compact = kernel(
            "spdnn/compact",
            &COMPACT_BINDINGS[..],
            vec![("WG", f64::from(wg))],
        )?;
        let reset = kernel(
            "spdnn/reset",
            &RESET_BINDINGS[..],
            vec![("WG", f64::from(RESET_WG))],
        )?;
        let weights = net
            .layers
            .iter()
            .map(|w| LayerWeights::new(gpu, w))
            .collect::<Result<Vec<_>>>()?;
        let row_bytes = (n * 4) as u64;
        let fit = (gpu.caps.max_storage_binding_bytes / row_bytes) as usize;
        if fit == 0 {
            return Err(Error::TooLarge {
                what: "one dense row of activations".into(),
                needed: format!("{row_bytes} bytes"),
                limit: format!("{} bytes per binding", gpu.caps.max_storage_binding_bytes),
            });
        }
        let per = options.chunk_rows.unwrap_or(usize::MAX).min(fit).max(1);
        let mut chunks = Vec::new();
        let mut start = 0;
        while start < y0.nrows {
            let rows = per.min(y0.nrows - start);
            chunks.push(Chunk::new(
                gpu, net, y0, start, rows, &weights, &layer, &compact, &reset,
            )?);
            start += rows;
        }
        Ok(RowsPlan {
            n,
            rows_per_workgroup: rows_wg,
            staged,
            layers: net.layers.len(),
            chunks,
            layer,
            compact,
            reset,
        })
    }

    /// Number of chunks the input rows were split into.
    pub fn chunks(&self) -> usize {
        self.chunks.len()
    }

    /// Whether `spdnn.layer` stages its rows in workgroup memory.
    pub fn staged(&self) -> bool {
        self.staged
    }

    /// Fills the activation buffers with NaN, so an element no kernel wrote shows.
    pub fn poison(&self, gpu: &Gpu) -> Result<()> {
        for c in &self.chunks {
            for b in &c.poison {
                b.fill(gpu, f32::NAN)?;
            }
        }
        Ok(())
    }

    /// Records layers `layers` (a range of 0..L) of every chunk; layer 0 starts with a reset.
    pub fn record_layers(&self, batch: &mut Batch, layers: Range<usize>) -> Result<()> {
        let gpu = batch.gpu();
        for c in &self.chunks {
            let cap = c.rows as u32;
            for l in layers.clone() {
                if l == 0 {
                    batch.dispatch(
                        &self.reset,
                        c.reset.clone(),
                        gpu.grid(cap.div_ceil(RESET_WG))?,
                    )?;
                }
                let bg = &c.layers[l];
                let groups = cap.div_ceil(self.rows_per_workgroup);
                batch.dispatch(&self.layer, bg.clone(), gpu.grid(groups)?)?;
                c.scan.record(batch, &c.pos)?;
                batch.dispatch(&self.compact, c.compacts[l % 2].clone(), gpu.grid(cap)?)?;
            }
        }
        Ok(())
    }

    /// Bytes of the activation buffers (inputs, layer output, compacted next input).
    pub fn peak_bytes(&self) -> u64 {
        self.chunks
            .iter()
            .map(|c| 3 * (c.rows * self.n * 4) as u64)
            .sum()
    }

    fn finals(&self, gpu: &Gpu, c: &Chunk) -> Result<Vec<u32>> {
        let ids = &c.ids[self.layers % 2];
        super::survivors::read_ids(gpu, &c.count, ids, c.rows, "spdnn.compact")
    }

    /// The categories of the last run: rows with a nonzero sum after the last layer, 0-based,
    /// increasing. Reads one count and the surviving row ids of each chunk.
    pub fn categories(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        super::survivors::categories(
            self.chunks
                .iter()
                .map(|c| Ok((c.start, self.finals(gpu, c)?))),
        )
    }

    /// The final activations of the last run, `rows × n` row-major (rows that died are 0).
    pub fn output(&self, gpu: &Gpu) -> Result<Vec<f32>> {
        let n = self.n;
        let rows: usize = self.chunks.iter().map(|c| c.rows).sum();
        let mut out = vec![0f32; rows * n];
        for c in &self.chunks {
            let ids = self.finals(gpu, c)?;
            let y = c.poison[1].read(gpu)?;
            for (s, &id) in ids.iter().enumerate() {
                let r = c.start + id as usize;
                out[r * n..(r + 1) * n].copy_from_slice(&y[s * n..(s + 1) * n]);
            }
        }
        Ok(out)
    }
}

impl Chunk {
    #[allow(clippy::too_many_arguments)]
    fn new(
        gpu: &Gpu,
        net: &Network,
        y0: &Csr,
        start: usize,
        rows: usize,
        weights: &[LayerWeights],
        layer: &Kernel,
        compact: &Kernel,
        reset: &Kernel,
    ) -> Result<Self> {
        let n = net.n;
        let mut dense = vec![0f32; rows * n];
        for r in 0..rows {
            for e in y0.row_range(start + r) {
                dense[r * n + y0.col_idx[e] as usize] = y0.values[e];
            }
        }
        let input = GpuBuffer::upload(gpu, "spdnn.y0", &dense)?;
        drop(dense);
        let out = GpuBuffer::<f32>::zeroed(gpu, "spdnn.y_out", rows * n)?;
        let next = GpuBuffer::<f32>::zeroed(gpu, "spdnn.y_next", rows * n)?;
        let flags = GpuBuffer::<u32>::zeroed(gpu, "spdnn.flags", rows)?;
        let pos = GpuBuffer::<u32>::zeroed(gpu, "spdnn.pos", rows)?;
        let ids = [
            GpuBuffer::<u32>::zeroed(gpu, "spdnn.ids", rows)?,
            GpuBuffer::<u32>::zeroed(gpu, "spdnn.ids", rows)?,
        ];
        let count = GpuBuffer::<u32>::zeroed(gpu, "spdnn.count", 1)?;
        let cap = rows as u32;
        let reset_params = gpu.uniform(
            "spdnn.reset.params",
            &SizeParams {
                a: cap,
                b: 0,
                pad: [0; 2],
            },
        );
        let reset_bg = reset.bind(gpu, &[&reset_params, ids[0].raw(), count.raw()])?;
        let mut layers = Vec::with_capacity(weights.len());
        for (l, w) in weights.iter().enumerate() {
            let params = gpu.uniform(
                "spdnn.layer.params",
                &LayerParams {
                    n: n as u32,
                    width: w.width as u32,
                    cap,
                    bias: net.bias,
                },
            );
            let y_in = if l == 0 { &input } else { &next };
            layers.push(layer.bind(
                gpu,
                &[
                    &params,
                    count.raw(),
                    w.idx.raw(),
                    w.val.raw(),
                    y_in.raw(),
                    out.raw(),
                    flags.raw(),
                    pos.raw(),
                ],
            )?);
        }
        let compact_params = gpu.uniform(
            "spdnn.compact.params",
            &SizeParams {
                a: n as u32,
                b: cap,
                pad: [0; 2],
            },
        );
        let compact_bg = |from: usize| {
            compact.bind(
                gpu,
                &[
                    &compact_params,
                    flags.raw(),
                    pos.raw(),
                    out.raw(),
                    next.raw(),
                    ids[from].raw(),
                    ids[1 - from].raw(),
                    count.raw(),
                ],
            )
        };
        let compacts = [compact_bg(0)?, compact_bg(1)?];
        Ok(Chunk {
            start,
            rows,
            ids,
            count,
            scan: ExclusiveScan::new(gpu, rows)?,
            pos,
            poison: [out, next],
            reset: reset_bg,
            layers,
            compacts,
        })
    }
}
