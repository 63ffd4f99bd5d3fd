//! Resolving a configuration from the launch model, uploading X, and recording the
//! dispatches of each variant.

use bytemuck::{Pod, Zeroable};

use crate::fused::plan::{self, Residency, TL_MAX};
use crate::fused::{Atomics, Config, DeviceX, Matrix, Op, Options, Plan, Variant};
use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::sparse::GpuDense;
use crate::{Error, Result};

use Binding::{Read, ReadWrite, Uniform};

const SPARSE_BINDINGS: [Binding; 7] = [Uniform, Read, Read, Read, Read, Read, ReadWrite];
const DENSE_BINDINGS: [Binding; 5] = [Uniform, Read, Read, Read, ReadWrite];
const SPMV_BINDINGS: [Binding; 6] = [Uniform, Read, Read, Read, Read, ReadWrite];
const VECTOR3_BINDINGS: [Binding; 4] = [Uniform, Read, Read, ReadWrite];
const SCALE_BINDINGS: [Binding; 3] = [Uniform, Read, ReadWrite];
const LOGISTIC_BINDINGS: [Binding; 9] = [
    Uniform, Read, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
];
/// Workgroup size of the element-wise kernels.
const VECTOR_WG: u32 = 256;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct SparseParams {
    m: u32,
    n: u32,
    c: u32,
    flags: u32,
    alpha: f32,
    pad: [u32; 3],
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

fn option_err(msg: String) -> Error {
    Error::Option(msg)
}

fn pow2_in(what: &str, v: u32, lo: u32, hi: u32) -> Result<u32> {
    if v.is_power_of_two() && (lo..=hi).contains(&v) {
        Ok(v)
    } else {
        Err(option_err(format!(
            "{what} = {v}: must be a power of two in {lo}..={hi}"
        )))
    }
}

/// The configuration for `x` under `options`: the launch model fills what they leave open.
pub(crate) fn resolve(gpu: &Gpu, x: Matrix, options: &Options) -> Result<Config> {
    let caps = &gpu.caps;
    let (m, n) = x.shape();
    let dense = matches!(x, Matrix::Dense(_));
    let variant = match options.variant {
        Variant::Auto => Variant::Fused,
        v => v,
    };
    let native_atomics = match options.atomics {
        Atomics::Auto => caps.f32_atomics,
        Atomics::Cas => false,
        Atomics::Native if caps.f32_atomics => true,
        Atomics::Native => {
            return Err(Error::Unsupported(format!(
                "native f32 atomics (SHADER_FLOAT32_ATOMIC) on {}",
                caps.adapter_name
            )))
        }
    };
    let max_wg = caps.max_invocations_per_workgroup.min(1024);
    let wg_mem = caps.max_workgroup_storage_bytes;
    let r = Residency::of(caps);
    let scratch = |vs: u32, wg: u32| {
        if options.subgroups && caps.shuffle_fits(vs) {
            0
        } else {
            4 * wg
        }
    };
    let w_bytes = 4 * n.max(1) as u64;
    if dense {
        let bs = pow2_in(
            "workgroup size",
            options
                .workgroup
                .unwrap_or(if n <= 32 { 1024 } else { 128 })
                .min(max_wg),
            32,
            max_wg,
        )?;
        let (tl, vs) = match (options.vs, options.tl) {
            (None, None) => plan::dense_tl_vs(n, bs, max_wg).ok_or_else(|| {
                Error::Unsupported(format!(
                    "dense fused kernel with n = {n}: a row needs more than {max_wg} lanes × \
                     {TL_MAX} elements"
                ))
            })?,
            (vs, tl) => {
                let vs = pow2_in("vs", vs.unwrap_or(32), 1, max_wg)?;
                let tl = tl.unwrap_or(n.div_ceil(vs as usize).max(1) as u32);
                (tl, vs)
            }
        };
        if tl == 0 || tl > TL_MAX || (vs as usize) * (tl as usize) < n {
            return Err(option_err(format!(
                "dense tl = {tl}, vs = {vs}: need 1 ≤ tl ≤ {TL_MAX} and vs·tl ≥ n = {n}"
            )));
        }
        let wg = bs.max(vs);
        let shuffle = options.subgroups && caps.shuffle_fits(vs);
        // A vector of whole subgroups of one fixed size (NVIDIA: 32).
        let sg = caps.subgroup_min_size;
        let wide = options.subgroups
            && caps.subgroups
            && !shuffle
            && sg == caps.subgroup_max_size
            && vs > sg
            && vs.is_multiple_of(sg);
        let shared = w_bytes + scratch(vs, wg) as u64;
        if shared > wg_mem as u64 {
            return Err(Error::TooLarge {
                what: format!("dense fused kernel's workgroup copy of w (n = {n})"),
                needed: format!("{shared} bytes of workgroup memory"),
                limit: format!("{wg_mem} bytes on {}", caps.adapter_name),
            });
        }
        let rows = dense_band_rows(gpu, n).min(m);
        let (c, groups) = grid(options, rows, wg / vs, &r, wg, shared as u32, caps)?;
        return Ok(Config {
            variant,
            dense,
            vs,
            workgroup: wg,
            rows_per_vector: c,
            groups,
            tl,
            workgroup_w: true,
            native_atomics,
            subgroup_reduce: shuffle || wide,
            subgroup_wide: wide,
        });
    }
    let nnz = x.nnz();
    let mu = if m == 0 { 0.0 } else { nnz as f64 / m as f64 };
    let vs = pow2_in("vs", options.vs.unwrap_or(plan::sparse_vs(mu)), 1, 32)?;
    let fits = |wg: u32| w_bytes + scratch(vs, wg) as u64 <= wg_mem as u64;
    let shared_of = |on: bool, wg: u32| {
        if on {
            w_bytes as u32 + scratch(vs, wg)
        } else {
            scratch(vs, wg)
        }
    };
    let pick_wg = |on: bool| match options.workgroup {
        Some(wg) => pow2_in("workgroup size", wg, vs.max(32), max_wg),
        // Two-pass vectors take turns scattering (a barrier each): at most 8 per workgroup.
        None if variant == Variant::TwoPass => Ok((8 * vs).clamp(32, max_wg)),
        None => Ok(plan::best_workgroup(&r, max_wg, |wg| shared_of(on, wg)).max(vs)),
    };
    let wants_w = match (variant, options.workgroup_w) {
        (Variant::Unfused, _) => false,
        (Variant::TwoPass, Some(false)) => {
            return Err(option_err(
                "the two-pass variant aggregates w in workgroup memory".into(),
            ))
        }
        (Variant::TwoPass, _) => true,
        (_, Some(on)) => on,
        (_, None) => fits(pick_wg(true)?),
    };
    let wg = pick_wg(wants_w)?;
    if wants_w && !fits(wg) {
        return Err(Error::TooLarge {
            what: format!("a workgroup copy of w (n = {n})"),
            needed: format!("{} bytes of workgroup memory", shared_of(true, wg)),
            limit: format!(
                "{wg_mem} bytes on {} (the fused variant adds to global memory instead)",
                caps.adapter_name
            ),
        });
    }
    let (c, groups) = grid(options, m, wg / vs, &r, wg, shared_of(wants_w, wg), caps)?;
    Ok(Config {
        variant,
        dense,
        vs,
        workgroup: wg,
        rows_per_vector: c,
        groups,
        tl: 1,
        workgroup_w: wants_w,
        native_atomics,
        subgroup_reduce: options.subgroups && caps.shuffle_fits(vs),
        subgroup_wide: false,
    })
}

/// Eq. 5 (or the caller's C) and the number of workgroups.
fn grid(
    options: &Options,
    m: usize,
    nv: u32,
    r: &Residency,
    wg: u32,
    shared: u32,
    caps: &crate::Caps,
) -> Result<(u32, u32)> {
    let max_groups = caps.max_workgroups_per_dimension;
    match options.rows_per_vector {
        None => {
            let resident = r.units.saturating_mul(r.groups_resident(wg, shared));
            Ok(plan::rows_per_vector(m, nv, resident, max_groups))
        }
        Some(0) => Err(option_err("rows per vector must be at least 1".into())),
        Some(c) => {
            let groups = m.div_ceil(c as usize * nv as usize).max(1);
            if groups > max_groups as usize {
                return Err(option_err(format!(
                    "{c} rows per vector over {m} rows needs {groups} workgroups, more than \
                     {max_groups}"
                )));
            }
            Ok((c, groups as u32))
        }
    }
}

/// Rows of a dense band: as many as fit one storage binding, a multiple of 8 (so every band
/// starts at a 256-byte aligned offset; rows are a multiple of 8 floats).
fn dense_band_rows(gpu: &Gpu, n: usize) -> usize {
    let row_bytes = GpuDense::stride_for(n) as u64 * 4;
    let rows = (gpu.caps.max_storage_binding_bytes / row_bytes) as usize;
    (rows / 8 * 8).max(8)
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

fn whole(b: &GpuBuffer<f32>) -> wgpu::BufferBinding<'_> {
    b.raw().as_entire_buffer_binding()
}

fn elementwise_groups(n: usize) -> u32 {
    (n.div_ceil(VECTOR_WG as usize) as u32).clamp(1, 65_535)
}

/// Records w = a·x + b·z (`fused.axpy`; a = 0 never reads x, b = 0 never reads z).
#[allow(clippy::too_many_arguments)]
pub(crate) fn axpy(
    batch: &mut Batch,
    n: usize,
    a: f32,
    x: &GpuBuffer<f32>,
    b: f32,
    z: &GpuBuffer<f32>,
    w: &GpuBuffer<f32>,
) -> Result<()> {
    // w = a·w + b·z binds w once (a buffer may not be both read-only and writable).
    let inplace = std::ptr::eq(x, w);
    let x = if inplace { z } else { x };
    record_vector(
        batch,
        (
            "fused/axpy",
            if inplace { vec!["INPLACE"] } else { vec![] },
            &VECTOR3_BINDINGS,
        ),
        [n as u32, a.to_bits(), b.to_bits(), 0],
        &[x.raw(), z.raw(), w.raw()],
        elementwise_groups(n),
    )
}

/// Workgroups of `fused.dot` (its partials buffer holds this many).
pub(crate) const DOT_GROUPS: u32 = 64;

/// Records out[slot] = a·b (`fused.dot` partials into `part`, then `fused.reduce_parts`).
pub(crate) fn dot(
    batch: &mut Batch,
    a: &GpuBuffer<f32>,
    b: &GpuBuffer<f32>,
    part: &GpuBuffer<f32>,
    out: &GpuBuffer<f32>,
    slot: u32,
) -> Result<()> {
    record_vector(
        batch,
        ("fused/dot", vec![], &VECTOR3_BINDINGS),
        [a.len() as u32, 0, 0, 0],
        &[a.raw(), b.raw(), part.raw()],
        DOT_GROUPS,
    )?;
    reduce_parts(batch, 1, DOT_GROUPS, part, 0.0, part, out, slot)
}

fn defines(config: &Config, xty: bool, two_pass: bool, workgroup_w: bool) -> Vec<&'static str> {
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
            sparse(plan, batch, &arrays, op, cfg.workgroup_w, target)?;
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
    let ncols = if workgroup_w || two_pass {
        plan.n.max(1)
    } else {
        1
    };
    let k = gpu.kernel(&KernelSpec {
        name: "fused/sparse",
        defines: defines(cfg, op.xty, two_pass, workgroup_w),
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("VS", cfg.vs as f64),
            ("NCOLS", ncols as f64),
        ],
        bindings: &SPARSE_BINDINGS,
    })?;
    let params = gpu.uniform(
        "fused.sparse.params",
        &SparseParams {
            m: plan.m as u32,
            n: plan.n as u32,
            c: cfg.rows_per_vector,
            flags: op.v.is_some() as u32,
            alpha: op.alpha,
            pad: [0; 3],
        },
    );
    let v = op.v.unwrap_or(&plan.dummy);
    let bg = k.bind(
        gpu,
        &[
            &params,
            arrays[0],
            arrays[1],
            arrays[2],
            op.y.raw(),
            v.raw(),
            target.raw(),
        ],
    )?;
    batch.dispatch(&k, bg, [cfg.groups, 1, 1])
}

