//! The several-device iteration: P read back only on request and gathered in S's CSR order
//! on the host's threads, and the iteration timed whole and phase by phase.

use std::time::Instant;

use super::breakdown::{Breakdown, Marks};
use super::multi::{MultiOperands, MultiPlan, Shard};
use super::partition::Cut;
use super::readback::ReadMode;
use super::resident::{check_output_len, median_seconds};
use crate::gpu::{copy_parallel, copy_threads, each, each_with, Ready};
use crate::sparse::Dense;
use crate::Result;

/// Cuts `p` into the consecutive ranges of a row cut's parts.
fn row_slices<'p>(plan: &MultiPlan<'_>, p: &'p mut [f32]) -> Vec<&'p mut [f32]> {
    let mut slices = Vec::with_capacity(plan.shards.len());
    let mut rest = p;
    for sh in &plan.shards {
        let (head, tail) = std::mem::take(&mut rest).split_at_mut(sh.part.s.nnz());
        slices.push(head);
        rest = tail;
    }
    slices
}

impl<'g> MultiPlan<'g> {
    /// Reads every device's output back (all at once) and gathers P in S's CSR order.
    pub fn gather(&self, ops: &MultiOperands) -> Result<Vec<f32>> {
        let mut p = crate::limits::try_vec("the gathered SDDMM output", self.nnz, f32::NAN)?;
        self.gather_into(ops, &mut p)?;
        Ok(p)
    }

    /// [`MultiPlan::gather`] into the caller's array (S's nonzeros long): nothing allocated.
    pub fn gather_into(&self, ops: &MultiOperands, p: &mut [f32]) -> Result<()> {
        check_output_len(p.len(), self.nnz)?;
        let ready = each(&self.shards, |d, sh| {
            ops.device(d).map(|o| o.fetch(sh.gpu)).transpose()
        })?;
        self.copy_out(ops, ready, p)
    }

