//! Fixed-point accumulation of the workgroup copy of w ([`WgAccum::Fixed`]): the sparse
//! `fused` kernel adds each term t = x_rc·v_r·(x_r·y) to an `atomic<i32>` word as
//! round(t·2^s_c), a native integer add in place of the f32 compare-exchange loop, and its
//! flush converts the word back (÷ 2^s_c) before the one global f32 add per (workgroup,
//! column). Integer adds are associative: a workgroup's partials do not depend on the order
//! of its adds (the global f32 adds across workgroups still may).
//!
//! The scale 2^s_c of column c makes overflow impossible. The plan bounds, on the host, what
//! one workgroup's partial of column c can hold, in units of max|y|·max|v|:
//! S_c = max over (band, workgroup) of Σ |x_rc|·‖x_r‖₁ over the workgroup's rows r holding c
//! (`xty`: Σ |x_rc|), since |t| ≤ |x_rc|·|v_r|·‖x_r‖₁·max|y| (`xty`: |x_rc|·|v_r|·|y_r|). Each
//! run measures max|y| and max|v| on the device (`fused.fixed_max`, partial maxima of the bit
//! patterns of |y| and |v|), and `fused.fixed_scale` takes s_c = 30 − e with e an exponent
//! such that S_c·max|y|·max|v| < 2^e (from the operands' exponents: no f32 overflow, no
//! underflow), so every partial sum of a column's rounded terms stays below
//! 2^30·(1 + γ) + K/2 < 2^31 (γ: the f32 rounding of a computed term, rows of at most
//! [`ROW_MAX`] entries; K ≤ [`COLUMN_ENTRIES_MAX`] terms of the column in one workgroup).
//! s_c is clamped to [−126, 126]; a column whose bound is not finite (NaN or ∞ in y, v or X,
//! or a bound past the clamp) gets scale 0, and its word then takes f32 compare-exchange adds
//! of the bit pattern as without fixed point: NaN and ∞ propagate exactly as there.
//!
//! Accuracy: each term rounds to the nearest multiple of 2^−s_c, an absolute error of at most
//! 2^(−s_c − 1) < S_c·max|y|·max|v|·2^−30 per term; a column of N entries is off by less
//! than N·S_c·max|y|·max|v|·2^−30 beyond the f32 adds of the flush (see [`abs_error`]).

use serde::Serialize;

use crate::fused::bands::SparseBand;
use crate::fused::vectors::elementwise_groups;
use crate::fused::{Config, Op, Plan, Variant};
use crate::gpu::{Batch, Binding, GpuBuffer, KernelSpec};
use crate::sparse::Csr;
use crate::{Error, Result};

use Binding::{Read, ReadWrite, Uniform};

/// How the sparse `fused` kernel adds into its workgroup copy of w.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub enum WgAccum {
    /// f32 adds by compare-exchange on the bit pattern.
    #[default]
    Cas,
    /// Native i32 adds of each term in fixed point (a per-run, per-column power-of-two scale).
    Fixed,
}

impl WgAccum {
    /// The CLI name (`cas`, `fixed`).
    pub fn name(self) -> &'static str {
        match self {
            WgAccum::Cas => "cas",
            WgAccum::Fixed => "fixed",
        }
    }
}

/// Entries of a row the kernel scatters at most under fixed point: the f32 rounding of a
/// computed term then stays within 1/16 of its bound (γ = (L + 2)·2^−24).
pub const ROW_MAX: usize = 1 << 20;

/// Entries of one column in one workgroup's rows at most under fixed point (their roundings,
/// K/2 units, stay far below the 2^30 of headroom).
pub const COLUMN_ENTRIES_MAX: u64 = 1 << 28;

/// Workgroups of `fused.fixed_max` at most (its partial maxima; `fused.fixed_scale`'s
/// workgroup reduces them, one per invocation).
const MAX_PARTS: u32 = 256;
const WG: u32 = 256;

const MAX_BINDINGS: [Binding; 4] = [Uniform, Read, Read, ReadWrite];
const SCALE_BINDINGS: [Binding; 4] = [Uniform, Read, Read, ReadWrite];

