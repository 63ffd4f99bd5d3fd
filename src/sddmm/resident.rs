//! One device's operands for a caller who runs one S again and again with new A and B (the
//! inner loop of ALS and LDA): A, B and P stay on the device, new operands reach it through
//! reused staging buffers, and P comes back only when asked for, through a reused read-back
//! buffer. Nothing is allocated per iteration. [`super::MultiPlan`] keeps one per device;
//! the one-device iteration is the same code on the whole of S, so both count the same steps.

use std::ops::Range;
use std::time::Instant;

use serde::Serialize;

use super::{check_shapes, Plan};
use crate::gpu::{copy_parallel, Batch, Gpu, GpuBuffer, Ready, StagedView, Staging, Upload};
use crate::sparse::{Dense, GpuDense};
use crate::Result;

/// A device's resident A, B and P for one plan, with their staging buffers.
pub struct Resident {
    /// The caller's rows of A this device holds (its part's rows).
    rows: Range<usize>,
    /// The caller's rows of B this device holds (its part's columns).
    cols: Range<usize>,
    a: GpuDense,
    b: GpuDense,
    out: GpuBuffer<f32>,
    a_up: Upload,
    b_up: Upload,
    p_down: Staging<f32>,
    /// Host threads for this device's operand copies.
    threads: usize,
}

/// Wall-clock seconds of an iteration's phases, each ended by waiting for every device (so
/// they add up to a little more than an iteration that overlaps them).
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Breakdown {
    /// New A and B checked and laid out in the staging buffers, copied to the devices.
    pub write: f64,
    /// The SDDMM submitted and done.
    pub run: f64,
    /// P copied into the read-back buffers and mapped.
    pub readback: f64,
    /// P copied out of the mapped buffers into the caller's array, in S's CSR order.
    pub gather: f64,
}

impl Breakdown {
    /// The phases' sum.
    pub fn total(&self) -> f64 {
        self.write + self.run + self.readback + self.gather
    }

    /// The median of each phase over `samples`.
    pub fn median(samples: &[Breakdown]) -> Breakdown {
        let med = |f: fn(&Breakdown) -> f64| {
            let mut v: Vec<f64> = samples.iter().map(f).collect();
            v.sort_by(f64::total_cmp);
            v.get(v.len() / 2).copied().unwrap_or(0.0)
        };
        Breakdown {
            write: med(|b| b.write),
            run: med(|b| b.run),
            readback: med(|b| b.readback),
            gather: med(|b| b.gather),
        }
    }
}

/// Checks that host A (M×K) and B (N×K) fit `plan`'s S and K (their values are checked as
/// they are copied).
pub(crate) fn check_host_shapes(dims: (usize, usize, usize), a: &Dense, b: &Dense) -> Result<()> {
    check_shapes(dims, (a.nrows, a.ncols), (b.nrows, b.ncols))?;
    for (m, name) in [(a, "A"), (b, "B")] {
        if m.data.len() != m.nrows * m.ncols {
            return Err(crate::Error::invalid(
                name,
                format!(
                    "{} values for a {}×{} matrix",
                    m.data.len(),
                    m.nrows,
                    m.ncols
                ),
            ));
        }
    }
    Ok(())
}

impl Resident {
    /// Allocates, on `gpu`, `plan`'s A (rows `rows` of the caller's A), B (rows `cols` of the
    /// caller's B), output and staging buffers; the output is not poisoned (see
    /// [`Resident::poison`]). Operand copies use up to `threads` host threads.
    pub fn new(
        gpu: &Gpu,
        plan: &Plan,
        rows: Range<usize>,
        cols: Range<usize>,
        threads: usize,
    ) -> Result<Self> {
        let dense = |nrows: usize, label: &str| -> Result<GpuDense> {
            let stride = GpuDense::stride_for(plan.k);
            Ok(GpuDense {
                nrows,
                ncols: plan.k,
                stride,
                data: GpuBuffer::zeroed(gpu, label, nrows * stride)?,
            })
        };
        let a = dense(rows.len(), "sddmm.resident.a")?;
        let b = dense(cols.len(), "sddmm.resident.b")?;
        let out = GpuBuffer::zeroed(gpu, "sddmm.resident.out", plan.nnz)?;
        Ok(Resident {
            a_up: Upload::for_buffer(gpu, "sddmm.resident.a.staging", &a.data)?,
            b_up: Upload::for_buffer(gpu, "sddmm.resident.b.staging", &b.data)?,
            p_down: Staging::new(gpu, "sddmm.resident.p.staging", plan.nnz)?,
            rows,
            cols,
            a,
            b,
            out,
            threads: threads.max(1),
        })
    }

