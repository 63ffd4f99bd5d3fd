//! Column re-indexing by frequency ([`Reorder`]): at plan time X's columns are renumbered by
//! descending entry count (ties: the lower column first), so the hot columns of a power-law X
//! are the first words of y and w, a few contiguous L2 lines and 32-byte sectors, instead of
//! one sector each scattered over all of w (KDD2010: 29.9M columns, 120 MB of w beyond L2,
//! 84% of the entries in 100k columns).
//!
//! The plan keeps X re-indexed on the host (rows in place, each row's entries sorted by their
//! new column; the configurations tried later on the same X build their layouts from it) and
//! the new → old permutation on the device, and every variant runs unchanged on the
//! re-indexed X. A run records, in the same batch as the kernels (timings include them):
//! y gathered into the plan's order (not `xty`, whose y is over rows), z gathered when β ≠ 0
//! (β = 0 never reads z), the kernels into the plan's own w', then w' scattered into the
//! caller's w (`fused.permute`, one element-wise pass each). The `transpose` variant with
//! [`super::Config::xt_caller`] builds Xᵀ with its rows in the caller's order: its pass
//! writes the caller's w, so a run gathers y alone.

use std::ops::Range;
use std::sync::Arc;

use serde::Serialize;

use super::vectors::permute;
use super::{hot, kernels, Config, Matrix, Op, Pattern, Plan};
use crate::gpu::{Batch, Gpu, GpuBuffer};
use crate::sparse::Csr;
use crate::{limits, Error, Result};

/// Whether a plan re-indexes sparse X's columns by descending entry count.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Reorder {
    /// On for sparse X on the large-n path (w beyond workgroup memory) with at least
    /// [`AUTO_MIN_COLS`] columns, at least [`AUTO_MIN_PER_COL`] entries per column, and whose
    /// top [`AUTO_TOP`] columns hold at least [`AUTO_MIN_SHARE`] of the entries; off
    /// otherwise (dense X: always).
    Auto,
    /// Always (sparse X; refused on dense X).
    On,
    /// Never.
    Off,
}

impl Reorder {
    /// The CLI name (`auto`, `on`, `off`).
    pub fn name(self) -> &'static str {
        match self {
            Reorder::Auto => "auto",
            Reorder::On => "on",
            Reorder::Off => "off",
        }
    }
}

/// `Auto` re-indexes X with at least this many columns: below it w (4 MiB) stays in the L2 of
/// any discrete GPU whatever the order, and the three permutation passes would be pure cost.
pub const AUTO_MIN_COLS: usize = 1 << 20;

/// `Auto` re-indexes X with at least this many entries per column: a run's three permutation
/// passes read or write about 3·n scattered words against the kernels' nnz scattered adds, so a
/// sparser X would pay about what it saves (KDD2010: 14 per column). It also keeps the share
/// below meaningful: over a handful of entries per column, chance alone puts a large share in
/// the top columns.
pub const AUTO_MIN_PER_COL: f64 = 2.0;

/// The fraction of the columns (the most populous) whose share of the entries `Auto` weighs.
pub const AUTO_TOP: f64 = 0.01;

/// `Auto` re-indexes X whose top [`AUTO_TOP`] columns hold at least this share of the entries
/// (a Zipf 1.1 X such as KDD2010's: about 0.9; uniform columns: 0.01).
pub const AUTO_MIN_SHARE: f64 = 0.30;

/// The share of the entries in the ⌈[`AUTO_TOP`]·n⌉ columns with the most (0 without entries).
pub fn top_share(deg: &[u32]) -> Result<f64> {
    let total: u64 = deg.iter().map(|&d| d as u64).sum();
    if total == 0 {
        return Ok(0.0);
    }
    let k = ((deg.len() as f64 * AUTO_TOP).ceil() as usize).clamp(1, deg.len());
    let mut d = limits::try_with_capacity("column counts", deg.len())?;
    d.extend_from_slice(deg);
    d.select_nth_unstable_by(k - 1, |a: &u32, b| b.cmp(a));
    let top: u64 = d[..k].iter().map(|&v| v as u64).sum();
    Ok(top as f64 / total as f64)
}

