//! Uploading X and recording the dispatches of each variant (sparse X here; dense X in
//! [`super::dense`], the element-wise kernels in [`super::vectors`]).

use bytemuck::{Pod, Zeroable};

use crate::fused::config::dense_band_rows;
pub(crate) use crate::fused::config::resolve;
use crate::fused::dense::{dense, dense_unfused};
use crate::fused::vectors::{axpy, reduce_parts, scale};
use crate::fused::{Config, DeviceX, Matrix, Op, Plan, Variant};
use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::sparse::GpuDense;
use crate::{Error, Result};

use Binding::{Read, ReadWrite, Uniform};

const SPARSE_BINDINGS: [Binding; 7] = [Uniform, Read, Read, Read, Read, Read, ReadWrite];
/// `fused.sparse` with a hot-column cache: the slot columns come last.
const SPARSE_HOT_BINDINGS: [Binding; 8] = [Uniform, Read, Read, Read, Read, Read, ReadWrite, Read];
pub(crate) const DENSE_BINDINGS: [Binding; 5] = [Uniform, Read, Read, Read, ReadWrite];
const SPMV_BINDINGS: [Binding; 6] = [Uniform, Read, Read, Read, Read, ReadWrite];
const LOGISTIC_BINDINGS: [Binding; 9] = [
    Uniform, Read, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
];

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SparseParams {
    m: u32,
    n: u32,
    c: u32,
    flags: u32,
    alpha: f32,
    long_len: u32,
    pad: [u32; 2],
}

/// Uploads X: CSR arrays whole (each must fit one binding), dense rows padded to the stride
/// and cut into bands that each fit one binding.
pub(crate) fn upload(gpu: &Gpu, x: Matrix) -> Result<DeviceX> {
    let binding = gpu.caps.max_storage_binding_bytes;
    match x {
        Matrix::Sparse(s) => {
            let bytes = s.nnz() as u64 * 4;
            if bytes > binding {
                return Err(Error::TooLarge {
                    what: format!("X's {} values and column indices", s.nnz()),
                    needed: format!("{bytes} bytes in one storage binding each"),
                    limit: format!("{binding} bytes on {}", gpu.caps.adapter_name),
                });
            }
            Ok(DeviceX::Sparse {
                row_ptr: GpuBuffer::upload(gpu, "fused.row_ptr", &s.row_ptr)?,
                col_idx: GpuBuffer::upload(gpu, "fused.col_idx", &s.col_idx)?,
                values: GpuBuffer::upload(gpu, "fused.values", &s.values)?,
            })
        }
        Matrix::Dense(d) => {
            let gd = GpuDense::upload(gpu, d)?;
            let per = dense_band_rows(gpu, d.ncols);
            let bands = (0..d.nrows.div_ceil(per))
                .map(|b| b * per..((b + 1) * per).min(d.nrows))
                .collect();
            Ok(DeviceX::Dense {
                stride: gd.stride,
                data: gd.data,
                bands,
            })
        }
    }
}

pub(crate) fn whole(b: &GpuBuffer<f32>) -> wgpu::BufferBinding<'_> {
    b.raw().as_entire_buffer_binding()
}

pub(crate) fn defines(
    config: &Config,
    xty: bool,
    two_pass: bool,
    workgroup_w: bool,
) -> Vec<&'static str> {
    let mut d = vec![];
    if config.subgroup_wide {
        d.push("SUBGROUP_WIDE");
    } else if config.subgroup_reduce {
        d.push("SUBGROUP");
    }
    if config.native_atomics && !two_pass {
        d.push("F32_ATOMIC");
    }
    if two_pass {
        d.push("TWO_PASS");
    } else if workgroup_w {
        d.push("SHARED_W");
    }
    if xty {
        d.push("XTY");
    }
    d
}