/// Records `fused.dense` once per row band.
fn dense(
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
fn dense_unfused(
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

/// Records an element-wise kernel over n (`fused.axpy`, `fused.scale`, `fused.reduce_parts`,
/// `fused.dot`) of [`VECTOR_WG`] invocations per workgroup.
fn record_vector(
    batch: &mut Batch,
    (name, defines, bindings): (&str, Vec<&str>, &[Binding]),
    params: [u32; 4],
    buffers: &[&wgpu::Buffer],
    groups: u32,
) -> Result<()> {
    let gpu = batch.gpu();
    let k = gpu.kernel(&KernelSpec {
        name,
        defines,
        constants: vec![("WG", VECTOR_WG as f64)],
        bindings,
    })?;
    let params = gpu.uniform(name, &params);
    let mut all = vec![&params];
    all.extend(buffers);
    let bg = k.bind(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}

/// Records `fused.scale`: p ⊙= v.
fn scale(batch: &mut Batch, n: usize, v: &GpuBuffer<f32>, p: &GpuBuffer<f32>) -> Result<()> {
    record_vector(
        batch,
        ("fused/scale", vec![], &SCALE_BINDINGS),
        [n as u32, 0, 0, 0],
        &[v.raw(), p.raw()],
        elementwise_groups(n),
    )
}

/// Records `fused.reduce_parts`: w[out_base + ·] = β·z + Σ_g part[g·n + ·] in group order.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_parts(
    batch: &mut Batch,
    n: usize,
    groups: u32,
    part: &GpuBuffer<f32>,
    beta: f32,
    z: &GpuBuffer<f32>,
    w: &GpuBuffer<f32>,
    out_base: u32,
) -> Result<()> {
    record_vector(
        batch,
        ("fused/reduce_parts", vec![], &VECTOR3_BINDINGS),
        [n as u32, groups, beta.to_bits(), out_base],
        &[part.raw(), z.raw(), w.raw()],
        elementwise_groups(n),
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
