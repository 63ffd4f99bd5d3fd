//! One device's operands for a caller who runs one S again and again with new A and B (the
//! inner loop of ALS and LDA): A, B and P stay on the device, new operands reach it through
//! reused staging buffers, and P comes back only when asked for, through a reused read-back
//! buffer (or two in rotation, in pieces: [`ReadMode::Pieced`]). Nothing is allocated per
//! iteration. [`super::MultiPlan`] keeps one per device; the one-device iteration is the
//! same code on the whole of S, so both count the same steps.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use super::breakdown::Marks;
use super::readback::{PiecedRead, ReadMode};
use super::{check_shapes, Breakdown, Plan};
use crate::gpu::{
    copy_parallel, Batch, Gpu, GpuBuffer, Ready, StagedCopy, StagedView, Staging, Upload,
};
use crate::sparse::{Dense, GpuDense};
use crate::Result;

/// How new A and B reach a device's operands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum WriteMode {
    /// A and B laid out whole in one staging buffer each, checked finite on the way, and only
    /// then copied into the operands: the device copies wait for the whole layout.
    #[default]
    Staged,
    /// A and B laid out in pieces of rows, each with a staging buffer of its own, each
    /// piece's device copy queued as soon as it is laid out, so the device copies one piece
    /// while the host lays out the next. The copies go into a second set of operands, made
    /// current only by [`Resident::flush`] once every piece passed its check (on every
    /// device, for [`super::MultiPlan`]): a refused write leaves the current operands as they
    /// were. Costs a second A and B in device memory.
    Overlapped,
}

/// Bytes of A or B one piece of an overlapped write holds at most (a few host threads'
/// worth of layout: see `copy_threads`).
const PIECE_BYTES: usize = 32 << 20;

/// Rows of a device's A or B laid out in one staging buffer.
struct Piece {
    /// The device rows it holds.
    rows: Range<usize>,
    up: Upload,
}

/// A device's resident A, B and P for one plan, with their staging buffers.
pub struct Resident {
    /// The caller's rows of A this device holds (its part's rows).
    rows: Range<usize>,
    /// The caller's rows of B this device holds (its part's columns).
    cols: Range<usize>,
    /// Sets of operands (A, B): one, or two under [`WriteMode::Overlapped`].
    sets: Vec<(GpuDense, GpuDense)>,
    /// The set runs read.
    current: AtomicUsize,
    out: GpuBuffer<f32>,
    a_pieces: Vec<Piece>,
    b_pieces: Vec<Piece>,
    /// Overlapped: the last stage succeeded (its copies queued) and was not flushed yet.
    staged: AtomicBool,
    mode: WriteMode,
    read: ReadMode,
    p_down: Staging<f32>,
    /// The pieced read-back's buffers, under [`ReadMode::Pieced`].
    p_pieces: Option<PiecedRead>,
    /// Host threads for this device's operand copies.
    threads: usize,
}

