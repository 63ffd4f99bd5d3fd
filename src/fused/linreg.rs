//! Linear regression by conjugate gradient on the GPU (Listing 1 of Ashari et al.): minimizes
//! ‖X·w − b‖² + λ‖w‖² by solving (XᵀX + λI)·w = Xᵀb. Each iteration is one fused
//! q = Xᵀ(X·p) + λ·p, two dot products and three vector updates, in four dispatches after the
//! gate when the plan adds onto its output ([`Plan::accumulates`]: p = β·p − r with q = λ·p;
//! q += Xᵀ(X·p); p·q with α; w += α·p and r += α·q with r·r, β and the stopping test), each
//! dot product formed by the step that writes its inputs (`fused.cg_step`); three when n is
//! small enough for one workgroup (at most 2,048), whose update step then also updates p. CG's scalars
//! (α, β, ρ, the stopping test) stay on the device: several iterations are recorded in
//! one submission, each gated on the device's stop flag (so the ones after convergence run
//! empty grids), and the small state is read back once per submission to decide whether to
//! record more. The chunk of iterations per submission starts at [`CgOptions::chunk`] and
//! doubles. w lies in the state's buffer, behind it: one copy of the state (and of w, when n
//! is at most [`CgOptions::stage_w_max`]) ends each submission's command buffer, so a
//! submission costs the host one wait and one map, and a solve that ends in the first chunk
//! makes one round trip to the device in all. A [`CgSolver`] holds the solve's buffers, bound
//! steps and their recording ([`Recording`]), so repeated solves allocate and bind nothing:
//! the host appends the recorded steps, encodes and submits.

use std::time::Instant;

use serde::Serialize;

pub use crate::fused::cg_step::{CgBreakdown, PhaseTotal};
use crate::fused::cg_step::{CgMode, CgSettings, CgSteps, CgVectors, SYNC_LEN};
use crate::fused::{Matrix, Op, Options, Plan};
use crate::gpu::{Batch, Gpu, GpuBuffer, Recording, Staging};
use crate::sparse::{Csr, Dense};
use crate::{Error, Result};

/// CG options.
#[derive(Clone, Debug)]
pub struct CgOptions {
    /// Ridge term λ (Listing 1's eps: 0.001).
    pub lambda: f32,
    /// Stop when ‖r‖ ≤ tol·‖r₀‖ (1e-6).
    pub tol: f64,
    /// Most iterations (100).
    pub max_iter: usize,
    /// Options of the fused kernel.
    pub fused: Options,
    /// Iterations recorded in the first submission (≥ 1); each later one records twice as many.
    pub chunk: usize,
    /// Largest n whose w is copied behind every submission ([`STAGE_W_MAX`]).
    pub stage_w_max: usize,
    /// Time each phase on the GPU ([`CgReport::breakdown`]): one compute pass per phase.
    pub breakdown: bool,
}

impl Default for CgOptions {
    fn default() -> Self {
        CgOptions {
            lambda: 0.001,
            tol: 1e-6,
            max_iter: 100,
            fused: Options::default(),
            chunk: 4,
            stage_w_max: STAGE_W_MAX,
            breakdown: false,
        }
    }
}

/// The outcome of [`linreg_cg`].
#[derive(Clone, Debug, Serialize)]
pub struct CgReport {
    /// The weights (n, or n + 1 with an intercept column appended by the caller).
    pub w: Vec<f32>,
    /// Iterations run.
    pub iterations: usize,
    /// ‖r‖ before the first and after each iteration.
    pub residuals: Vec<f64>,
    /// Whether ‖r‖ reached tol·‖r₀‖.
    pub converged: bool,
    /// Submissions (each followed by one read of CG's scalars).
    pub submissions: usize,
    /// Host waits on the device: one per submission (the state, and w when staged with it),
    /// plus one for w when n is above [`CgOptions::stage_w_max`].
    pub readbacks: usize,
    /// Wall-clock seconds of the solve (X and b already on the device; plan built), the
    /// final read of w included; the workspace's allocation included by [`linreg_cg`] and
    /// [`linreg_cg_resident`], not by [`CgSolver::solve`] on a workspace built before.
    pub seconds: f64,
    /// Of `seconds`, the host's recording and submitting: appending the solver's recorded
    /// steps (and, on labels other than the previous solve's, binding the r = −Xᵀb pass to
    /// them), encoding, submitting; [`linreg_cg`] and [`linreg_cg_resident`] add the
    /// workspace's setup ([`CgBreakdown::setup_ms`]).
    pub record_seconds: f64,
    /// Of `seconds`, the host's waits for the device and the reads.
    pub wait_seconds: f64,
    /// Where the time went, with [`CgOptions::breakdown`] (the timestamps' own read-back is
    /// left out of `seconds`).
    pub breakdown: Option<CgBreakdown>,
}