    /// Device A (its rows).
    pub fn a(&self) -> &GpuDense {
        &self.a
    }

    /// Device B (its rows).
    pub fn b(&self) -> &GpuDense {
        &self.b
    }

    /// The output on the device: P's values of this plan's S in its CSR order.
    pub fn output(&self) -> &GpuBuffer<f32> {
        &self.out
    }

    /// Sets the output to NaN, so that a check finds any value a run leaves unwritten.
    pub fn poison(&self, gpu: &Gpu) -> Result<()> {
        self.out.fill(gpu, f32::NAN)
    }

    /// Lays this device's rows of A and B out in the staging buffers, checking that they are
    /// finite; nothing reaches the device yet ([`Resident::flush`]). Shapes are the caller's
    /// to check ([`check_host_shapes`]).
    pub fn stage(&self, gpu: &Gpu, a: &Dense, b: &Dense) -> Result<()> {
        self.a
            .fill_rows(gpu, &self.a_up, a, self.rows.clone(), "A", self.threads)?;
        self.b
            .fill_rows(gpu, &self.b_up, b, self.cols.clone(), "B", self.threads)
    }

    /// Queues the copies of the staged A and B into the device's operands (no wait); both
    /// or neither (an error when the last [`Resident::stage`] failed).
    pub fn flush(&self, gpu: &Gpu) -> Result<()> {
        if !(self.a_up.is_filled() && self.b_up.is_filled()) {
            return Err(crate::Error::Option(
                "new A and B flushed without a successful stage".into(),
            ));
        }
        self.a_up.flush(gpu, &self.a.data)?;
        self.b_up.flush(gpu, &self.b.data)
    }

    /// Submits `plan` on the resident operands (no wait; the queue orders it after the
    /// copies).
    pub fn submit(&self, gpu: &Gpu, plan: &Plan) -> Result<()> {
        let mut batch = Batch::new(gpu);
        plan.record(&mut batch, &self.a, &self.b, &self.out)?;
        batch.submit_nowait().map(|_| ())
    }