/// X with column `order[new]` renamed `new` (rows in place, each row's entries sorted by the
/// new column: a valid CSR). Rows are spread over the host's threads.
pub fn reindex(x: &Csr, order: &[u32]) -> Result<Csr> {
    if order.len() != x.ncols {
        return Err(Error::Shape(format!(
            "a column order of {} columns for X with {}",
            order.len(),
            x.ncols
        )));
    }
    let new_of = crate::sparse::order::inverse(order)?;
    let nnz = x.nnz();
    let mut col_idx = limits::try_vec("the re-indexed column indices", nnz, 0u32)?;
    let mut values = limits::try_vec("the re-indexed values", nnz, 0f32)?;
    let mut row_ptr = limits::try_with_capacity("the re-indexed row offsets", x.nrows + 1)?;
    row_ptr.extend_from_slice(&x.row_ptr);
    // Row ranges of about equal entries, one per thread, each writing its own slices.
    let parts = crate::sparse::bucket::threads().min(x.nrows.max(1));
    let cut = |t: usize| {
        let target = (nnz as u128 * t as u128 / parts as u128) as u32;
        x.row_ptr.partition_point(|&p| p < target).min(x.nrows)
    };
    let cuts: Vec<usize> = (0..=parts)
        .map(|t| if t == parts { x.nrows } else { cut(t) })
        .collect();
    let new_of = &new_of;
    std::thread::scope(|scope| {
        let (mut cols, mut vals) = (&mut col_idx[..], &mut values[..]);
        for w in cuts.windows(2) {
            let rows = w[0]..w[1].max(w[0]);
            let len = (x.row_ptr[rows.end] - x.row_ptr[rows.start]) as usize;
            let (c, rest_c) = std::mem::take(&mut cols).split_at_mut(len);
            let (v, rest_v) = std::mem::take(&mut vals).split_at_mut(len);
            (cols, vals) = (rest_c, rest_v);
            scope.spawn(move || fill_rows(x, new_of, rows, c, v));
        }
    });
    Ok(Csr {
        nrows: x.nrows,
        ncols: x.ncols,
        row_ptr,
        col_idx,
        values,
    })
}

/// [`reindex`] on `rows`, whose entries `cols` and `vals` hold.
fn fill_rows(x: &Csr, new_of: &[u32], rows: Range<usize>, cols: &mut [u32], vals: &mut [f32]) {
    let base = x.row_ptr[rows.start] as usize;
    let mut row: Vec<(u32, f32)> = vec![];
    for r in rows {
        let range = x.row_range(r);
        row.clear();
        row.extend(
            range
                .clone()
                .map(|e| (new_of[x.col_idx[e] as usize], x.values[e])),
        );
        row.sort_unstable_by_key(|&(c, _)| c);
        let at = range.start - base;
        for (k, &(c, v)) in row.iter().enumerate() {
            cols[at + k] = c;
            vals[at + k] = v;
        }
    }
}

/// X re-indexed, shared by the plans of one X: on the host (for the layouts of other
/// configurations) and the new → old permutation on the device.
pub(super) struct Reindexed {
    pub(super) x: Csr,
    /// The new → old permutation on the host (the transpose in the caller's order).
    pub(super) order: Vec<u32>,
    old_of: GpuBuffer<u32>,
}

/// A plan's side of the re-indexing: the shared X and permutation, and its own y', z', w'
/// (n each) in the new order.
pub(super) struct PlanReindex {
    shared: Arc<Reindexed>,
    y: GpuBuffer<f32>,
    z: GpuBuffer<f32>,
    w: GpuBuffer<f32>,
}

impl PlanReindex {
    /// The re-indexed X and permutation, for a plan of another configuration.
    pub(super) fn shared(&self) -> Arc<Reindexed> {
        self.shared.clone()
    }
}

