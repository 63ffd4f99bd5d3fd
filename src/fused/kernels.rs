//! Uploading X and recording the dispatches of each variant (sparse X here; dense X in
//! [`super::dense`], the element-wise kernels in [`super::vectors`]).

use bytemuck::{Pod, Zeroable};

use crate::fused::bands::{self, SparseBand};
use crate::fused::config::dense_band_rows;
pub(crate) use crate::fused::config::resolve;
use crate::fused::dense::{dense, dense_unfused, X_STRIDE_MULTIPLE};
use crate::fused::vectors::{axpy, reduce_parts, scale};
use crate::fused::{Config, DeviceX, Matrix, Op, Plan, Variant};
use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec, WG_F32_NATIVE};
use crate::sparse::GpuDense;
use crate::{Error, Result};

use Binding::{Read, ReadWrite, Uniform};

mod long_rows;
mod sorted;
mod split;
mod stream;

use long_rows::{long_rows, LongPass};
use sorted::sorted;
use split::split;
use stream::stream;

const SPARSE_BINDINGS: [Binding; 7] = [Uniform, Read, Read, Read, Read, Read, ReadWrite];
/// `fused.sparse` with a hot-column cache: the slot columns come last.
const SPARSE_HOT_BINDINGS: [Binding; 8] = [Uniform, Read, Read, Read, Read, Read, ReadWrite, Read];
/// `fused.sparse` with LONG: the hot columns (or a stand-in), the long-row chunks, their partials.
const SPARSE_LONG_BINDINGS: [Binding; 10] = [
    Uniform, Read, Read, Read, Read, Read, ReadWrite, Read, Read, Read,
];
/// `fused.sparse` with FINISH: a stand-in, the counter, z and w.
const SPARSE_FINISH_BINDINGS: [Binding; 11] = [
    Uniform, Read, Read, Read, Read, Read, ReadWrite, Read, ReadWrite, Read, ReadWrite,
];
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
    /// The band's long-row chunks taken after its rows (the folded sequence).
    nlong: u32,
    /// The band's first row (the row-indexed vectors' index of local row 0).
    row_base: u32,
    /// FINISH: β.
    beta: f32,
    pad: [u32; 3],
}