/// Default largest n whose w is copied behind every submission (so the last one brings it
/// back without another round trip; the copy moves n·4 bytes, against the ≥ nnz·8 of an
/// iteration); above it w is read once at the end.
pub const STAGE_W_MAX: usize = 1 << 20;

/// X with a column of ones appended (the intercept), sparse.
pub fn with_intercept_sparse(x: &Csr) -> Csr {
    let mut row_ptr = Vec::with_capacity(x.nrows + 1);
    let mut col_idx = Vec::with_capacity(x.nnz() + x.nrows);
    let mut values = Vec::with_capacity(x.nnz() + x.nrows);
    row_ptr.push(0u32);
    for r in 0..x.nrows {
        let range = x.row_range(r);
        col_idx.extend_from_slice(&x.col_idx[range.clone()]);
        values.extend_from_slice(&x.values[range]);
        col_idx.push(x.ncols as u32);
        values.push(1.0);
        row_ptr.push(col_idx.len() as u32);
    }
    Csr {
        nrows: x.nrows,
        ncols: x.ncols + 1,
        row_ptr,
        col_idx,
        values,
    }
}

/// X with a column of ones appended (the intercept), dense.
pub fn with_intercept_dense(x: &Dense) -> Dense {
    let mut data = Vec::with_capacity(x.nrows * (x.ncols + 1));
    for r in 0..x.nrows {
        data.extend_from_slice(x.row(r));
        data.push(1.0);
    }
    Dense {
        nrows: x.nrows,
        ncols: x.ncols + 1,
        data,
    }
}

/// Solves (XᵀX + λI)·w = Xᵀb by CG on `plan`'s X; `progress(iteration, ‖r‖)` is told each
/// iteration's residual.
pub fn linreg_cg(
    gpu: &Gpu,
    plan: &Plan,
    b: &[f32],
    options: &CgOptions,
    progress: impl FnMut(usize, f64),
) -> Result<CgReport> {
    check_labels(plan, b.len())?;
    if let Some(i) = b.iter().position(|v| !v.is_finite()) {
        return Err(Error::invalid("labels", format!("label {i} is {}", b[i])));
    }
    let bb = GpuBuffer::upload(gpu, "linreg.b", b)?;
    linreg_cg_resident(gpu, plan, &bb, options, progress)
}

/// [`linreg_cg`] with the labels already on the device (finite, m of them): the reported time
/// covers the solve alone, X and b resident, the solve's buffers allocated within it (a
/// [`CgSolver`] built and used once).
pub fn linreg_cg_resident(
    gpu: &Gpu,
    plan: &Plan,
    bb: &GpuBuffer<f32>,
    options: &CgOptions,
    progress: impl FnMut(usize, f64),
) -> Result<CgReport> {
    check_labels(plan, bb.len())?;
    let start = Instant::now();
    let mut solver = CgSolver::new(gpu, plan, options)?;
    let setup = start.elapsed().as_secs_f64();
    let mut report = solver.solve(gpu, bb, progress)?;
    report.seconds += setup;
    report.record_seconds += setup;
    if let Some(b) = &mut report.breakdown {
        b.setup_ms = setup * 1e3;
    }
    Ok(report)
}