/// Sets `config.reorder` for `setting` on `x`; returns the top columns' share of the entries
/// when it was needed (`share` passes it in when known: counting costs a pass over X).
pub(super) fn decide(
    x: Matrix,
    setting: Reorder,
    config: &mut Config,
    share: Option<f64>,
) -> Result<Option<f64>> {
    let (on, share) = match (setting, x) {
        (Reorder::Off, _) | (Reorder::Auto, Matrix::Dense(_)) => (false, share),
        (Reorder::On, Matrix::Dense(_)) => {
            return Err(Error::Unsupported(
                "column re-indexing (reorder) on dense X: it applies to sparse X".into(),
            ))
        }
        (Reorder::On, Matrix::Sparse(_)) => (true, share),
        (Reorder::Auto, Matrix::Sparse(s))
            if config.workgroup_w
                || s.ncols < AUTO_MIN_COLS
                || (s.nnz() as f64) < AUTO_MIN_PER_COL * s.ncols as f64 =>
        {
            (false, share)
        }
        (Reorder::Auto, Matrix::Sparse(s)) => {
            let share = match share {
                Some(v) => v,
                None => top_share(&hot::column_degrees(s))?,
            };
            (share >= AUTO_MIN_SHARE, Some(share))
        }
    };
    config.reorder = on;
    // Without re-indexing the caller's order is the plan's.
    config.xt_caller &= on;
    Ok(share)
}

/// Whether `Auto`'s rule is near its edge for `plan` (the large-n path, at least
/// [`AUTO_MIN_COLS`] columns and [`AUTO_MIN_PER_COL`] entries per column, the top columns'
/// share within a factor of 2 of [`AUTO_MIN_SHARE`]): the autotuner then times the other
/// choice too.
pub(super) fn unsure(plan: &Plan) -> bool {
    let c = &plan.config;
    !c.dense
        && !c.workgroup_w
        && plan.n >= AUTO_MIN_COLS
        && plan.nnz as f64 >= AUTO_MIN_PER_COL * plan.n as f64
        && plan
            .col_share
            .is_some_and(|s| (AUTO_MIN_SHARE / 2.0..AUTO_MIN_SHARE * 2.0).contains(&s))
}

/// X re-indexed for `config` (`None` when it does not re-index): the column order counted on
/// the host, X rewritten and the permutation uploaded.
pub(super) fn prepare(gpu: &Gpu, x: Matrix, config: &Config) -> Result<Option<Arc<Reindexed>>> {
    if !config.reorder {
        return Ok(None);
    }
    let Matrix::Sparse(s) = x else {
        return Err(Error::Unsupported(
            "column re-indexing (reorder) on dense X".into(),
        ));
    };
    // `fused.permute` binds the permutation and the vectors over X's columns whole.
    GpuBuffer::<u32>::check_binding(gpu, "the column permutation (reorder)", s.ncols)?;
    let order = crate::sparse::order::by_count(&hot::column_degrees(s))?;
    let x = reindex(s, &order)?;
    // A binding holds an element at least.
    let old_of = GpuBuffer::upload(
        gpu,
        "fused.reorder_perm",
        if order.is_empty() { &[0] } else { &order },
    )?;
    Ok(Some(Arc::new(Reindexed { x, order, old_of })))
}

/// Gives `plan` (built on `shared`'s X) its vectors in the new order.
pub(super) fn attach(gpu: &Gpu, plan: &mut Plan, shared: Option<Arc<Reindexed>>) -> Result<()> {
    let Some(shared) = shared else {
        return Ok(());
    };
    let n = plan.n.max(1);
    plan.reindex = Some(PlanReindex {
        y: GpuBuffer::zeroed(gpu, "fused.reorder_y", n)?,
        z: GpuBuffer::zeroed(gpu, "fused.reorder_z", n)?,
        w: GpuBuffer::zeroed(gpu, "fused.reorder_w", n)?,
        shared,
    });
    Ok(())
}