/// The pieces of `m`: its whole buffer under [`WriteMode::Staged`]; under
/// [`WriteMode::Overlapped`] pieces of at most [`PIECE_BYTES`], at least two when it has two
/// rows.
fn pieces(gpu: &Gpu, m: &GpuDense, mode: WriteMode, label: &str) -> Result<Vec<Piece>> {
    if mode == WriteMode::Staged {
        return Ok(vec![Piece {
            rows: 0..m.nrows,
            up: Upload::for_buffer(gpu, label, &m.data)?,
        }]);
    }
    let row_bytes = m.stride * std::mem::size_of::<f32>();
    let count = (m.nrows * row_bytes)
        .div_ceil(PIECE_BYTES)
        .max(2)
        .min(m.nrows);
    let per = m.nrows.div_ceil(count.max(1)).max(1);
    (0..m.nrows)
        .step_by(per)
        .map(|r0| {
            let rows = r0..(r0 + per).min(m.nrows);
            let up = Upload::new(gpu, label, (rows.len() * row_bytes) as u64)?;
            Ok(Piece { rows, up })
        })
        .collect()
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
        Self::with_mode(gpu, plan, rows, cols, threads, WriteMode::Staged)
    }

    /// [`Resident::new`] with new A and B written as `mode` says.
    pub fn with_mode(
        gpu: &Gpu,
        plan: &Plan,
        rows: Range<usize>,
        cols: Range<usize>,
        threads: usize,
        mode: WriteMode,
    ) -> Result<Self> {
        Self::with_modes(gpu, plan, rows, cols, threads, mode, ReadMode::Whole)
    }

    /// [`Resident::new`] with new A and B written as `mode` says and P read back by an
    /// iteration as `read` says (the pieced read-back's buffers come beside the whole one,
    /// which [`Resident::fetch`] keeps using).
    pub fn with_modes(
        gpu: &Gpu,
        plan: &Plan,
        rows: Range<usize>,
        cols: Range<usize>,
        threads: usize,
        mode: WriteMode,
        read: ReadMode,
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
        let copies = if mode == WriteMode::Overlapped { 2 } else { 1 };
        let sets = (0..copies)
            .map(|_| {
                Ok((
                    dense(rows.len(), "sddmm.resident.a")?,
                    dense(cols.len(), "sddmm.resident.b")?,
                ))
            })
            .collect::<Result<Vec<_>>>()?;
        let out = GpuBuffer::zeroed(gpu, "sddmm.resident.out", plan.nnz)?;
        Ok(Resident {
            a_pieces: pieces(gpu, &sets[0].0, mode, "sddmm.resident.a.staging")?,
            b_pieces: pieces(gpu, &sets[0].1, mode, "sddmm.resident.b.staging")?,
            p_down: Staging::new(gpu, "sddmm.resident.p.staging", plan.nnz)?,
            p_pieces: match read {
                ReadMode::Whole => None,
                ReadMode::Pieced { piece_bytes } => {
                    Some(PiecedRead::new(gpu, &plan.host_pattern.0, piece_bytes)?)
                }
            },
            rows,
            cols,
            sets,
            current: AtomicUsize::new(0),
            out,
            staged: AtomicBool::new(false),
            mode,
            read,
            threads: threads.max(1),
        })
    }

    /// How new A and B are written.
    pub fn mode(&self) -> WriteMode {
        self.mode
    }

    /// How an iteration reads P back.
    pub fn read_mode(&self) -> ReadMode {
        self.read
    }

    /// The index of the operand set runs read.
    fn current(&self) -> usize {
        self.current.load(Ordering::SeqCst)
    }

    /// Device A (its rows).
    pub fn a(&self) -> &GpuDense {
        &self.sets[self.current()].0
    }

    /// Device B (its rows).
    pub fn b(&self) -> &GpuDense {
        &self.sets[self.current()].1
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
    /// finite. Under [`WriteMode::Staged`] nothing reaches the device yet; under
    /// [`WriteMode::Overlapped`] each piece's copy into the spare operands is queued as soon
    /// as it is laid out, and runs still read the current ones. Either way the new operands
    /// become the ones runs read only at [`Resident::flush`]. Shapes are the caller's to
    /// check (`check_host_shapes`).
    pub fn stage(&self, gpu: &Gpu, a: &Dense, b: &Dense) -> Result<()> {
        self.staged.store(false, Ordering::SeqCst);
        let overlapped = self.mode == WriteMode::Overlapped;
        // The set the copies go into: the current one when staged, the spare one overlapped.
        let set = &self.sets[if overlapped { 1 - self.current() } else { 0 }];
        for (m, dst, pieces, first, what) in [
            (a, &set.0, &self.a_pieces, self.rows.start, "A"),
            (b, &set.1, &self.b_pieces, self.cols.start, "B"),
        ] {
            for p in pieces {
                let rows = first + p.rows.start..first + p.rows.end;
                dst.fill_piece(gpu, &p.up, m, rows, what, self.threads)?;
                if overlapped {
                    p.up.flush_at(gpu, &dst.data, offset(dst, p))?;
                }
            }
        }
        self.staged.store(overlapped, Ordering::SeqCst);
        Ok(())
    }

    /// Makes what the last [`Resident::stage`] laid out the operands runs read (no wait):
    /// under [`WriteMode::Staged`] queues the staging buffers' copies into them, under
    /// [`WriteMode::Overlapped`] (copies already queued) swaps the operand sets. Both A and
    /// B or neither: an error when the last stage failed or was already flushed.
    pub fn flush(&self, gpu: &Gpu) -> Result<()> {
        let refused = || {
            Err(crate::Error::Option(
                "new A and B flushed without a successful stage".into(),
            ))
        };
        if self.mode == WriteMode::Overlapped {
            if !self.staged.swap(false, Ordering::SeqCst) {
                return refused();
            }
            self.current.store(1 - self.current(), Ordering::SeqCst);
            return Ok(());
        }
        let all = || self.a_pieces.iter().chain(&self.b_pieces);
        if !all().all(|p| p.up.is_filled()) {
            return refused();
        }
        let set = &self.sets[0];
        for (dst, pieces) in [(&set.0, &self.a_pieces), (&set.1, &self.b_pieces)] {
            for p in pieces {
                p.up.flush_at(gpu, &dst.data, offset(dst, p))?;
            }
        }
        Ok(())
    }

    /// Submits `plan` on the resident operands (no wait; the queue orders it after the
    /// copies).
    pub fn submit(&self, gpu: &Gpu, plan: &Plan) -> Result<()> {
        let mut batch = Batch::new(gpu);
        plan.record(&mut batch, self.a(), self.b(), &self.out)?;
        batch.submit_nowait().map(|_| ())
    }

    /// Queues the copy of the output into the read-back buffer and waits until it is mapped.
    pub fn fetch(&self, gpu: &Gpu) -> Result<Ready<'_>> {
        let copy = self.fetch_copy(gpu)?;
        self.fetch_map(gpu, copy)
    }

    /// [`Resident::fetch`]'s first half: queues the output's copy into the read-back buffer
    /// and waits until the device has done it.
    pub fn fetch_copy(&self, gpu: &Gpu) -> Result<StagedCopy> {
        let copy = self.p_down.copy_from(gpu, &self.out, 0..self.out.len())?;
        self.p_down.wait_copied(gpu, &copy)?;
        Ok(copy)
    }

    /// [`Resident::fetch`]'s second half: waits until the copied output is mapped.
    pub fn fetch_map(&self, gpu: &Gpu, copy: StagedCopy) -> Result<Ready<'_>> {
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
            Some(p) => self.read_into(gpu, p).map(|_| ()),
            None => gpu.wait(),
        }
    }

    /// Reads the output (submitted work waited for) into `p`, the whole part at once or in
    /// pieces as [`Resident::read_mode`] says; returns when the (last piece's) device copy
    /// was done and when it was mapped. `p` must be the output's length.
    pub(crate) fn read_into(&self, gpu: &Gpu, p: &mut [f32]) -> Result<[Instant; 2]> {
        if let Some(pieced) = &self.p_pieces {
            return pieced.read(gpu, &self.out, p, self.threads);
        }
        check_output_len(p.len(), self.out.len())?;
        let copy = self.fetch_copy(gpu)?;
        let copied = Instant::now();
        let ready = self.fetch_map(gpu, copy)?;
        let mapped = Instant::now();
        copy_parallel(p, &self.view(ready)?, self.threads);
        Ok([copied, mapped])
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
        let mut at = [Instant::now(); 7];
        self.stage(gpu, a, b)?;
        at[1] = Instant::now();
        self.flush(gpu)?;
        gpu.wait()?;
        at[2] = Instant::now();
        self.submit(gpu, plan)?;
        gpu.wait()?;
        at[3] = Instant::now();
        [at[4], at[5]] = self.read_into(gpu, p)?;
        at[6] = Instant::now();
        Ok(Marks { at }.into())
    }
}

/// Where piece `p` of `m` starts in its buffer, in bytes.
fn offset(m: &GpuDense, p: &Piece) -> u64 {
    (p.rows.start * m.stride * std::mem::size_of::<f32>()) as u64
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