/// Records every dispatch of the plan's variant.
pub(crate) fn record(plan: &Plan, batch: &mut Batch, op: &Op, w: &GpuBuffer<f32>) -> Result<()> {
    let cfg = &plan.config;
    let dummy = &*plan.dummy;
    let z = op.z.filter(|_| op.beta != 0.0).unwrap_or(dummy);
    let two_pass = cfg.variant == Variant::TwoPass;
    let target = match cfg.variant {
        Variant::TwoPass => plan.scratch.as_ref().expect("two-pass partials"),
        _ => w,
    };
    if !two_pass {
        axpy(batch, plan.n, 0.0, dummy, op.beta, z, w)?;
    }
    match &*plan.x {
        DeviceX::Sparse {
            row_ptr,
            col_idx,
            values,
        } => {
            let arrays = [row_ptr.raw(), col_idx.raw(), values.raw()];
            if cfg.variant == Variant::Unfused {
                let p = plan.scratch.as_ref().expect("unfused p");
                if op.xty {
                    batch.copy(op.y.raw(), p.raw(), plan.m as u64 * 4);
                } else {
                    spmv(plan, batch, &arrays, op.y, p)?;
                }
                if let Some(v) = op.v {
                    scale(batch, plan.m, v, p)?;
                }
                let scatter = Op {
                    y: p,
                    v: None,
                    xty: true,
                    ..*op
                };
                return sparse(plan, batch, &arrays, &scatter, false, w);
            }
            if !op.xty {
                long_rows(plan, batch, &arrays, op, None)?;
            }
            if cfg.variant == Variant::Sorted {
                sorted(plan, batch, row_ptr, op, w)?;
            } else {
                sparse(plan, batch, &arrays, op, cfg.workgroup_w, target)?;
            }
            long_rows(plan, batch, &arrays, op, Some(w))?;
        }
        DeviceX::Dense {
            stride,
            data,
            bands,
        } if cfg.variant == Variant::Unfused => {
            return dense_unfused(plan, batch, (*stride, data, bands), op, w)
        }
        DeviceX::Dense {
            stride,
            data,
            bands,
        } => dense(plan, batch, (*stride, data, bands), op, target)?,
    }
    if two_pass {
        let bands = match &*plan.x {
            DeviceX::Dense { bands, .. } => bands.len(),
            DeviceX::Sparse { .. } => 1,
        };
        reduce_parts(
            batch,
            plan.n,
            cfg.groups * bands as u32,
            target,
            op.beta,
            z,
            w,
            0,
        )?;
    }
    Ok(())
}

/// Records `fused.sparse` (workgroup or global aggregation, or two-pass partials).
fn sparse(
    plan: &Plan,
    batch: &mut Batch,
    arrays: &[&wgpu::Buffer; 3],
    op: &Op,
    workgroup_w: bool,
    target: &GpuBuffer<f32>,
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let two_pass = cfg.variant == Variant::TwoPass;
    // The unfused scatter (`workgroup_w` false) never takes the cache.
    let hot = plan
        .hot
        .as_ref()
        .filter(|_| cfg.variant != Variant::Unfused);
    let ncols = if workgroup_w || two_pass {
        plan.n.max(1)
    } else if hot.is_some() {
        cfg.hot_cols as usize
    } else {
        1
    };
    let mut defs = defines(cfg, op.xty, two_pass, workgroup_w);
    if hot.is_some() {
        defs.push("HOT");
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/sparse",
        defines: defs,
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("VS", cfg.vs as f64),
            ("NCOLS", ncols as f64),
        ],
        bindings: if hot.is_some() {
            &SPARSE_HOT_BINDINGS
        } else {
            &SPARSE_BINDINGS
        },
    })?;
    let params = gpu.uniform(
        "fused.sparse.params",
        &SparseParams {
            m: plan.m as u32,
            n: plan.n as u32,
            c: cfg.rows_per_vector,
            flags: op.v.is_some() as u32,
            alpha: op.alpha,
            long_len: if plan.long.is_some() {
                cfg.long_row
            } else {
                u32::MAX
            },
            pad: [0; 2],
        },
    );
    let v = op.v.unwrap_or(&plan.dummy);
    let mut all = vec![
        &params,
        arrays[0],
        arrays[1],
        arrays[2],
        op.y.raw(),
        v.raw(),
        target.raw(),
    ];
    if let Some((col_idx, cols)) = hot.map(|h| &**h) {
        all[2] = col_idx.raw();
        all.push(cols.raw());
    }
    let bg = k.bind(gpu, &all)?;
    batch.dispatch(&k, bg, [cfg.groups, 1, 1])
}