fn check_labels(plan: &Plan, len: usize) -> Result<()> {
    if len != plan.m {
        return Err(Error::Shape(format!(
            "linear regression on X {}×{} needs {} labels, got {}",
            plan.m, plan.n, plan.m, len
        )));
    }
    Ok(())
}

/// CG's device workspace on one plan: w, r, p, q, the scalar state, the staging buffer, the
/// bound steps and their recording, made once and reused by every [`CgSolver::solve`] (as a
/// plan is built once and run many times): a solve allocates nothing and binds nothing (but
/// the r = −Xᵀb pass on labels other than the previous solve's), and records by appending
/// the steps recorded when the solver was made.
pub struct CgSolver<'p> {
    plan: &'p Plan,
    options: CgOptions,
    /// q = λ·p is written with p and the fused pass adds onto q ([`Plan::accumulates`]).
    onto_q: bool,
    /// The state's words (`state_len`), then w from word `w_at` (a storage offset): one
    /// buffer, so a submission's state and w come back in one copy and one map.
    st: GpuBuffer<f32>,
    state_len: usize,
    w_at: usize,
    /// w is copied behind every submission (n ≤ [`CgOptions::stage_w_max`]).
    stage_w: bool,
    /// The state (and w when `stage_w`, from `w_at`).
    stage: Staging<f32>,
    p: GpuBuffer<f32>,
    q: GpuBuffer<f32>,
    r: GpuBuffer<f32>,
    steps: CgSteps,
    /// The start step, then the iterations: the first, and any later one (with its p update
    /// when that is a step of its own); each one gated region.
    start: Recording,
    first: Recording,
    later: Recording,
    /// r = −Xᵀb for the labels buffer of the last solve (a handle on it is kept, so no other
    /// buffer can be taken for it), replayed while the labels stay the same.
    xtb: Option<(wgpu::Buffer, Recording)>,
    /// Kept alive for the steps' bind groups.
    _sync: GpuBuffer<u32>,
}

fn check_lambda(lambda: f32) -> Result<()> {
    if !(lambda.is_finite() && lambda >= 0.0) {
        return Err(Error::Option(format!(
            "λ = {lambda} must be finite and ≥ 0"
        )));
    }
    Ok(())
}

fn check_tol(tol: f64) -> Result<()> {
    // A NaN tol would stop before the first iteration and report an unsolved system.
    if !(tol.is_finite() && tol >= 0.0) {
        return Err(Error::Option(format!("tol = {tol} must be finite and ≥ 0")));
    }
    Ok(())
}

/// A batch for a solve (its passes timed with [`CgOptions::breakdown`]).
fn new_batch<'g>(gpu: &'g Gpu, options: &CgOptions) -> Batch<'g> {
    let mut batch = Batch::new(gpu);
    if options.breakdown {
        batch.time_phases();
    }
    batch
}