/// The plan's fixed-point state: the host bounds (S_c for X·y then for `xty`, 2n), the
/// per-run partial maxima and the per-run column scales (n; 0: that column takes f32 adds).
pub(crate) struct FixedX {
    bounds: GpuBuffer<f32>,
    parts: GpuBuffer<u32>,
    pub(crate) scales: GpuBuffer<f32>,
    /// The host bounds (X·y then `xty`), for [`abs_error`].
    host: Vec<f32>,
    /// Entries per column, for [`abs_error`].
    counts: Vec<u32>,
}

/// Refuses fixed point where the kernel has other accumulation modes: it applies to the
/// sparse `fused` variant with w in workgroup memory, without hot copies or registers.
pub(crate) fn check(config: &Config) -> Result<()> {
    let why = if config.dense {
        Some("dense X (no scatter)")
    } else if config.variant != Variant::Fused {
        Some("a variant other than `fused`")
    } else if !config.workgroup_w {
        Some("w in global memory (n past workgroup memory, or asked for)")
    } else if config.hot_cols > 0 {
        Some("hot copies")
    } else if config.regs > 0 {
        Some("entries in registers (regs)")
    } else {
        None
    };
    match why {
        Some(w) => Err(Error::Unsupported(format!(
            "fixed-point workgroup accumulation with {w}: it takes the sparse `fused` kernel \
             with w in workgroup memory only ({})",
            config.describe()
        ))),
        None => Ok(()),
    }
}

/// [`crate::fused::config::resolve`] with the caller's workgroup accumulation applied
/// (refused where it does not apply, [`check`]).
pub(crate) fn resolve(
    gpu: &crate::gpu::Gpu,
    x: crate::fused::Matrix,
    options: &crate::fused::Options,
    used_hint: Option<usize>,
) -> Result<(Config, Option<usize>)> {
    let (mut config, used) = crate::fused::config::resolve(gpu, x, options, used_hint)?;
    config.wg_accum = options.wg_accum.unwrap_or_default();
    if config.wg_accum == WgAccum::Fixed {
        check(&config)?;
    }
    Ok((config, used))
}

/// The f32 bound at least `b` (rounded up; a positive value below the smallest normal f32
/// becomes that, so the device's exponent arithmetic never sees a subnormal).
fn up(b: f64) -> f32 {
    if b == 0.0 {
        return 0.0;
    }
    let f = (b as f32).max(f32::MIN_POSITIVE);
    if (f as f64) < b {
        f32::from_bits(f.to_bits() + 1)
    } else {
        f
    }
}

/// Builds the host bounds for `x` (the plan's X, re-indexed when it is) under `config`,
/// whose main kernel walks `bands`: workgroup g of a band takes its local rows r with
/// ⌊r / nv⌋ mod G = g; rows above the long-row threshold go elsewhere (unfolded).
pub(crate) fn build(
    gpu: &crate::gpu::Gpu,
    x: &Csr,
    config: &Config,
    bands: &[SparseBand],
) -> Result<FixedX> {
    check(config)?;
    let n = x.ncols;
    let nv = (config.workgroup / config.vs) as usize;
    let groups = config.groups as usize;
    let long = config.long_row as usize;
    let l1: Vec<f64> = (0..x.nrows)
        .map(|r| x.row_range(r).map(|e| (x.values[e] as f64).abs()).sum())
        .collect();
    let (mut full, mut xty) = (vec![0f64; n], vec![0f64; n]);
    let (mut acc_f, mut acc_x, mut cnt) = (vec![0f64; n], vec![0f64; n], vec![0u64; n]);
    let mut counts = vec![0u32; n];
    let mut touched = vec![];
    for band in bands {
        let (start, len) = (band.rows.start, band.rows.len());
        for g in 0..groups {
            let mut b = g;
            while b * nv < len {
                for lr in b * nv..((b + 1) * nv).min(len) {
                    let r = start + lr;
                    let range = x.row_range(r);
                    if range.len() > long {
                        continue;
                    }
                    if range.len() > ROW_MAX {
                        return Err(Error::Unsupported(format!(
                            "fixed-point workgroup accumulation over a row of {} entries \
                             (at most {ROW_MAX}; lower the long-row threshold)",
                            range.len()
                        )));
                    }
                    for e in range {
                        let c = x.col_idx[e] as usize;
                        let a = (x.values[e] as f64).abs();
                        if cnt[c] == 0 {
                            touched.push(c);
                        }
                        cnt[c] += 1;
                        counts[c] += 1;
                        acc_f[c] += a * l1[r];
                        acc_x[c] += a;
                    }
                }
                b += groups;
            }
            for c in touched.drain(..) {
                if cnt[c] > COLUMN_ENTRIES_MAX {
                    return Err(Error::Unsupported(format!(
                        "fixed-point workgroup accumulation with {} entries of column {c} in \
                         one workgroup (at most {COLUMN_ENTRIES_MAX})",
                        cnt[c]
                    )));
                }
                full[c] = full[c].max(acc_f[c]);
                xty[c] = xty[c].max(acc_x[c]);
                (acc_f[c], acc_x[c], cnt[c]) = (0.0, 0.0, 0);
            }
        }
    }
    let mut host: Vec<f32> = full.iter().chain(&xty).map(|&b| up(b)).collect();
    if host.is_empty() {
        host = vec![0.0; 2];
    }
    Ok(FixedX {
        bounds: GpuBuffer::upload(gpu, "fused.fixed_bounds", &host)?,
        parts: GpuBuffer::zeroed(gpu, "fused.fixed_parts", 2 * MAX_PARTS as usize)?,
        scales: GpuBuffer::zeroed(gpu, "fused.fixed_scales", n.max(1))?,
        host,
        counts,
    })
}