    /// Queues the copy of the output into the read-back buffer and waits until it is mapped.
    pub fn fetch(&self, gpu: &Gpu) -> Result<Ready<'_>> {
        let copy = self.p_down.copy_from(gpu, &self.out, 0..self.out.len())?;
        self.p_down.wait(gpu, copy)
    }

    /// The fetched output where it lies (unmapped when dropped).
    pub fn view(&self, ready: Ready<'_>) -> Result<StagedView<'_, f32>> {
        self.p_down.view(ready)
    }

    /// Stages and flushes new A and B (shapes already checked), runs, and, with `p`, reads
    /// the output into it (this device's part in its CSR order). Waits for the device.
    pub(crate) fn step(
        &self,
        gpu: &Gpu,
        plan: &Plan,
        a: &Dense,
        b: &Dense,
        p: Option<&mut [f32]>,
    ) -> Result<()> {
        self.stage(gpu, a, b)?;
        self.flush(gpu)?;
        self.finish(gpu, plan, p)
    }

    /// Runs on what was flushed and, with `p`, reads the output into it; waits.
    pub(crate) fn finish(&self, gpu: &Gpu, plan: &Plan, p: Option<&mut [f32]>) -> Result<()> {
        self.submit(gpu, plan)?;
        match p {
            Some(p) => {
                let ready = self.fetch(gpu)?;
                copy_parallel(p, &self.view(ready)?, self.threads);
                Ok(())
            }
            None => gpu.wait(),
        }
    }

    /// One device's iteration on the whole of `plan`'s S (rows and columns from 0): new A
    /// and B checked and written, the SDDMM run, and P read into `p` when given (S's CSR
    /// order). The same steps as one device's share of [`super::MultiPlan::iterate`].
    pub fn iterate(
        &self,
        gpu: &Gpu,
        plan: &Plan,
        a: &Dense,
        b: &Dense,
        p: Option<&mut [f32]>,
    ) -> Result<()> {
        check_host_shapes((plan.nrows, plan.ncols, plan.k), a, b)?;
        if let Some(p) = &p {
            check_output_len(p.len(), plan.nnz)?;
        }
        self.step(gpu, plan, a, b, p)
    }

    /// Wall-clock seconds of one [`Resident::iterate`] (median of `reps`, after one untimed
    /// iteration), with P read back into one array (allocated once, outside the timing) when
    /// `read`, left on the device otherwise.
    pub fn time_iteration(
        &self,
        gpu: &Gpu,
        plan: &Plan,
        a: &Dense,
        b: &Dense,
        reps: usize,
        read: bool,
    ) -> Result<f64> {
        let mut p = crate::limits::try_vec("the SDDMM output", plan.nnz, 0f32)?;
        median_seconds(reps, || {
            self.iterate(gpu, plan, a, b, read.then_some(&mut p[..]))
        })
    }

    /// Where an iteration's time goes: [`Resident::iterate`] with P read back, phase by
    /// phase, waiting after each (medians of `reps`, after one untimed iteration).
    pub fn breakdown(
        &self,
        gpu: &Gpu,
        plan: &Plan,
        a: &Dense,
        b: &Dense,
        reps: usize,
    ) -> Result<Breakdown> {
        let mut p = crate::limits::try_vec("the SDDMM output", plan.nnz, 0f32)?;
        self.iterate_timed(gpu, plan, a, b, &mut p)?;
        let samples = (0..reps.max(1))
            .map(|_| self.iterate_timed(gpu, plan, a, b, &mut p))
            .collect::<Result<Vec<_>>>()?;
        Ok(Breakdown::median(&samples))
    }

    /// [`Resident::iterate`] phase by phase, waiting after each, timed.
    fn iterate_timed(
        &self,
        gpu: &Gpu,
        plan: &Plan,
        a: &Dense,
        b: &Dense,
        p: &mut [f32],
    ) -> Result<Breakdown> {
        check_host_shapes((plan.nrows, plan.ncols, plan.k), a, b)?;
        check_output_len(p.len(), plan.nnz)?;
        let t = Instant::now();
        self.stage(gpu, a, b)?;
        self.flush(gpu)?;
        gpu.wait()?;
        let write = t.elapsed().as_secs_f64();
        let t = Instant::now();
        self.submit(gpu, plan)?;
        gpu.wait()?;
        let run = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let ready = self.fetch(gpu)?;
        let readback = t.elapsed().as_secs_f64();
        let t = Instant::now();
        copy_parallel(p, &self.view(ready)?, self.threads);
        let gather = t.elapsed().as_secs_f64();
        Ok(Breakdown {
            write,
            run,
            readback,
            gather,
        })
    }
}

/// P's array holds one value per nonzero of S.
pub(crate) fn check_output_len(len: usize, nnz: usize) -> Result<()> {
    if len != nnz {
        return Err(crate::Error::Shape(format!(
            "an SDDMM output array of {len} values for an S of {nnz} nonzeros"
        )));
    }
    Ok(())
}

/// The median of `reps` timings of `f` after one untimed call.
pub(crate) fn median_seconds(reps: usize, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(reps.max(1));
    for _ in 0..reps.max(1) {
        let start = Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}