impl<'p> CgSolver<'p> {
    /// Checks the options, allocates the workspace and records the steps.
    pub fn new(gpu: &Gpu, plan: &'p Plan, options: &CgOptions) -> Result<Self> {
        check_lambda(options.lambda)?;
        check_tol(options.tol)?;
        if options.chunk == 0 {
            return Err(Error::Option(
                "CG chunk must be at least 1 iteration".into(),
            ));
        }
        let n = plan.n;
        if !u32::try_from(options.max_iter).is_ok_and(|k| k < 1 << 24) {
            return Err(Error::Option(format!(
                "{} CG iterations: at most 2^24 (counted in f32)",
                options.max_iter
            )));
        }
        let onto_q = plan.accumulates(false);
        let r = GpuBuffer::zeroed(gpu, "linreg.r", n)?;
        let p = GpuBuffer::zeroed(gpu, "linreg.p", n)?;
        let q = GpuBuffer::zeroed(gpu, "linreg.q", n)?;
        let sync = GpuBuffer::zeroed(gpu, "linreg.sync", SYNC_LEN)?;
        let state_len = slot::LOG as usize + 1 + options.max_iter;
        let align = (gpu.caps.storage_offset_alignment as usize).max(4) / 4;
        let w_at = state_len.div_ceil(align) * align;
        let st = GpuBuffer::zeroed(gpu, "linreg.state", w_at + n.max(1))?;
        let stage_w = n <= options.stage_w_max;
        let staged = if stage_w { w_at + n } else { state_len };
        let stage = Staging::new(gpu, "linreg.state.stage", staged)?;
        let range = |at: usize, len: usize| wgpu::BufferBinding {
            buffer: st.raw(),
            offset: 4 * at as u64,
            size: wgpu::BufferSize::new(4 * len.max(1) as u64),
        };
        let vectors = CgVectors {
            st: range(0, state_len),
            sync: &sync,
            w: range(w_at, n),
            r: &r,
            p: &p,
            q: &q,
        };
        let steps = CgSteps::new(gpu, n, &settings(options, onto_q), &vectors)?;
        let mut start = new_batch(gpu, options);
        start.phase("start");
        steps.record(&mut start, CgMode::Start)?;
        let start = start.into_recording()?;
        let empty = Batch::new(gpu).into_recording()?;
        let mut solver = CgSolver {
            plan,
            options: options.clone(),
            onto_q,
            st,
            state_len,
            w_at,
            stage_w,
            stage,
            p,
            q,
            r,
            steps,
            start,
            first: empty.clone(),
            later: empty,
            xtb: None,
            _sync: sync,
        };
        solver.record_iterations(gpu)?;
        Ok(solver)
    }

    /// Records the first iteration and a later one (run only while stop is 0): [p = β·p − r
    /// (q = λ·p), unless the update step of one workgroup does it;] q (+)= Xᵀ(X·p) (+ λ·p);
    /// p·q and α; w += α·p, r += α·q, r·r, β and the stopping test. Every iteration after
    /// the first is the same program on the same buffers: a solve appends copies of it.
    fn record_iterations(&mut self, gpu: &Gpu) -> Result<()> {
        let (plan, p, q, st) = (self.plan, &self.p, &self.q, &self.st);
        let iteration = |later: bool| -> Result<Recording> {
            let mut batch = new_batch(gpu, &self.options);
            batch.phase("gate");
            batch.begin_gate(st, slot::STOP)?;
            if later && !self.steps.folds_p() {
                batch.phase("p_update");
                self.steps.record(&mut batch, CgMode::PUpdate)?;
            }
            batch.phase("fused");
            let op = Op {
                alpha: 1.0,
                y: p,
                v: None,
                beta: self.options.lambda,
                z: Some(p),
                xty: false,
            };
            if self.onto_q {
                plan.record_onto(&mut batch, &op, q)?;
            } else {
                plan.record(&mut batch, &op, q)?;
            }
            batch.phase("alpha");
            self.steps.record(&mut batch, CgMode::Alpha)?;
            batch.phase("update");
            self.steps.record(&mut batch, CgMode::Update)?;
            batch.end_gate()?;
            batch.into_recording()
        };
        let (first, later) = (iteration(false)?, iteration(true)?);
        (self.first, self.later) = (first, later);
        Ok(())
    }

    /// Sets λ for the solves after this call: the steps' settings are rewritten, and the
    /// iterations recorded again (the fused pass may hold λ).
    pub fn set_lambda(&mut self, gpu: &Gpu, lambda: f32) -> Result<()> {
        check_lambda(lambda)?;
        self.options.lambda = lambda;
        self.steps
            .write_settings(gpu, &settings(&self.options, self.onto_q));
        self.record_iterations(gpu)
    }

    /// Sets the tolerance for the solves after this call (the steps' settings are rewritten).
    pub fn set_tol(&mut self, gpu: &Gpu, tol: f64) -> Result<()> {
        check_tol(tol)?;
        self.options.tol = tol;
        self.steps
            .write_settings(gpu, &settings(&self.options, self.onto_q));
        Ok(())
    }