/// Records the plan's kernels ([`kernels::record`]); with re-indexed columns between the
/// gathers of y (not `xty`), z (β ≠ 0) and, `onto`, the w to add onto, and the scatter of w.
pub(super) fn record(
    plan: &Plan,
    batch: &mut Batch,
    op: &Op,
    w: &GpuBuffer<f32>,
    onto: bool,
) -> Result<()> {
    let Some(r) = &plan.reindex else {
        return kernels::record(plan, batch, op, w, onto);
    };
    let (n, perm) = (plan.n, &r.shared.old_of);
    let y = if op.xty {
        op.y
    } else {
        permute(batch, n, perm, (op.y, &r.y), true)?;
        &r.y
    };
    if caller_w(plan) {
        // Xᵀ's pass writes the caller's w (β·z and any add onto w in the caller's order).
        return kernels::record(plan, batch, &Op { y, ..*op }, w, onto);
    }
    let z = match op.z.filter(|_| op.beta != 0.0) {
        Some(z) => {
            permute(batch, n, perm, (z, &r.z), true)?;
            Some(&r.z)
        }
        None => None,
    };
    if onto {
        permute(batch, n, perm, (w, &r.w), true)?;
    }
    let inner = Op { y, z, ..*op };
    kernels::record(plan, batch, &inner, &r.w, onto)?;
    permute(batch, n, perm, (&r.w, w), false)
}

/// `v` over X's columns in the plan's order: `v` itself, or gathered into the plan's y'
/// (for kernels that read a vector over columns outside [`record`], e.g. `fused.logistic`).
pub(super) fn columns<'a>(
    plan: &'a Plan,
    batch: &mut Batch,
    v: &'a GpuBuffer<f32>,
) -> Result<&'a GpuBuffer<f32>> {
    match &plan.reindex {
        None => Ok(v),
        Some(r) => {
            permute(batch, plan.n, &r.shared.old_of, (v, &r.y), true)?;
            Ok(&r.y)
        }
    }
}

/// Dispatches [`record`] adds for `pattern` (operands as it takes them, β ≠ 0 with z): the
/// gathers of y and z and the scatter of w (y's alone where the kernels write the caller's w).
pub(super) fn dispatches(plan: &Plan, pattern: Pattern) -> usize {
    let y = usize::from(pattern != Pattern::Xty);
    match plan.reindex {
        None => 0,
        Some(_) if caller_w(plan) => y,
        Some(_) => y + usize::from(pattern.has_z()) + 1,
    }
}

/// Whether the kernels write w in the caller's column order on re-indexed X (the transpose
/// with Xᵀ's rows in that order): z and w are not permuted.
fn caller_w(plan: &Plan) -> bool {
    plan.transpose.as_ref().is_some_and(|t| t.caller_order())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_share_of_the_most_populous() {
        // 200 columns: the top 1% is 2 columns.
        let mut deg = vec![1u32; 200];
        deg[7] = 100;
        deg[150] = 50;
        let share = top_share(&deg).unwrap();
        assert!((share - 150.0 / 348.0).abs() < 1e-12, "{share}");
        assert_eq!(top_share(&[0, 0]).unwrap(), 0.0);
    }

    #[test]
    fn reindex_keeps_rows_and_sorts_them() {
        let x = Csr {
            nrows: 3,
            ncols: 4,
            row_ptr: vec![0, 3, 3, 5],
            col_idx: vec![0, 1, 3, 1, 2],
            values: vec![1.0, 2.0, 3.0, 4.0, 5.0],
        };
        let ord = crate::sparse::order::by_count(&hot::column_degrees(&x)).unwrap();
        assert_eq!(ord, vec![1, 0, 2, 3]);
        let r = reindex(&x, &ord).unwrap();
        r.validate().unwrap();
        assert_eq!(r.row_ptr, x.row_ptr);
        assert_eq!(r.col_idx, vec![0, 1, 3, 0, 2]);
        assert_eq!(r.values, vec![2.0, 1.0, 3.0, 4.0, 5.0]);
    }
}
