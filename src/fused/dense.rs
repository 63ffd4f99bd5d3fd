//! Recording the dense-X kernels band by band: the fused `fused.dense` and the unfused
//! sequence's `fused.gemv` and `fused.gemv_t`.

use bytemuck::{Pod, Zeroable};

use crate::fused::kernels::{defines, whole, DENSE_BINDINGS};
use crate::fused::vectors::{elementwise_groups, scale, VECTOR3_BINDINGS, VECTOR_WG};
use crate::fused::{DeviceX, Op, Plan, Variant};
use crate::gpu::{Batch, GpuBuffer, KernelSpec};
use crate::sparse::GpuDense;
use crate::Result;

/// The multiple of floats dense X's rows are stored at: 1, rows unpadded. Every dense-X kernel
/// (`fused.dense`, `fused.gemv`, `fused.gemv_t`) reads X one `f32` at a time at
/// `row·stride + col`, masking columns ≥ n, so none needs padding; padding would be memory
/// traffic (n = 28: 32-float rows, 12.5% zeros). Band starts stay aligned by rows instead
/// ([`crate::fused::config::dense_band_rows`]).
pub(crate) const X_STRIDE_MULTIPLE: usize = 1;

/// Dense X's row stride in floats for n columns.
pub(crate) fn x_stride(n: usize) -> usize {
    GpuDense::stride_for_multiple(n, X_STRIDE_MULTIPLE)
}

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct DenseParams {
    m: u32,
    n: u32,
    stride: u32,
    c: u32,
    flags: u32,
    alpha: f32,
    row_base: u32,
    part_base: u32,
}

impl Plan {
    /// Dense X as stored on the device: (row stride in floats, floats in its buffer); `None`
    /// for sparse X. Rows are unpadded: (n, m·n).
    pub fn dense_x_layout(&self) -> Option<(usize, usize)> {
        match &*self.x {
            DeviceX::Dense { stride, data, .. } => Some((*stride, data.len())),
            DeviceX::Sparse { .. } => None,
        }
    }
}

/// Records `fused.dense` once per row band.
pub(crate) fn dense(
    plan: &Plan,
    batch: &mut Batch,
    (stride, data, bands): (usize, &GpuBuffer<f32>, &[std::ops::Range<usize>]),
    op: &Op,
    target: &GpuBuffer<f32>,
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let two_pass = cfg.variant == Variant::TwoPass;
    let k = gpu.kernel(&KernelSpec {
        name: "fused/dense",
        defines: defines(cfg, op.xty, two_pass, true),
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("VS", cfg.vs as f64),
            ("TL", cfg.tl as f64),
            ("RIF", cfg.rows_in_flight as f64),
            ("NCOLS", plan.n.max(1) as f64),
        ],
        bindings: &DENSE_BINDINGS,
    })?;
    let v = op.v.unwrap_or(&plan.dummy);
    let nv = (cfg.workgroup / cfg.vs) as usize;
    for (b, rows) in bands.iter().enumerate() {
        let params = gpu.uniform(
            "fused.dense.params",
            &DenseParams {
                m: rows.len() as u32,
                n: plan.n as u32,
                stride: stride as u32,
                c: cfg.rows_per_vector,
                flags: op.v.is_some() as u32,
                alpha: op.alpha,
                row_base: rows.start as u32,
                part_base: b as u32 * cfg.groups,
            },
        );
        let x = band_binding(data, stride, rows);
        let bg = k.bind_ranges(
            gpu,
            &[
                params.as_entire_buffer_binding(),
                x,
                whole(op.y),
                whole(v),
                whole(target),
            ],
        )?;
        // Every band's workgroups are the plan's (two-pass partials are laid out so); the
        // last band may need fewer rows' worth.
        let groups = if two_pass {
            cfg.groups
        } else {
            (rows.len().div_ceil(cfg.rows_per_vector as usize * nv) as u32).clamp(1, cfg.groups)
        };
        batch.dispatch(&k, bg, [groups, 1, 1])?;
    }
    Ok(())
}

/// The storage window of a band of rows of dense X.
fn band_binding<'a>(
    data: &'a GpuBuffer<f32>,
    stride: usize,
    rows: &std::ops::Range<usize>,
) -> wgpu::BufferBinding<'a> {
    let start = (rows.start * stride * 4) as u64;
    let size = (rows.len().max(1) * stride * 4) as u64;
    wgpu::BufferBinding {
        buffer: data.raw(),
        offset: start,
        size: std::num::NonZeroU64::new(size.min(data.raw().size() - start)),
    }
}

/// Rows each `fused.gemv_t` invocation sums.
const GEMV_T_ROWS: u32 = 256;

/// Records the unfused sequence on dense X band by band: p = X·y (`fused.gemv`, or y when
/// `xty`), p ⊙= v, then w += α·Xᵀp (`fused.gemv_t`); w already holds β·z.
pub(crate) fn dense_unfused(
    plan: &Plan,
    batch: &mut Batch,
    (stride, data, bands): (usize, &GpuBuffer<f32>, &[std::ops::Range<usize>]),
    op: &Op,
    w: &GpuBuffer<f32>,
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let p = plan.scratch.as_ref().expect("unfused p");
    let n = plan.n as u32;
    if op.xty {
        batch.copy(op.y.raw(), p.raw(), plan.m as u64 * 4);
    } else {
        let k = gpu.kernel(&KernelSpec {
            name: "fused/gemv",
            defines: vec![],
            constants: vec![("WG", VECTOR_WG as f64)],
            bindings: &VECTOR3_BINDINGS,
        })?;
        for rows in bands {
            let params = gpu.uniform(
                "fused.gemv.params",
                &[rows.len() as u32, n, stride as u32, rows.start as u32],
            );
            let bg = k.bind_ranges(
                gpu,
                &[
                    params.as_entire_buffer_binding(),
                    band_binding(data, stride, rows),
                    whole(op.y),
                    whole(p),
                ],
            )?;
            batch.dispatch(&k, bg, [elementwise_groups(rows.len()), 1, 1])?;
        }
    }
    if let Some(v) = op.v {
        scale(batch, plan.m, v, p)?;
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/gemv_t",
        defines: if cfg.native_atomics {
            vec!["F32_ATOMIC"]
        } else {
            vec![]
        },
        constants: vec![("WG", VECTOR_WG as f64), ("ROWS", GEMV_T_ROWS as f64)],
        bindings: &VECTOR3_BINDINGS,
    })?;
    for rows in bands {
        let params = gpu.uniform(
            "fused.gemv_t.params",
            &[
                rows.len() as u32,
                n,
                stride as u32,
                rows.start as u32,
                op.alpha.to_bits(),
                0,
                0,
                0,
            ],
        );
        let bg = k.bind_ranges(
            gpu,
            &[
                params.as_entire_buffer_binding(),
                band_binding(data, stride, rows),
                whole(p),
                whole(w),
            ],
        )?;
        let chunks = (rows.len() as u32).div_ceil(GEMV_T_ROWS);
        batch.dispatch(&k, bg, [n.div_ceil(VECTOR_WG), chunks, 1])?;
    }
    Ok(())
}