    /// Solves for the labels `bb` (on the device, finite, m of them); `progress(iteration,
    /// ‖r‖)` is told each iteration's residual. The reported time is this call's. The solver
    /// keeps a handle on `bb` (its r = −Xᵀb pass is bound to it) until a solve on other
    /// labels or its drop.
    pub fn solve(
        &mut self,
        gpu: &Gpu,
        bb: &GpuBuffer<f32>,
        mut progress: impl FnMut(usize, f64),
    ) -> Result<CgReport> {
        check_labels(self.plan, bb.len())?;
        let (plan, n) = (self.plan, self.plan.n);
        let start = Instant::now();
        let (mut wait_seconds, mut untimed) = (0.0, 0.0);
        let mut breakdown = self.options.breakdown.then(CgBreakdown::default);
        // r = −Xᵀb (the plan's own pre-pass zeroes r: the workspace is reused), bound to
        // these labels on the first solve on them; then w = 0, p = −r (q = λ·p), ρ = r·r and
        // the target in one step.
        if !matches!(&self.xtb, Some((b, _)) if b == bb.raw()) {
            let mut xtb = new_batch(gpu, &self.options);
            xtb.phase("xtb");
            let op = Op {
                alpha: -1.0,
                y: bb,
                v: None,
                beta: 0.0,
                z: None,
                xty: true,
            };
            plan.record(&mut xtb, &op, &self.r)?;
            self.xtb = Some((bb.raw().clone(), xtb.into_recording()?));
        }
        let mut batch = new_batch(gpu, &self.options);
        if let Some((_, xtb)) = &self.xtb {
            batch.append(xtb, 1)?;
        }
        batch.append(&self.start, 1)?;
        let options = &self.options;
        let (mut recorded, mut chunk, mut submissions) = (0usize, options.chunk, 0usize);
        let staged = if self.stage_w {
            self.w_at + n
        } else {
            self.state_len
        };
        let mut reported = 0;
        let mut residuals = vec![];
        let (state, w_staged) = loop {
            let end = recorded + chunk.min(options.max_iter - recorded);
            if recorded == 0 && end > 0 {
                batch.append(&self.first, 1)?;
                recorded = 1;
            }
            batch.append(&self.later, end - recorded)?;
            recorded = end;
            // The state's copy (and w's, in the same buffer) rides at the end of the batch:
            // one submission, one map, and the host waits once.
            self.stage.copy_in(&mut batch, &self.st, staged)?;
            let (submission, phases) = batch.submit_nowait_phased()?;
            submissions += 1;
            let copy = self.stage.mapped_after(submission, staged);
            let waited = Instant::now();
            let view = self.stage.view(self.stage.wait(gpu, copy)?)?;
            let state = view[..self.state_len].to_vec();
            let stop = state[slot::STOP as usize] != 0.0 || recorded >= options.max_iter;
            let w_now = (stop && self.stage_w).then(|| view[self.w_at..self.w_at + n].to_vec());
            drop(view);
            wait_seconds += waited.elapsed().as_secs_f64();
            if let (Some(b), Some(t)) = (&mut breakdown, phases) {
                // Already done on the device: the read costs a map, left out of the time.
                let paused = Instant::now();
                b.add(&t.read(gpu)?);
                untimed += paused.elapsed().as_secs_f64();
            }
            let done = state[slot::ITERS as usize] as usize;
            let log = &state[slot::LOG as usize..];
            if residuals.is_empty() {
                residuals.push((log[0] as f64).sqrt());
            }
            for (i, &rr) in log.iter().enumerate().take(done + 1).skip(reported + 1) {
                residuals.push((rr as f64).sqrt());
                progress(i, (rr as f64).sqrt());
            }
            reported = done;
            if stop {
                break (state, w_now);
            }
            batch = new_batch(gpu, options);
            chunk *= 2;
        };
        let iterations = state[slot::ITERS as usize] as usize;
        if state[slot::STOP as usize] == 2.0 {
            return Err(Error::Check {
                kernel: "linreg.cg".into(),
                message: format!(
                    "p·q = {} at iteration {iterations}: XᵀX + λI is not positive definite in f32",
                    state[slot::PQ as usize]
                ),
            });
        }
        let mut readbacks = submissions;
        let w = match w_staged {
            Some(w) => w,
            None => {
                // n above `stage_w_max`: one read of w, through a staging buffer of its own
                // (not kept: as large as w).
                readbacks += 1;
                let waited = Instant::now();
                let stage = Staging::new(gpu, "linreg.w.stage", n)?;
                let copy = stage.copy_from(gpu, &self.st, self.w_at..self.w_at + n)?;
                let w = stage.collect(gpu, copy)?;
                wait_seconds += waited.elapsed().as_secs_f64();
                w
            }
        };
        let seconds = start.elapsed().as_secs_f64() - untimed;
        if let Some(b) = &mut breakdown {
            b.finish(seconds - wait_seconds, wait_seconds);
        }
        Ok(CgReport {
            w,
            iterations,
            converged: state[slot::RR as usize] <= state[slot::TARGET as usize],
            submissions,
            readbacks,
            residuals,
            seconds,
            record_seconds: seconds - wait_seconds,
            wait_seconds,
            breakdown,
        })
    }
}