    /// Copies the fetched outputs into `p` in S's CSR order: a row cut's parts are
    /// consecutive ranges of P, each copied by its device's thread over its share of the
    /// host's threads ([`MultiPlan::threads`], as the one-device iteration uses all of them);
    /// under a column cut row i of P is every part's row i in turn, gathered by bands of rows
    /// on the host's threads.
    fn copy_out(
        &self,
        ops: &MultiOperands,
        ready: Vec<Option<Ready<'_>>>,
        p: &mut [f32],
    ) -> Result<()> {
        let threads = self.threads();
        match self.cut {
            Cut::Rows => {
                let items = ready.into_iter().zip(row_slices(self, p)).collect();
                each_with(&self.shards, items, |d, _, (ready, slice)| {
                    if let (Some(o), Some(ready)) = (ops.device(d), ready) {
                        copy_parallel(slice, &o.view(ready)?, threads);
                    }
                    Ok(())
                })
                .map(|_| ())
            }
            Cut::Columns => {
                let views = ops
                    .per_device
                    .iter()
                    .zip(ready)
                    .map(|(o, r)| match (o, r) {
                        (Some(o), Some(r)) => o.view(r).map(Some),
                        _ => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let parts: Vec<(&[u32], &[f32])> = self
                    .shards
                    .iter()
                    .zip(&views)
                    .map(|(sh, v)| (&sh.part.s.row_ptr[..], v.as_deref().unwrap_or(&[])))
                    .collect();
                gather_columns(&parts, self.nrows, p, threads * self.shards.len());
                Ok(())
            }
        }
    }

    /// One iteration as an iterating caller runs it, on operands from
    /// [`MultiPlan::upload`]: new A and B written into each device's rows, the SDDMM run on
    /// every device and, when `p` is given, P read back into it in S's CSR order; without
    /// `p`, P stays on the devices ([`MultiOperands::output`]). The devices work at once, one
    /// host thread each; returns when every device is done. A non-finite A or B fails
    /// before any device receives anything.
    pub fn iterate(
        &self,
        ops: &MultiOperands,
        a: &Dense,
        b: &Dense,
        p: Option<&mut [f32]>,
    ) -> Result<()> {
        if let Some(p) = &p {
            check_output_len(p.len(), self.nnz)?;
        }
        self.stage(ops, a, b)?;
        let finish =
            |d: usize, sh: &Shard<'g>, out: Option<&mut [f32]>| match (&sh.plan, ops.device(d)) {
                (Some(plan), Some(o)) => {
                    o.flush(sh.gpu)?;
                    o.finish(sh.gpu, plan, out)
                }
                _ => Ok(()),
            };
        match (p, self.cut) {
            (None, _) => each(&self.shards, |d, sh| finish(d, sh, None)).map(|_| ()),
            (Some(p), Cut::Rows) => each_with(&self.shards, row_slices(self, p), |d, sh, slice| {
                finish(d, sh, Some(slice))
            })
            .map(|_| ()),
            (Some(p), Cut::Columns) => {
                let ready = each(&self.shards, |d, sh| match (&sh.plan, ops.device(d)) {
                    (Some(plan), Some(o)) => {
                        o.flush(sh.gpu)?;
                        o.submit(sh.gpu, plan)?;
                        o.fetch(sh.gpu).map(Some)
                    }
                    _ => Ok(None),
                })?;
                self.copy_out(ops, ready, p)
            }
        }
    }

    /// Wall-clock seconds of one [`MultiPlan::iterate`] on `ops` (median of `reps`, after
    /// one untimed iteration): new A and B written, run, and with `read` P read back into one
    /// array in S's CSR order (reused, allocated once outside the timing).
    pub fn time_end_to_end(
        &self,
        ops: &MultiOperands,
        a: &Dense,
        b: &Dense,
        reps: usize,
        read: bool,
    ) -> Result<f64> {
        let mut p = crate::limits::try_vec("the gathered SDDMM output", self.nnz, 0f32)?;
        median_seconds(reps, || self.iterate(ops, a, b, read.then_some(&mut p[..])))
    }

    /// Where an iteration's time goes: [`MultiPlan::iterate`] with P read back, phase by
    /// phase, every device waited for after each phase (medians of `reps`, after one
    /// untimed iteration).
    pub fn breakdown(
        &self,
        ops: &MultiOperands,
        a: &Dense,
        b: &Dense,
        reps: usize,
    ) -> Result<Breakdown> {
        let mut p = crate::limits::try_vec("the gathered SDDMM output", self.nnz, 0f32)?;
        let mut samples = Vec::with_capacity(reps.max(1) + 1);
        for _ in 0..reps.max(1) + 1 {
            let mut at = [Instant::now(); 7];
            self.stage(ops, a, b)?;
            at[1] = Instant::now();
            each(&self.shards, |d, sh| match ops.device(d) {
                Some(o) => {
                    o.flush(sh.gpu)?;
                    sh.gpu.wait()
                }
                None => Ok(()),
            })?;
            at[2] = Instant::now();
            each(&self.shards, |d, sh| match (&sh.plan, ops.device(d)) {
                (Some(plan), Some(o)) => {
                    o.submit(sh.gpu, plan)?;
                    sh.gpu.wait()
                }
                _ => Ok(()),
            })?;
            at[3] = Instant::now();
            if ops.read != ReadMode::Whole {
                // Pieced (row cut only): each device reads its slice on its own, so the marks
                // are the last device's last piece copied and mapped, and the host copy that
                // follows (the part of the gather not hidden).
                let marks = each_with(&self.shards, row_slices(self, &mut p), |d, sh, slice| {
                    ops.device(d)
                        .map(|o| o.read_into(sh.gpu, slice))
                        .transpose()
                })?;
                let run_done = at[3];
                for (i, at_i) in at[4..6].iter_mut().enumerate() {
                    *at_i = marks
                        .iter()
                        .flatten()
                        .map(|m| m[i])
                        .max()
                        .unwrap_or(run_done);
                }
                at[6] = Instant::now();
                samples.push(Marks { at }.into());
                continue;
            }
            let copies = each(&self.shards, |d, sh| {
                ops.device(d).map(|o| o.fetch_copy(sh.gpu)).transpose()
            })?;
            at[4] = Instant::now();
            let ready = each_with(&self.shards, copies, |d, sh, copy| {
                match (ops.device(d), copy) {
                    (Some(o), Some(copy)) => o.fetch_map(sh.gpu, copy).map(Some),
                    _ => Ok(None),
                }
            })?;
            at[5] = Instant::now();
            self.copy_out(ops, ready, &mut p)?;
            at[6] = Instant::now();
            samples.push(Marks { at }.into());
        }
        Ok(Breakdown::median(&samples[1..]))
    }
}

/// Under a column cut, P's row i is every part's row i in part order (a part holds a
/// contiguous range of columns, and S's rows are sorted). `parts` are (row offsets, values)
/// of each part; P is written by bands of rows of about equal nonzeros, one per thread.
fn gather_columns(parts: &[(&[u32], &[f32])], nrows: usize, p: &mut [f32], threads: usize) {
    // Where row i starts in P.
    let start = |i: usize| parts.iter().map(|(rp, _)| rp[i] as usize).sum::<usize>();
    let bands = copy_threads(std::mem::size_of_val(p), threads);
    let mut bounds = vec![0usize];
    for t in 1..bands {
        let target = p.len() * t / bands;
        // The first row at or past the target (row starts grow with i).
        let (mut lo, mut hi) = (*bounds.last().unwrap_or(&0), nrows);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if start(mid) < target {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        bounds.push(lo);
    }
    bounds.push(nrows);
    let band = |rows: std::ops::Range<usize>, dst: &mut [f32]| {
        let mut at = 0;
        for i in rows {
            for (rp, values) in parts {
                let (s, e) = (rp[i] as usize, rp[i + 1] as usize);
                dst[at..at + e - s].copy_from_slice(&values[s..e]);
                at += e - s;
            }
        }
    };
    if bands == 1 {
        band(0..nrows, p);
        return;
    }
    std::thread::scope(|scope| {
        let mut rest = p;
        for w in bounds.windows(2) {
            let (head, tail) = std::mem::take(&mut rest).split_at_mut(start(w[1]) - start(w[0]));
            rest = tail;
            let (band, rows) = (&band, w[0]..w[1]);
            scope.spawn(move || band(rows, head));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sddmm::partition::partition;
    use crate::sparse::Csr;

    #[test]
    fn column_parts_gather_back_by_bands_of_rows() {
        // 1.2M nonzeros (4.8 MB of P): two bands of rows on two threads or more, one on one;
        // each value distinct, so a misplaced one shows.
        let (nrows, ncols, per_row) = (3_000usize, 2_000usize, 400usize);
        let mut row_ptr = vec![0u32];
        let mut col_idx = Vec::with_capacity(nrows * per_row);
        for i in 0..nrows {
            let row = per_row - i % 7 * 40;
            col_idx.extend((0..row).map(|j| (j * 5 + i % 5) as u32));
            row_ptr.push(col_idx.len() as u32);
        }
        let values = (0..col_idx.len()).map(|v| v as f32).collect();
        let s = Csr::new(nrows, ncols, row_ptr, col_idx, values).unwrap();
        for parts in [1, 2, 3] {
            let cut = partition(&s, parts, Cut::Columns).unwrap();
            let views: Vec<(&[u32], &[f32])> = cut
                .iter()
                .map(|p| (&p.s.row_ptr[..], &p.s.values[..]))
                .collect();
            for threads in [1, 2, 5] {
                let mut p = vec![f32::NAN; s.nnz()];
                gather_columns(&views, nrows, &mut p, threads);
                assert!(p == s.values, "{parts} parts on {threads} threads");
            }
        }
    }
}
