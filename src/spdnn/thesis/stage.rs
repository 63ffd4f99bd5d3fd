//! The per-batch device work of the thesis's approaches: the batch buffer and its counters,
//! the four kernels, and the recording of one batch's multiply, count + scans + totals, the
//! exact-size expand of Y_out and the flush into it.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Batch, Binding, ExclusiveScan, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::spdnn::thesis::operands::{Right, Sparse};
use crate::spdnn::thesis::{Format, ThesisOptions, Tiling};
use crate::{Error, Result};

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct MulParams {
    b0: u32,
    rows: u32,
    width: u32,
    rstride: u32,
    bias: f32,
    col_tiles: u32,
    pad: [u32; 2],
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct CountParams {
    rows: u32,
    width: u32,
    cap: u32,
    pad: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct FlushParams {
    b0: u32,
    rows: u32,
    width: u32,
    rows_base: u32,
    nnz_base: u32,
    by_id: u32,
    pad: [u32; 2],
}

use Binding::{Read as R, ReadWrite as W, Uniform as U};
const MUL: [Binding; 9] = [U, R, R, R, R, R, R, R, W];
const COUNT: [Binding; 6] = [U, R, W, W, W, W];
const TOTAL: [Binding; 6] = [U, R, R, R, R, W];
const FLUSH: [Binding; 12] = [U, R, R, R, R, R, W, W, W, W, W, W];

/// The batch buffer, its per-row counters and the kernels that fill and drain it.
pub(super) struct Stage {
    /// Rows (columns for CSC·CSC) per batch.
    pub slots: usize,
    /// Output columns of a buffer row.
    pub width: usize,
    /// Invocations per left entry in the multiply kernel.
    pub lanes: u32,
    /// 1D: a row's sums in workgroup memory.
    pub wg_row: bool,
    bias: f32,
    tiling: Tiling,
    tile_rows: u32,
    tile_cols: u32,
    buf: GpuBuffer<f32>,
    /// Per row: nonzeros, their scan, non-empty flag, its scan.
    cnt: [GpuBuffer<u32>; 4],
    /// The batch's nonzeros and non-empty rows.
    pub tot: GpuBuffer<u32>,
    scan: ExclusiveScan,
    multiply: Arc<Kernel>,
    count: Arc<Kernel>,
    total: Arc<Kernel>,
    flush: Arc<Kernel>,
}

impl Stage {
    /// Compiles the kernels for `opts` and allocates a buffer of `slots` rows of `width`;
    /// `wg_row`: 1D sums in workgroup memory (the row must fit).
    pub fn new(
        gpu: &Gpu,
        opts: &ThesisOptions,
        (slots, width): (usize, usize),
        lanes: u32,
        wg_row: bool,
        bias: f32,
    ) -> Result<Self> {
        let wg = opts.workgroup;
        let mut defines = Vec::new();
        if opts.format == Format::CsrEll {
            defines.push("RIGHT_ELL");
        }
        let wg_row = wg_row && opts.tiling == Tiling::OneD;
        if opts.tiling == Tiling::TwoD {
            defines.push("TILED");
        }
        if wg_row {
            defines.push("WG_ROW");
        }
        if gpu.caps.f32_atomics {
            defines.push("F32_ATOMIC");
        }
        let (tr, tc) = (opts.tile_rows.max(1), opts.tile_cols.max(1));
        let acc_len = if wg_row { width.max(1) as u32 } else { tr * tc };
        let multiply = gpu.kernel(&KernelSpec {
            name: "spdnn/thesis_multiply",
            defines,
            constants: vec![
                ("WG", f64::from(wg)),
                ("LANES", f64::from(lanes)),
                ("TR", f64::from(tr)),
                ("TC", f64::from(tc)),
                ("STAGE", f64::from(wg)),
                ("ACC_LEN", f64::from(acc_len)),
            ],
            bindings: &MUL,
        })?;
        let simple = |name, bindings, constants| {
            gpu.kernel(&KernelSpec {
                name,
                defines: vec![],
                constants,
                bindings,
            })
        };
        let wgc = vec![("WG", f64::from(wg))];
        let z = |label| GpuBuffer::<u32>::zeroed(gpu, label, slots);
        Ok(Stage {
            slots,
            width,
            lanes,
            wg_row,
            bias,
            tiling: opts.tiling,
            tile_rows: tr,
            tile_cols: tc,
            buf: GpuBuffer::zeroed(gpu, "spdnn.thesis.buffer", slots * width)?,
            cnt: [
                z("spdnn.thesis.cnt")?,
                z("spdnn.thesis.off")?,
                z("spdnn.thesis.flag")?,
                z("spdnn.thesis.fpos")?,
            ],
            tot: GpuBuffer::zeroed(gpu, "spdnn.thesis.tot", 2)?,
            scan: ExclusiveScan::new(gpu, slots)?,
            multiply,
            count: simple("spdnn/thesis_count", &COUNT[..], wgc.clone())?,
            total: simple("spdnn/thesis_total", &TOTAL[..], vec![])?,
            flush: simple("spdnn/thesis_flush", &FLUSH[..], wgc)?,
        })
    }

    /// Bytes of the dense batch buffer.
    pub fn buffer_bytes(&self) -> u64 {
        4 * (self.slots * self.width) as u64
    }

    /// Bytes of the buffer and its per-row counters.
    pub fn bytes(&self) -> u64 {
        self.buffer_bytes() + 16 * self.slots as u64
    }

    /// Fills the buffer with NaN.
    pub fn poison(&self, gpu: &Gpu) -> Result<()> {
        self.buf.fill(gpu, f32::NAN)
    }

    /// Records the flush of the counted batch (list rows `b0..b0 + rows` of the left
    /// operand, whose ids are `ids`) into `out`, after `rows_base` list rows and `nnz_base`
    /// nonzeros; `by_id` also writes each id's range.
    #[allow(clippy::too_many_arguments)]
    pub fn record_flush(
        &self,
        gpu: &Gpu,
        batch: &mut Batch,
        ids: &GpuBuffer<u32>,
        out: &Sparse,
        (b0, rows): (usize, usize),
        (rows_base, nnz_base): (usize, usize),
        by_id: bool,
    ) -> Result<()> {
        let params = FlushParams {
            b0: b0 as u32,
            rows: rows as u32,
            width: self.width as u32,
            rows_base: rows_base as u32,
            nnz_base: nnz_base as u32,
            by_id: u32::from(by_id),
            pad: [0; 2],
        };
        let u = gpu.uniform("spdnn.thesis.flush.params", &params);
        let [cnt, off, _, fpos] = &self.cnt;
        let bg = self.flush.bind(
            gpu,
            &[
                &u,
                self.buf.raw(),
                cnt.raw(),
                off.raw(),
                fpos.raw(),
                ids.raw(),
                out.ids.raw(),
                out.ptr.raw(),
                out.col.raw(),
                out.val.raw(),
                out.beg.raw(),
                out.end.raw(),
            ],
        )?;
        batch.dispatch(&self.flush, bg, gpu.grid(rows as u32)?)
    }

    /// Records one batch's fused multiply into the buffer.
    pub fn record_multiply(
        &self,
        gpu: &Gpu,
        batch: &mut Batch,
        left: &Sparse,
        right: &RightRef,
        b0: usize,
        rows: usize,
    ) -> Result<()> {
        let tiled = self.tiling == Tiling::TwoD;
        let col_tiles = if tiled {
            self.width.div_ceil(self.tile_cols as usize).max(1)
        } else {
            1
        };
        let params = MulParams {
            b0: b0 as u32,
            rows: rows as u32,
            width: self.width as u32,
            rstride: right.stride,
            bias: self.bias,
            col_tiles: col_tiles as u32,
            pad: [0; 2],
        };
        let u = gpu.uniform("spdnn.thesis.multiply.params", &params);
        let bg = self.multiply.bind(
            gpu,
            &[
                &u,
                left.ptr.raw(),
                left.col.raw(),
                left.val.raw(),
                right.beg.raw(),
                right.end.raw(),
                right.col.raw(),
                right.val.raw(),
                self.buf.raw(),
            ],
        )?;
        let groups = if tiled {
            rows.div_ceil(self.tile_rows as usize) * col_tiles
        } else {
            rows
        };
        let groups = u32::try_from(groups).map_err(|_| Error::TooLarge {
            what: "the tiles of one batch".into(),
            needed: format!("{groups} workgroups"),
            limit: format!("{} workgroups", u32::MAX),
        })?;
        batch.dispatch(&self.multiply, bg, gpu.grid(groups)?)
    }

    /// Records the count of the buffer's nonzeros per row, the two scans and the totals.
    pub fn record_count(&self, gpu: &Gpu, batch: &mut Batch, rows: usize) -> Result<()> {
        let cap = self.slots as u32;
        let u = gpu.uniform(
            "spdnn.thesis.count.params",
            &CountParams {
                rows: rows as u32,
                width: self.width as u32,
                cap,
                pad: 0,
            },
        );
        let [cnt, off, flag, fpos] = &self.cnt;
        let bg = self.count.bind(
            gpu,
            &[
                &u,
                self.buf.raw(),
                cnt.raw(),
                off.raw(),
                flag.raw(),
                fpos.raw(),
            ],
        )?;
        batch.dispatch(&self.count, bg, gpu.grid(cap)?)?;
        self.scan.record(batch, off)?;
        self.scan.record(batch, fpos)?;
        let u = gpu.uniform(
            "spdnn.thesis.total.params",
            // spdnn.thesis_total reads the slot count first.
            &CountParams {
                rows: cap,
                width: 0,
                cap: 0,
                pad: 0,
            },
        );
        let bg = self.total.bind(
            gpu,
            &[
                &u,
                cnt.raw(),
                off.raw(),
                flag.raw(),
                fpos.raw(),
                self.tot.raw(),
            ],
        )?;
        batch.dispatch(&self.total, bg, [1, 1, 1])
    }

    /// The thesis's expand: when Y_out cannot hold `need` nonzeros, a new pair of arrays of
    /// exactly `need`, the first `keep` entries copied over (recorded before the flush);
    /// whether it grew.
    pub fn expand(
        gpu: &Gpu,
        batch: &mut Batch,
        out: &mut Sparse,
        keep: usize,
        need: usize,
        l: usize,
        poison: bool,
    ) -> Result<bool> {
        if need <= out.col.len() {
            return Ok(false);
        }
        let limit = gpu.caps.max_storage_binding_bytes;
        if 4 * need as u64 > limit {
            return Err(Error::TooLarge {
                what: format!("the sparse Y after layer {} ({need} nonzeros)", l + 1),
                needed: format!("{} bytes in one binding", 4 * need),
                limit: format!("{limit} bytes on {}", gpu.caps.adapter_name),
            });
        }
        let col = GpuBuffer::<u32>::zeroed(gpu, "spdnn.thesis.col", need)?;
        let val = if poison {
            GpuBuffer::<f32>::filled(gpu, "spdnn.thesis.val", need, f32::NAN)?
        } else {
            GpuBuffer::<f32>::zeroed(gpu, "spdnn.thesis.val", need)?
        };
        if keep > 0 {
            batch.copy(out.col.raw(), col.raw(), 4 * keep as u64);
            batch.copy(out.val.raw(), val.raw(), 4 * keep as u64);
        }
        out.col = col;
        out.val = val;
        Ok(true)
    }
}

/// The right operand as the multiply binds it.
pub(super) struct RightRef<'a> {
    beg: &'a GpuBuffer<u32>,
    end: &'a GpuBuffer<u32>,
    col: &'a GpuBuffer<u32>,
    val: &'a GpuBuffer<f32>,
    stride: u32,
}

impl<'a> RightRef<'a> {
    pub fn of(w: &'a Right) -> Self {
        RightRef {
            beg: &w.beg,
            end: &w.end,
            col: &w.col,
            val: &w.val,
            stride: w.stride,
        }
    }

    pub fn of_sparse(y: &'a Sparse) -> Self {
        RightRef {
            beg: &y.beg,
            end: &y.end,
            col: &y.col,
            val: &y.val,
            stride: 0,
        }
    }
}