/// Records `fused.fixed_max` (partial maxima of |y| and |v|) and `fused.fixed_scale` (each
/// column's scale from them), before the main kernel in the same batch.
pub(crate) fn record(plan: &Plan, batch: &mut Batch, op: &Op, f: &FixedX) -> Result<()> {
    let gpu = batch.gpu();
    let ny = op.y.len() as u32;
    let nvl = op.v.map_or(0, |v| v.len() as u32);
    let parts = ny.max(nvl).div_ceil(WG).clamp(1, MAX_PARTS);
    let k = gpu.kernel(&KernelSpec {
        name: "fused/fixed_max",
        defines: vec![],
        constants: vec![("WG", WG as f64)],
        bindings: &MAX_BINDINGS,
    })?;
    let params = gpu.uniform("fused.fixed_max", &[ny, nvl, 0, 0]);
    let v = op.v.unwrap_or(&plan.dummy);
    let bg = k.bind(gpu, &[&params, op.y.raw(), v.raw(), f.parts.raw()])?;
    batch.dispatch(&k, bg, [parts, 1, 1])?;
    let k = gpu.kernel(&KernelSpec {
        name: "fused/fixed_scale",
        defines: vec![],
        constants: vec![("WG", WG as f64)],
        bindings: &SCALE_BINDINGS,
    })?;
    let n = plan.n as u32;
    let offset = if op.xty { n } else { 0 };
    let params = gpu.uniform(
        "fused.fixed_scale",
        &[n, parts, offset, op.v.is_some() as u32],
    );
    let bg = k.bind(
        gpu,
        &[&params, f.parts.raw(), f.bounds.raw(), f.scales.raw()],
    )?;
    batch.dispatch(&k, bg, [elementwise_groups(plan.n), 1, 1])
}

/// Dispatches [`record`] adds.
pub(crate) const DISPATCHES: usize = 2;

/// A bound on |w_c − w_c(exact f32 adds)| that fixed point adds, per column, for the
/// operands' max|y| and max|v| (1 without v) and α: N_c·|α|·S_c·max|y|·max|v|·2^−30 (N_c:
/// column c's entries the main kernel scatters; 2^−127 per term at least, the clamp). `None`
/// for plans without fixed point.
pub fn abs_error(plan: &Plan, xty: bool, alpha: f32, max_y: f32, max_v: f32) -> Option<Vec<f64>> {
    let f = plan.fixed.as_ref()?;
    let n = plan.n;
    let off = if xty { n } else { 0 };
    Some(
        (0..n)
            .map(|c| {
                // Per term 2^(−s − 1) < S_c·Y·V·2^−30, or 2^−127 where s is clamped.
                let term = f.host[off + c] as f64 * max_y as f64 * max_v as f64 * 2f64.powi(-30);
                f.counts[c] as f64 * (alpha as f64).abs() * term.max(2f64.powi(-127))
            })
            .collect(),
    )
}