/// Uploads X: CSR entry arrays whole (one buffer each), cut into row bands whose windows fit
/// one binding ([`bands`]); dense rows unpadded ([`X_STRIDE_MULTIPLE`]) and cut into bands
/// that each fit one binding and start at an aligned offset ([`dense_band_rows`]).
pub(crate) fn upload(gpu: &Gpu, x: Matrix) -> Result<DeviceX> {
    let binding = gpu.caps.max_storage_binding_bytes;
    match x {
        Matrix::Sparse(s) => {
            // Row-indexed vectors (v, the unfused p) are bound whole by the element-wise
            // kernels, and a band's row offsets are one binding.
            GpuBuffer::<u32>::check_binding(gpu, "X's row offsets (and v ∈ ℝᵐ)", s.nrows + 1)?;
            GpuBuffer::<u32>::check_fits(gpu, "X's column indices", s.nnz())?;
            let align = gpu.caps.storage_offset_alignment.max(4) as u64;
            let cuts = bands::cut(s, binding, align)?;
            Ok(DeviceX::Sparse {
                col_idx: GpuBuffer::upload(gpu, "fused.col_idx", &s.col_idx)?,
                values: GpuBuffer::upload(gpu, "fused.values", &s.values)?,
                bands: bands::upload(gpu, s, cuts)?,
            })
        }
        Matrix::Dense(d) => {
            let per = dense_band_rows(gpu, d.ncols)?;
            let gd = GpuDense::upload_with_multiple(gpu, d, X_STRIDE_MULTIPLE)?;
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

pub(crate) fn whole<T: Pod>(b: &GpuBuffer<T>) -> wgpu::BufferBinding<'_> {
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
    // Set by the configuration only where the kernel adds into workgroup memory.
    if config.wg_native_atomics && !two_pass {
        d.push(WG_F32_NATIVE);
    }
    if two_pass {
        d.push("TWO_PASS");
    } else if workgroup_w {
        d.push("SHARED_W");
    }
    if xty {
        d.push("XTY");
    }
    d.extend(config.diag.defines());
    d
}

/// Records every dispatch of the plan's variant; `onto`: w already holds β·z (the plan
/// accumulates, [`accumulates`]), so its `fused.axpy` pre-pass is left out.
pub(crate) fn record(
    plan: &Plan,
    batch: &mut Batch,
    op: &Op,
    w: &GpuBuffer<f32>,
    onto: bool,
) -> Result<()> {
    let cfg = &plan.config;
    let dummy = &*plan.dummy;
    let z = op.z.filter(|_| op.beta != 0.0).unwrap_or(dummy);
    let two_pass = cfg.variant == Variant::TwoPass;
    let target = match (cfg.variant, &plan.finish) {
        (Variant::TwoPass, _) => plan.scratch.as_ref().expect("two-pass partials"),
        (_, Some(f)) => &f.acc,
        _ => w,
    };
    if axpy_first(plan, op.xty) && !onto {
        axpy(batch, plan.n, 0.0, dummy, op.beta, z, w)?;
    }
    if cfg.variant == Variant::Split {
        return split(plan, batch, op, w);
    }
    if let Some(t) = &plan.transpose {
        return super::transpose::record(plan, t, batch, op, w);
    }
    match &*plan.x {
        DeviceX::Sparse {
            col_idx,
            values,
            bands,
        } => {
            let arrays = (col_idx, values);
            if cfg.variant == Variant::Unfused {
                let p = plan.scratch.as_ref().expect("unfused p");
                if op.xty {
                    batch.copy(op.y.raw(), p.raw(), plan.m as u64 * 4);
                } else {
                    for (b, band) in bands.iter().enumerate() {
                        spmv(plan, batch, (b, band), arrays, op.y, p)?;
                    }
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
                for (b, band) in bands.iter().enumerate() {
                    sparse(plan, batch, (b, band), arrays, &scatter, false, (w, None))?;
                }
                return Ok(());
            }
            // Every band's long-row dot products before any band's scatter reads them.
            if !op.xty {
                for (b, band) in bands.iter().enumerate() {
                    long_rows(plan, batch, (b, band), arrays, op, LongPass::Dot { z, w })?;
                }
            }
            for (b, band) in bands.iter().enumerate() {
                if cfg.variant == Variant::Sorted {
                    sorted(plan, batch, (b, band), op, w)?;
                } else if cfg.variant == Variant::Stream {
                    // The stream copy fits one binding, so X is one band.
                    stream(plan, batch, op, w)?;
                } else {
                    let finish = finishing(plan, b, w);
                    let out = (target, finish);
                    sparse(plan, batch, (b, band), arrays, op, cfg.workgroup_w, out)?;
                }
                if !plan.long_folded() {
                    long_rows(plan, batch, (b, band), arrays, op, LongPass::Scatter(w))?;
                }
            }
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
        reduce_parts(
            batch,
            plan.n,
            cfg.groups * plan.x.partial_sets() as u32,
            target,
            op.beta,
            z,
            w,
            0,
        )?;
    }
    Ok(())
}

/// Whether `fused.axpy` initialises w = β·z first: not under two-pass (its second pass adds
/// β·z), nor when the main kernel finishes w itself (FINISH), nor when the folded long-row
/// dot pre-pass does (it has dot products to form).
fn axpy_first(plan: &Plan, xty: bool) -> bool {
    !matches!(plan.config.variant, Variant::TwoPass | Variant::Split)
        && plan.finish.is_none()
        && (xty || !plan.long_folded())
}

/// Whether the plan's kernels add onto w after a `fused.axpy` pre-pass that writes w = β·z
/// (no other dispatch reads β or z): then the pre-pass may be left to the caller.
pub(crate) fn accumulates(plan: &Plan, xty: bool) -> bool {
    axpy_first(plan, xty)
}

/// The dispatches [`record`] issues for `pattern` (the same branches, counted).
pub(crate) fn dispatches(plan: &Plan, pattern: crate::fused::Pattern) -> usize {
    let cfg = &plan.config;
    let (xty, has_v) = (pattern == crate::fused::Pattern::Xty, pattern.has_v());
    let two_pass = cfg.variant == Variant::TwoPass;
    let folded = plan.long_folded();
    let nb = plan.n_bands();
    if cfg.variant == Variant::Split {
        // The row scales (with w = β·z), then the scatter.
        return 2;
    }
    let mut count = usize::from(axpy_first(plan, xty));
    if let Some(t) = &plan.transpose {
        return count + t.dispatches(xty, has_v);
    }
    if cfg.variant == Variant::Unfused {
        // X·y per band (a copy when `xty`), ⊙v, then Xᵀp per band.
        return count + if xty { 0 } else { nb } + usize::from(has_v) + nb;
    }
    if matches!(&*plan.x, DeviceX::Dense { .. }) {
        return count + nb + usize::from(two_pass);
    }
    let chunks = |b: usize| plan.long.as_ref().map_or(0, |l| l.chunks[b].1);
    let with_chunks = (0..nb).filter(|&b| chunks(b) > 0).count();
    if plan.long.is_some() && !xty {
        // Folded: band 0's pass initialises w even without chunks; unfolded: dots zeroed first.
        count += if folded {
            (0..nb).filter(|&b| b == 0 || chunks(b) > 0).count()
        } else {
            1 + with_chunks
        };
    }
    let last = |b: usize| plan.finish.is_some() && b + 1 == nb;
    count += match &plan.sorted {
        Some(t) => (0..nb)
            .filter(|&b| t.rows[b].1 > 0 || (folded && chunks(b) > 0) || last(b))
            .count(),
        None => nb,
    };
    if plan.long.is_some() && !folded {
        count += with_chunks;
    }
    count + usize::from(two_pass)
}

/// The FINISH operands of a main-kernel dispatch: the finished-workgroup count and w.
type Finishing<'a> = (&'a GpuBuffer<u32>, &'a GpuBuffer<f32>);

/// FINISH on band `b` (the last band's dispatch, after every band added to the plan's
/// accumulator): the counter and w; `None` elsewhere.
fn finishing<'a>(plan: &'a Plan, b: usize, w: &'a GpuBuffer<f32>) -> Option<Finishing<'a>> {
    plan.finish
        .as_ref()
        .filter(|_| b + 1 == plan.n_bands())
        .map(|f| (&f.counter, w))
}

/// The FINISH bindings after the stand-in: the counter, z (the stand-in when β = 0) and w.
fn finish_bindings<'a>(
    plan: &'a Plan,
    op: &Op<'a>,
    (counter, w): Finishing<'a>,
) -> [wgpu::BufferBinding<'a>; 4] {
    let z = op.z.filter(|_| op.beta != 0.0).unwrap_or(&plan.dummy);
    [whole(&plan.dummy), whole(counter), whole(z), whole(w)]
}

/// X's entry arrays (column indices, values), bound through each band's window.
type Entries<'a> = (&'a GpuBuffer<u32>, &'a GpuBuffer<f32>);

/// Rows per vector and workgroups of a band's row kernel: the plan's grid, C cut to the band's
/// rows when X has several bands (the grid still covers them: groups · nv · C ≥ rows); on a
/// tile plan, whose grid walks tiles, a row grid of its own.
fn band_grid(plan: &Plan, band: &SparseBand, max_groups: u32) -> (u32, u32) {
    let cfg = &plan.config;
    if matches!(cfg.variant, Variant::Sorted | Variant::Stream) {
        // Their grid walks tiles, not rows: for the row kernels (the logistic pass of logistic
        // regression) one row per vector where the workgroup count allows, C rising beyond.
        let nv = (cfg.workgroup / cfg.vs.max(1)).max(1);
        return crate::fused::plan::rows_per_vector(band.rows.len(), nv, u32::MAX, max_groups);
    }
    if plan.n_bands() == 1 {
        return (cfg.rows_per_vector, cfg.groups);
    }
    let vectors = cfg.groups as usize * (cfg.workgroup / cfg.vs) as usize;
    // C ≤ the plan's: groups · nv · C_plan ≥ m ≥ the band's rows.
    (band.rows.len().div_ceil(vectors).max(1) as u32, cfg.groups)
}

/// Records `fused.sparse` on band `b` (workgroup or global aggregation, or two-pass partials).
fn sparse(
    plan: &Plan,
    batch: &mut Batch,
    (b, band): (usize, &SparseBand),
    (col_idx, values): Entries,
    op: &Op,
    workgroup_w: bool,
    (target, finish): (&GpuBuffer<f32>, Option<Finishing>),
) -> Result<()> {
    let gpu = batch.gpu();
    let cfg = &plan.config;
    let two_pass = cfg.variant == Variant::TwoPass;
    // The unfused scatter (`workgroup_w` false) never takes the cache.
    let hot = plan
        .hot
        .as_ref()
        .filter(|_| cfg.variant != Variant::Unfused);
    // Hot copies (w in workgroup memory and hot columns): one copy of the hot slots per vector.
    // Hot prefix copies: the same copies by plain index (no cache, [`Config::hot_prefix`]).
    let prefix = cfg.hot_prefix() && workgroup_w && !two_pass;
    let hot_n = match hot {
        Some(_) if workgroup_w && !two_pass => cfg.hot_cols as usize,
        None if prefix => cfg.hot_cols as usize,
        _ => 0,
    };
    let hot_r = super::config::hot_copies_of(cfg, plan.n, gpu.caps.max_workgroup_storage_bytes);
    let ncols = if two_pass {
        plan.n.max(1)
    } else if workgroup_w {
        plan.n.max(1) + hot_n * hot_r as usize
    } else if hot.is_some() {
        cfg.hot_cols as usize
    } else {
        1
    };
    let mut defs = defines(cfg, op.xty, two_pass, workgroup_w);
    if hot.is_some() {
        defs.push("HOT");
    } else if prefix {
        defs.push("HOT_PREFIX");
    }
    // The folded sequence: this band's long-row chunks after its rows.
    let long = plan
        .long
        .as_ref()
        .filter(|l| l.folded && cfg.variant == Variant::Fused);
    if long.is_some() {
        defs.push("LONG");
    }
    if finish.is_some() {
        defs.push("FINISH");
    }
    // Only `fused` plans hold entries in registers (config: 0 elsewhere).
    if cfg.regs > 0 {
        defs.push("REGS");
        if cfg.prefetch {
            defs.push("PREFETCH");
        }
    }
    let k = gpu.kernel(&KernelSpec {
        name: "fused/sparse",
        defines: defs,
        constants: vec![
            ("WG", cfg.workgroup as f64),
            ("VS", cfg.vs as f64),
            ("NCOLS", ncols as f64),
            ("HOT_N", hot_n as f64),
            ("HOT_R", hot_r as f64),
            ("RK", cfg.regs.max(1) as f64),
        ],
        bindings: if long.is_some() {
            &SPARSE_LONG_BINDINGS
        } else if finish.is_some() {
            &SPARSE_FINISH_BINDINGS
        } else if hot.is_some() {
            &SPARSE_HOT_BINDINGS
        } else {
            &SPARSE_BINDINGS
        },
    })?;
    let (c, groups) = band_grid(plan, band, gpu.caps.max_workgroups_per_dimension);
    let params = gpu.uniform(
        "fused.sparse.params",
        &SparseParams {
            m: band.rows.len() as u32,
            n: plan.n as u32,
            c,
            // Two-pass: bands after the first add to the partials (groups × n in all).
            flags: op.v.is_some() as u32 | ((b > 0) as u32) << 1,
            alpha: op.alpha,
            long_len: if plan.long.is_some() {
                cfg.long_row
            } else {
                u32::MAX
            },
            nlong: long.map_or(0, |l| l.chunks[b].1),
            row_base: band.rows.start as u32,
            beta: op.beta,
            pad: [0; 3],
        },
    );
    let mut all = vec![
        params.as_entire_buffer_binding(),
        band.row_ptr.raw().as_entire_buffer_binding(),
        bands::window(col_idx, band),
        bands::window(values, band),
        whole(op.y),
        whole(op.v.unwrap_or(&plan.dummy)),
        whole(target),
    ];
    if let Some((hot_idx, cols)) = hot.map(|h| &**h) {
        all[2] = bands::window(hot_idx, band);
        all.push(whole(cols));
    }
    if let Some(l) = long {
        if hot.is_none() {
            all.push(whole(&plan.dummy));
        }
        all.extend([whole(&l.chunks[b].0), whole(&l.dots)]);
    }
    if let Some(f) = finish {
        let [dummy, rest @ ..] = finish_bindings(plan, op, f);
        if hot.is_none() {
            all.push(dummy);
        }
        all.extend(rest);
    }
    let bg = k.bind_ranges(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}

/// Records a CSR row kernel (`fused.spmv`, `fused.logistic`: VS lanes per row, C rows per
/// vector, the plan's grid) on one band, binding its parameters (band rows, C, the band's
/// first row), the band's row offsets and windows of X's entries, y, then `rows` (row-indexed
/// vectors, indexed from the band's first row).
fn record_rows(
    plan: &Plan,
    batch: &mut Batch,
    (name, bindings): (&str, &[Binding]),
    band: &SparseBand,
    (col_idx, values): Entries,
    y: &GpuBuffer<f32>,
    rows: &[&GpuBuffer<f32>],
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
    let (c, groups) = band_grid(plan, band, gpu.caps.max_workgroups_per_dimension);
    let params = gpu.uniform(
        name,
        &[band.rows.len() as u32, c, band.rows.start as u32, 0],
    );
    let mut all = vec![
        params.as_entire_buffer_binding(),
        band.row_ptr.raw().as_entire_buffer_binding(),
        bands::window(col_idx, band),
        bands::window(values, band),
        whole(y),
    ];
    all.extend(rows.iter().map(|r| whole(r)));
    let bg = k.bind_ranges(gpu, &all)?;
    batch.dispatch(&k, bg, [groups, 1, 1])
}

/// Records `fused.spmv` on one band: p = X·y.
fn spmv(
    plan: &Plan,
    batch: &mut Batch,
    (_, band): (usize, &SparseBand),
    entries: Entries,
    y: &GpuBuffer<f32>,
    p: &GpuBuffer<f32>,
) -> Result<()> {
    let spec = ("fused/spmv", &SPMV_BINDINGS[..]);
    record_rows(plan, batch, spec, band, entries, y, &[p])
}

/// The per-row logistic terms at `w` (`fused.logistic`): loss, gradient row weights and the
/// Hessian's diagonal, each m long. Sparse X only (band by band).
pub(crate) fn logistic(
    plan: &Plan,
    batch: &mut Batch,
    w: &GpuBuffer<f32>,
    labels: &GpuBuffer<f32>,
    [loss, coef, dd]: [&GpuBuffer<f32>; 3],
) -> Result<()> {
    let DeviceX::Sparse {
        col_idx,
        values,
        bands,
    } = &*plan.x
    else {
        return Err(Error::Unsupported(
            "logistic regression takes sparse X".into(),
        ));
    };
    // w over X's columns in the plan's order (gathered when the plan re-indexes them).
    let w = super::reorder::columns(plan, batch, w)?;
    let spec = ("fused/logistic", &LOGISTIC_BINDINGS[..]);
    for band in bands {
        let rows = [labels, loss, coef, dd];
        record_rows(plan, batch, spec, band, (col_idx, values), w, &rows)?;
    }
    Ok(())
}