const SORTED_BINDINGS: [Binding; 8] = [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite];
const SORTED_WIDE_BINDINGS: [Binding; 9] =
    [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite, Read];

/// Records `fused.sorted`: the scatter over the plan's column-sorted tiles.
fn sorted(
    plan: &Plan,
    batch: &mut Batch,
    row_ptr: &GpuBuffer<u32>,
    op: &Op,
    w: &GpuBuffer<f32>,
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let t = plan.sorted.as_ref().expect("sorted tiles");
    if t.ntiles == 0 {
        return Ok(());
    }
    let mut defs = defines(cfg, op.xty, false, cfg.workgroup_w);
    defs.retain(|&d| d != "SUBGROUP_WIDE");
    if cfg.segmented {
        defs.push("SEGMENTED");
    }
    if t.cols.is_some() {
        defs.push("WIDE");
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/sorted",
        defines: defs,
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("VS", cfg.vs as f64),
            ("EPL", (cfg.tile / cfg.workgroup) as f64),
            ("POS_BITS", t.pos_bits as f64),
            ("TILE", cfg.tile as f64),
            (
                "NCOLS",
                if cfg.workgroup_w { plan.n.max(1) } else { 1 } as f64,
            ),
        ],
        bindings: if t.cols.is_some() {
            &SORTED_WIDE_BINDINGS
        } else {
            &SORTED_BINDINGS
        },
    })?;
    let params = gpu.uniform(
        "fused.sorted.params",
        &[
            t.ntiles,
            plan.n as u32,
            op.v.is_some() as u32,
            op.alpha.to_bits(),
        ],
    );
    let v = op.v.unwrap_or(&plan.dummy);
    let mut all = vec![
        &params,
        row_ptr.raw(),
        t.rows.raw(),
        t.keys.raw(),
        t.values.raw(),
        op.y.raw(),
        v.raw(),
        w.raw(),
    ];
    if let Some(c) = &t.cols {
        all.push(c.raw());
    }
    let bg = k.bind(gpu, &all)?;
    batch.dispatch(&k, bg, [cfg.groups.min(t.ntiles), 1, 1])
}

const LONG_DOT_BINDINGS: [Binding; 6] = [Uniform, Read, Read, Read, Read, ReadWrite];
const LONG_SCATTER_BINDINGS: [Binding; 8] =
    [Uniform, Read, Read, Read, Read, Read, Read, ReadWrite];
/// Workgroup size of the long-row kernels.
const LONG_WG: u32 = 256;