/// The steps' scalar settings under `options` (max_iter checked by [`CgSolver::new`]).
fn settings(options: &CgOptions, onto_q: bool) -> CgSettings {
    CgSettings {
        tol2: (options.tol * options.tol) as f32,
        max_iter: options.max_iter as u32,
        lambda: options.lambda,
        init_q: onto_q,
    }
}

/// Slots of CG's device state (`shaders/fused/cg_step.wgsl`).
mod slot {
    pub const PQ: u32 = 0;
    pub const RR: u32 = 1;
    pub const STOP: u32 = 5;
    pub const ITERS: u32 = 6;
    pub const TARGET: u32 = 7;
    pub const LOG: u32 = 8;
}

/// Root-mean-square error of X·w against b, in f64 on the host.
pub fn rmse(x: Matrix, w: &[f32], b: &[f32]) -> f64 {
    let w: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let m = x.shape().0;
    let mut sq = 0.0;
    for (r, &br) in b.iter().enumerate().take(m) {
        let e = row_dot(x, r, &w) - br as f64;
        sq += e * e;
    }
    (sq / m.max(1) as f64).sqrt()
}

/// Synthetic regression labels b = X·w_true + 0.1·noise, w_true and noise uniform in [−1, 1]
/// (seeded): a problem with a known good fit, for generated inputs.
pub fn synthetic_labels(x: Matrix, seed: u64) -> Vec<f32> {
    let (m, n) = x.shape();
    let w_true = crate::gen::dense_uniform(1, n, seed).data;
    let noise = crate::gen::dense_uniform(1, m, seed + 1).data;
    let w64: Vec<f64> = w_true.iter().map(|&v| v as f64).collect();
    (0..m)
        .map(|r| (row_dot(x, r, &w64) + 0.1 * noise[r] as f64) as f32)
        .collect()
}

fn row_dot(x: Matrix, r: usize, w: &[f64]) -> f64 {
    match x {
        Matrix::Sparse(s) => s
            .row_range(r)
            .map(|e| s.values[e] as f64 * w[s.col_idx[e] as usize])
            .sum(),
        Matrix::Dense(d) => d.row(r).iter().zip(w).map(|(a, b)| *a as f64 * b).sum(),
    }
}

/// max |w − w_twin| / max |w_twin| (NaN in w gives infinity): how far the GPU weights are from
/// the f64 twin's.
pub fn weights_rel_diff(w: &[f32], twin: &[f64]) -> f64 {
    let scale = twin.iter().fold(0f64, |m, v| m.max(v.abs()));
    let diff = w.iter().zip(twin).fold(0f64, |m, (g, t)| {
        let d = (*g as f64 - t).abs();
        if d.is_nan() {
            f64::INFINITY
        } else {
            m.max(d)
        }
    });
    if w.len() != twin.len() {
        return f64::INFINITY;
    }
    diff / scale.max(f64::MIN_POSITIVE)
}