/// Records the long-row path's pre-pass (`w` None: the long rows' dot products, zeroed
/// first) or its scatter into `w` (`fused.long_rows`); nothing when the plan has no long rows.
fn long_rows(
    plan: &Plan,
    batch: &mut Batch,
    arrays: &[&wgpu::Buffer; 3],
    op: &Op,
    w: Option<&GpuBuffer<f32>>,
) -> Result<()> {
    let Some(l) = plan.long.as_ref() else {
        return Ok(());
    };
    let gpu = batch.gpu();
    let cfg = &plan.config;
    if w.is_none() {
        axpy(
            batch,
            l.dots.len(),
            0.0,
            &plan.dummy,
            0.0,
            &plan.dummy,
            &l.dots,
        )?;
    }
    let mut defs = vec![];
    if cfg.native_atomics {
        defs.push("F32_ATOMIC");
    }
    if w.is_none() {
        defs.push("DOT");
    } else if op.xty {
        defs.push("XTY");
    }
    // The scatter into a workgroup copy of w when it fits: the fewest workgroups that fill
    // the device (the largest size) take every chunk and add to global w once per column
    // each, instead of once per entry.
    let shared = w.is_some() && 4 * plan.n as u64 <= gpu.caps.max_workgroup_storage_bytes as u64;
    let mut groups = l.nchunks.min(gpu.caps.max_workgroups_per_dimension).max(1);
    let mut wg = LONG_WG;
    if shared {
        defs.push("SHARED_W");
        wg = gpu.caps.max_invocations_per_workgroup.clamp(LONG_WG, 1024);
        let r = crate::fused::plan::Residency::of(&gpu.caps);
        groups = groups.min(
            r.units
                .saturating_mul(r.groups_resident(wg, 4 * plan.n as u32)),
        );
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/long_rows",
        defines: defs,
        constants: vec![
            ("WG", wg as f64),
            ("NCOLS", if shared { plan.n.max(1) } else { 1 } as f64),
        ],
        bindings: if w.is_none() {
            &LONG_DOT_BINDINGS
        } else {
            &LONG_SCATTER_BINDINGS
        },
    })?;
    let params = gpu.uniform(
        "fused.long_rows.params",
        &[l.nchunks, op.v.is_some() as u32, op.alpha.to_bits(), 0],
    );
    let mut all = vec![&params, l.chunks.raw(), arrays[1], arrays[2], op.y.raw()];
    match w {
        None => all.push(l.dots.raw()),
        Some(w) => all.extend([op.v.unwrap_or(&plan.dummy).raw(), l.dots.raw(), w.raw()]),
    }
    let bg = k.bind(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}

/// Records a CSR row kernel (`fused.spmv`, `fused.logistic`: VS lanes per row, C rows per
/// vector, the plan's grid) binding its parameters (m, C), X's arrays, then `rest`.
fn record_rows(
    plan: &Plan,
    batch: &mut Batch,
    name: &str,
    bindings: &[Binding],
    arrays: [&wgpu::Buffer; 3],
    rest: &[&wgpu::Buffer],
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let k = gpu.kernel(&KernelSpec {
        name,
        defines: if cfg.subgroup_reduce {
            vec!["SUBGROUP"]
        } else {
            vec![]
        },
        constants: vec![("WG", cfg.workgroup as f64), ("VS", cfg.vs as f64)],
        bindings,
    })?;
    let params = gpu.uniform(name, &[plan.m as u32, cfg.rows_per_vector, 0, 0]);
    let mut all = vec![&params];
    all.extend(arrays);
    all.extend(rest);
    let bg = k.bind(gpu, &all)?;
    batch.dispatch(&k, bg, [cfg.groups, 1, 1])
}

/// Records `fused.spmv`: p = X·y.
fn spmv(
    plan: &Plan,
    batch: &mut Batch,
    arrays: &[&wgpu::Buffer; 3],
    y: &GpuBuffer<f32>,
    p: &GpuBuffer<f32>,
) -> Result<()> {
    record_rows(
        plan,
        batch,
        "fused/spmv",
        &SPMV_BINDINGS,
        *arrays,
        &[y.raw(), p.raw()],
    )
}

/// The per-row logistic terms at `w` (`fused.logistic`): loss, gradient row weights and the
/// Hessian's diagonal, each m long. Sparse X only.
pub(crate) fn logistic(
    plan: &Plan,
    batch: &mut Batch,
    w: &GpuBuffer<f32>,
    labels: &GpuBuffer<f32>,
    [loss, coef, dd]: [&GpuBuffer<f32>; 3],
) -> Result<()> {
    let DeviceX::Sparse {
        row_ptr,
        col_idx,
        values,
    } = &*plan.x
    else {
        return Err(Error::Unsupported(
            "logistic regression takes sparse X".into(),
        ));
    };
    record_rows(
        plan,
        batch,
        "fused/logistic",
        &LOGISTIC_BINDINGS,
        [row_ptr.raw(), col_idx.raw(), values.raw()],
        &[w.raw(), labels.raw(), loss.raw(), coef.raw(), dd.raw()],
    )
}
