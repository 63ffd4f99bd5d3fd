//! L2-regularized logistic regression by trust-region Newton-CG (TRON, as in LIBLINEAR) on
//! the GPU: minimizes f(w) = λ/2·‖w‖² + Σ_r log(1 + e^(−y_r·x_rᵀw)) for labels y = ±1.
//! Gradients are λ·w + Xᵀc and Hessian-vector products λ·d + Xᵀ(D ⊙ (X·d)) — the fused
//! pattern with v = D = σ(1 − σ) — with the per-row terms from `fused.logistic`. Only the
//! scalars the method needs (dot products, the loss) are read back; the vector work between
//! two such reads is recorded into one pending batch and submitted with the read. Sparse X.

use std::time::Instant;

use serde::Serialize;

use crate::fused::kernels::logistic;
use crate::fused::vectors::{axpy, axpy_dev, dot, DOT_GROUPS, NO_COEF};
use crate::fused::{Op, Plan};
use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec};
use crate::sparse::Csr;
use crate::{Error, Result};

/// TRON options.
#[derive(Clone, Debug)]
pub struct TronOptions {
    /// Ridge term λ (LIBLINEAR's 1/C).
    pub lambda: f32,
    /// Stop when ‖∇f‖ ≤ eps·‖∇f(0)‖.
    pub eps: f64,
    /// Most Newton iterations.
    pub max_iter: usize,
    /// Most CG iterations per Newton step.
    pub max_cg: usize,
}

impl Default for TronOptions {
    fn default() -> Self {
        TronOptions {
            lambda: 1.0,
            eps: 1e-3,
            max_iter: 50,
            max_cg: 100,
        }
    }
}

/// The outcome of [`logreg_tron`].
#[derive(Clone, Debug, Serialize)]
pub struct TronReport {
    /// The weights.
    pub w: Vec<f32>,
    /// Newton iterations.
    pub iterations: usize,
    /// f(w) after each iteration (the first entry at w = 0).
    pub losses: Vec<f64>,
    /// CG iterations in all.
    pub cg_iterations: usize,
    /// CG runs that ended on the trust region's boundary.
    pub boundary_steps: usize,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// Labels as ±1: positive labels become +1, all others (0, −1 …) −1.
pub fn signed_labels(labels: &[f32]) -> Vec<f32> {
    labels
        .iter()
        .map(|&l| if l > 0.0 { 1.0 } else { -1.0 })
        .collect()
}

/// What TRON needs of its vectors: the GPU ([`logreg_tron`]) and the f64 twin
/// ([`crate::fused::cpu::LogregTwin`]) run the same algorithm ([`tron`]) on these.
pub trait TronOps {
    /// A vector of n weights.
    type V;
    /// A new zero vector of n.
    fn zeros(&self, what: &str) -> Result<Self::V>;
    /// a·b.
    fn dot(&self, a: &Self::V, b: &Self::V) -> Result<f64>;
    /// w = a·x + b·z (a = 0 never reads x, b = 0 never reads z; x may be w).
    fn axpy(&self, a: f32, x: &Self::V, b: f32, z: &Self::V, w: &Self::V) -> Result<()>;
    /// f(w); keeps w's row terms for the next [`TronOps::grad`].
    fn fun(&mut self, w: &Self::V) -> Result<f64>;
    /// g = ∇f(w) at the w of the last `fun`; also keeps D for [`TronOps::hess`].
    fn grad(&mut self, w: &Self::V, g: &Self::V) -> Result<()>;
    /// hd = ∇²f·d with the D of the last `grad`.
    fn hess(&self, d: &Self::V, hd: &Self::V) -> Result<()>;
}

/// What [`tron`] returns: (w, iterations, objective per iteration, CG iterations, CG runs
/// ended on the trust region's boundary).
pub type Tron<V> = (V, usize, Vec<f64>, usize, usize);

/// The trust-region Newton method of LIBLINEAR's `tron.cpp` on `ops`; returns
/// (w, iterations, objective per iteration, CG iterations, CG runs ended on the boundary).
pub fn tron<O: TronOps>(
    ops: &mut O,
    options: &TronOptions,
    mut progress: impl FnMut(usize, f64),
) -> Result<Tron<O::V>> {
    let [w, w_new, g, s, r, d, hd] = [
        ops.zeros("logreg.w")?,
        ops.zeros("logreg.w_new")?,
        ops.zeros("logreg.g")?,
        ops.zeros("logreg.s")?,
        ops.zeros("logreg.r")?,
        ops.zeros("logreg.d")?,
        ops.zeros("logreg.hd")?,
    ];
    let mut f = ops.fun(&w)?;
    ops.grad(&w, &g)?;
    let gnorm0 = ops.dot(&g, &g)?.sqrt();
    let mut gnorm = gnorm0;
    let mut delta = gnorm0;
    let mut losses = vec![f];
    let (mut iterations, mut cg_total, mut bounds) = (0, 0, 0);
    while iterations < options.max_iter && gnorm > options.eps * gnorm0 {
        // Truncated CG for H·s = −g inside ‖s‖ ≤ Δ (Steihaug).
        ops.axpy(0.0, &g, 0.0, &g, &s)?;
        ops.axpy(0.0, &g, -1.0, &g, &r)?;
        ops.axpy(0.0, &g, -1.0, &g, &d)?;
        let mut rtr = gnorm * gnorm;
        let cgtol = 0.1 * gnorm;
        for _ in 0..options.max_cg {
            if rtr.sqrt() <= cgtol {
                break;
            }
            cg_total += 1;
            ops.hess(&d, &hd)?;
            let alpha = rtr / ops.dot(&d, &hd)?;
            ops.axpy(1.0, &s, alpha as f32, &d, &s)?;
            if ops.dot(&s, &s)?.sqrt() > delta {
                // Back to the boundary: s + τ·d with ‖s + τ·d‖ = Δ.
                ops.axpy(1.0, &s, -alpha as f32, &d, &s)?;
                let (std, sts, dtd) = (ops.dot(&s, &d)?, ops.dot(&s, &s)?, ops.dot(&d, &d)?);
                let dsq = delta * delta;
                let rad = (std * std + dtd * (dsq - sts)).max(0.0).sqrt();
                let tau = if std >= 0.0 {
                    (dsq - sts) / (std + rad)
                } else {
                    (rad - std) / dtd
                };
                ops.axpy(1.0, &s, tau as f32, &d, &s)?;
                ops.axpy(1.0, &r, -tau as f32, &hd, &r)?;
                bounds += 1;
                break;
            }
            ops.axpy(1.0, &r, -alpha as f32, &hd, &r)?;
            let rnew = ops.dot(&r, &r)?;
            ops.axpy((rnew / rtr) as f32, &d, 1.0, &r, &d)?;
            rtr = rnew;
        }
        ops.axpy(1.0, &w, 1.0, &s, &w_new)?;
        let gs = ops.dot(&g, &s)?;
        let prered = -0.5 * (gs - ops.dot(&s, &r)?);
        let fnew = ops.fun(&w_new)?;
        let actred = f - fnew;
        let snorm = ops.dot(&s, &s)?.sqrt();
        if iterations == 0 {
            delta = delta.min(snorm);
        }
        delta = radius(delta, snorm, gs, f, fnew, prered);
        if actred > ETA0 * prered {
            ops.axpy(1.0, &w_new, 0.0, &w_new, &w)?;
            f = fnew;
            ops.grad(&w, &g)?;
            gnorm = ops.dot(&g, &g)?.sqrt();
        }
        iterations += 1;
        losses.push(f);
        progress(iterations, f);
        if !f.is_finite() || delta <= 0.0 {
            break;
        }
    }
    Ok((w, iterations, losses, cg_total, bounds))
}

/// A step is taken when the actual reduction exceeds this share of the predicted one.
const ETA0: f64 = 1e-4;

/// LIBLINEAR's trust-region radius update after a step s (‖s‖ = `snorm`, g·s = `gs`) took f
/// to `fnew` against the quadratic model's predicted reduction `prered`.
fn radius(delta: f64, snorm: f64, gs: f64, f: f64, fnew: f64, prered: f64) -> f64 {
    let (eta1, eta2) = (0.25, 0.75);
    let (sigma1, sigma2, sigma3) = (0.25, 0.5, 4.0);
    let actred = f - fnew;
    let alpha = if fnew - f - gs <= 0.0 {
        sigma3
    } else {
        f64::max(sigma1, -0.5 * (gs / (fnew - f - gs)))
    };
    if actred < ETA0 * prered {
        f64::min(f64::max(alpha, sigma1) * snorm, sigma2 * delta)
    } else if actred < eta1 * prered {
        f64::max(sigma1 * delta, f64::min(alpha * snorm, sigma2 * delta))
    } else if actred < eta2 * prered {
        f64::max(sigma1 * delta, f64::min(alpha * snorm, sigma3 * delta))
    } else {
        f64::max(delta, f64::min(alpha * snorm, sigma3 * delta))
    }
}

struct Device<'a> {
    gpu: &'a Gpu,
    /// Work recorded since the last read, submitted with the next one (in order).
    pending: std::cell::RefCell<Batch<'a>>,
    plan: &'a Plan,
    lambda: f32,
    labels: GpuBuffer<f32>,
    ones: GpuBuffer<f32>,
    rows: [GpuBuffer<f32>; 3],
    part: GpuBuffer<f32>,
    scalar: GpuBuffer<f32>,
    /// D of the last gradient (the Hessian's row weights).
    dd: GpuBuffer<f32>,
    /// TRON's device state ([`ts`]).
    st: GpuBuffer<f32>,
}

impl TronOps for Device<'_> {
    type V = GpuBuffer<f32>;

    fn zeros(&self, what: &str) -> Result<Self::V> {
        GpuBuffer::zeroed(self.gpu, what, self.plan.n)
    }

    fn dot(&self, a: &Self::V, b: &Self::V) -> Result<f64> {
        dot(
            &mut self.pending.borrow_mut(),
            a,
            b,
            &self.part,
            &self.scalar,
            0,
        )?;
        self.flush()?;
        Ok(self.scalar.read(self.gpu)?[0] as f64)
    }

    fn axpy(&self, a: f32, x: &Self::V, b: f32, z: &Self::V, w: &Self::V) -> Result<()> {
        axpy(&mut self.pending.borrow_mut(), self.plan.n, a, x, b, z, w)
    }

    fn fun(&mut self, w: &Self::V) -> Result<f64> {
        let [loss, coef, dd] = &self.rows;
        {
            let batch = &mut self.pending.borrow_mut();
            logistic(self.plan, batch, w, &self.labels, [loss, coef, dd])?;
            dot(batch, loss, &self.ones, &self.part, &self.scalar, 0)?;
        }
        self.flush()?;
        let data = self.scalar.read(self.gpu)?[0] as f64;
        Ok(data + 0.5 * self.lambda as f64 * self.dot(w, w)?)
    }

    fn grad(&mut self, w: &Self::V, g: &Self::V) -> Result<()> {
        let batch = &mut self.pending.borrow_mut();
        let op = Op {
            alpha: 1.0,
            y: &self.rows[1],
            v: None,
            beta: self.lambda,
            z: Some(w),
            xty: true,
        };
        self.plan.record(batch, &op, g)?;
        batch.copy(self.rows[2].raw(), self.dd.raw(), self.plan.m as u64 * 4);
        Ok(())
    }

    fn hess(&self, d: &Self::V, hd: &Self::V) -> Result<()> {
        let batch = &mut self.pending.borrow_mut();
        let op = Op {
            alpha: 1.0,
            y: d,
            v: Some(&self.dd),
            beta: self.lambda,
            z: Some(d),
            xty: false,
        };
        self.plan.record(batch, &op, hd)
    }
}

impl Device<'_> {
    /// Submits the pending work and waits for it.
    fn flush(&self) -> Result<()> {
        std::mem::replace(&mut *self.pending.borrow_mut(), Batch::new(self.gpu)).submit()
    }

    /// Submits the pending work and reads the device state back.
    fn state(&self) -> Result<Vec<f32>> {
        self.flush()?;
        self.st.read(self.gpu)
    }

    /// Records `fused.tron_scalars` in `mode`.
    fn scalars(&self, batch: &mut Batch, mode: u32, delta: f32, max_cg: u32) -> Result<()> {
        let gpu = self.gpu;
        let k = gpu.kernel(&KernelSpec {
            name: "fused/tron_scalars",
            defines: vec![],
            constants: vec![],
            bindings: &[Binding::Uniform, Binding::ReadWrite],
        })?;
        let params = gpu.uniform("fused.tron_scalars", &[mode, delta.to_bits(), max_cg, 0]);
        let bg = k.bind(gpu, &[&params, self.st.raw()])?;
        batch.dispatch(&k, bg, [1, 1, 1])
    }

    /// Records out[slot] = a·b.
    fn dot_to(
        &self,
        batch: &mut Batch,
        a: &GpuBuffer<f32>,
        b: &GpuBuffer<f32>,
        slot: u32,
    ) -> Result<()> {
        dot(batch, a, b, &self.part, &self.st, slot)
    }

    /// Records one truncated-CG iteration, gated by the state's stop flag (the boundary
    /// branch by OUT): hd = H·d; α = r·r/d·hd; s += α·d; if ‖s‖ > Δ: s −= α·d, τ from s·d,
    /// s·s, d·d, s += τ·d, r −= τ·hd and CG ends; else r −= α·hd, β = r·r/ρ, d = r + β·d.
    fn cg_iteration(&self, [s, r, d, hd]: [&GpuBuffer<f32>; 4], max_cg: u32) -> Result<()> {
        let n = self.plan.n;
        let st = &self.st;
        let batch = &mut self.pending.borrow_mut();
        batch.begin_gate(st, ts::STOP)?;
        let op = Op {
            alpha: 1.0,
            y: d,
            v: Some(&self.dd),
            beta: self.lambda,
            z: Some(d),
            xty: false,
        };
        self.plan.record(batch, &op, hd)?;
        self.dot_to(batch, d, hd, ts::DHD)?;
        self.scalars(batch, 1, 0.0, max_cg)?;
        axpy_dev(batch, n, (1.0, NO_COEF), (1.0, ts::ALPHA), d, s, st)?;
        self.dot_to(batch, s, s, ts::SS)?;
        self.scalars(batch, 2, 0.0, max_cg)?;
        batch.end_gate()?;
        // The boundary: runs only when this iteration's s left the region.
        batch.begin_gate(st, ts::OUT)?;
        axpy_dev(batch, n, (1.0, NO_COEF), (-1.0, ts::ALPHA), d, s, st)?;
        self.dot_to(batch, s, d, ts::SD)?;
        self.dot_to(batch, s, s, ts::SS)?;
        self.dot_to(batch, d, d, ts::DD)?;
        self.scalars(batch, 3, 0.0, max_cg)?;
        axpy_dev(batch, n, (1.0, NO_COEF), (1.0, ts::TAU), d, s, st)?;
        axpy_dev(batch, n, (1.0, NO_COEF), (1.0, ts::RCOEF), hd, r, st)?;
        batch.end_gate()?;
        // Inside the region (the boundary set STOP).
        batch.begin_gate(st, ts::STOP)?;
        axpy_dev(batch, n, (1.0, NO_COEF), (1.0, ts::RCOEF), hd, r, st)?;
        self.dot_to(batch, r, r, ts::RR)?;
        self.scalars(batch, 4, 0.0, max_cg)?;
        axpy_dev(batch, n, (1.0, ts::BETA), (1.0, NO_COEF), r, d, st)?;
        batch.end_gate()
    }
}

/// Slots of TRON's device state (`shaders/fused/tron_scalars.wgsl`; from GS on, the trial
/// step's scalars read back once per Newton iteration).
mod ts {
    pub const DHD: u32 = 0;
    pub const SS: u32 = 1;
    pub const RR: u32 = 2;
    pub const ALPHA: u32 = 4;
    pub const RCOEF: u32 = 5;
    pub const STOP: u32 = 6;
    pub const OUT: u32 = 7;
    pub const TAU: u32 = 8;
    pub const BETA: u32 = 9;
    pub const ITERS: u32 = 12;
    pub const SD: u32 = 13;
    pub const DD: u32 = 14;
    pub const GS: u32 = 15;
    pub const SR: u32 = 16;
    pub const SNORM2: u32 = 17;
    pub const LOSS: u32 = 18;
    pub const WW: u32 = 19;
    pub const GG: u32 = 20;
    pub const BOUNDS: u32 = 21;
    pub const LEN: usize = 22;
}

/// TRON with its CG on the device ([`tron`]'s algorithm): each Newton iteration records the
/// CG iterations in chunks (8, then doubling) gated by the device's stop flag, reading back
/// only the state (one read per chunk, for the flag), then records the trial point's scalars
/// (g·s, s·r, s·s, its loss and ‖w + s‖²) and reads them once for the trust-region step, and
/// after an accepted step reads g·g once. Returns what [`tron`] returns.
fn tron_device(
    dev: &mut Device,
    options: &TronOptions,
    mut progress: impl FnMut(usize, f64),
) -> Result<Tron<GpuBuffer<f32>>> {
    let [w, w_new, g, s, r, d, hd] = [
        "logreg.w",
        "logreg.w_new",
        "logreg.g",
        "logreg.s",
        "logreg.r",
        "logreg.d",
        "logreg.hd",
    ]
    .map(|what| dev.zeros(what));
    let (w, w_new, g, s, r, d, hd) = (w?, w_new?, g?, s?, r?, d?, hd?);
    let max_cg = u32::try_from(options.max_cg)
        .map_err(|_| Error::Option(format!("{} CG iterations per step", options.max_cg)))?;
    let mut f = dev.fun(&w)?;
    dev.grad(&w, &g)?;
    let gnorm0 = dev.dot(&g, &g)?.sqrt();
    let mut gnorm = gnorm0;
    let mut delta = gnorm0;
    let mut losses = vec![f];
    let (mut iterations, mut cg_total) = (0, 0);
    let lambda = dev.lambda as f64;
    let n = dev.plan.n;
    while iterations < options.max_iter && gnorm > options.eps * gnorm0 {
        {
            let batch = &mut dev.pending.borrow_mut();
            axpy(batch, n, 0.0, &g, 0.0, &g, &s)?;
            axpy(batch, n, 0.0, &g, -1.0, &g, &r)?;
            axpy(batch, n, 0.0, &g, -1.0, &g, &d)?;
            dev.dot_to(batch, &r, &r, ts::RR)?;
            dev.scalars(batch, 0, delta as f32, max_cg)?;
        }
        let (mut recorded, mut chunk) = (0usize, 8usize);
        let state = loop {
            for _ in 0..chunk.min(options.max_cg - recorded) {
                dev.cg_iteration([&s, &r, &d, &hd], max_cg)?;
                recorded += 1;
            }
            let state = dev.state()?;
            if state[ts::STOP as usize] != 0.0 || recorded >= options.max_cg {
                break state;
            }
            chunk *= 2;
        };
        cg_total += state[ts::ITERS as usize] as usize;
        // The trial point: its scalars in one read.
        {
            let batch = &mut dev.pending.borrow_mut();
            axpy(batch, n, 1.0, &w, 1.0, &s, &w_new)?;
            dev.dot_to(batch, &g, &s, ts::GS)?;
            dev.dot_to(batch, &s, &r, ts::SR)?;
            dev.dot_to(batch, &s, &s, ts::SNORM2)?;
            let [loss, coef, dd] = &dev.rows;
            logistic(dev.plan, batch, &w_new, &dev.labels, [loss, coef, dd])?;
            dev.dot_to(batch, loss, &dev.ones, ts::LOSS)?;
            dev.dot_to(batch, &w_new, &w_new, ts::WW)?;
        }
        let t = dev.state()?;
        let gs = t[ts::GS as usize] as f64;
        let prered = -0.5 * (gs - t[ts::SR as usize] as f64);
        let fnew = t[ts::LOSS as usize] as f64 + 0.5 * lambda * t[ts::WW as usize] as f64;
        let snorm = (t[ts::SNORM2 as usize] as f64).sqrt();
        if iterations == 0 {
            delta = delta.min(snorm);
        }
        delta = radius(delta, snorm, gs, f, fnew, prered);
        if f - fnew > ETA0 * prered {
            dev.axpy(1.0, &w_new, 0.0, &w_new, &w)?;
            f = fnew;
            // The row terms are w_new's = w's now.
            dev.grad(&w, &g)?;
            {
                let batch = &mut dev.pending.borrow_mut();
                dev.dot_to(batch, &g, &g, ts::GG)?;
            }
            gnorm = (dev.state()?[ts::GG as usize] as f64).sqrt();
        }
        iterations += 1;
        losses.push(f);
        progress(iterations, f);
        if !f.is_finite() || delta <= 0.0 {
            break;
        }
    }
    let bounds = dev.state()?[ts::BOUNDS as usize] as usize;
    Ok((w, iterations, losses, cg_total, bounds))
}

/// The per-row terms of `fused.logistic` at weights `w` (labels ±1 or 0/1), read back as
/// [loss, gradient weights, Hessian weights]: for checking the kernel against
/// [`crate::fused::cpu::logistic`].
pub fn row_terms(gpu: &Gpu, plan: &Plan, w: &[f32], labels: &[f32]) -> Result<[Vec<f32>; 3]> {
    if w.len() != plan.n || labels.len() != plan.m {
        return Err(Error::Shape(format!(
            "logistic terms on X {}×{} need {} weights and {} labels, got {} and {}",
            plan.m,
            plan.n,
            plan.n,
            plan.m,
            w.len(),
            labels.len()
        )));
    }
    let wb = GpuBuffer::upload(gpu, "logreg.w", w)?;
    let yb = GpuBuffer::upload(gpu, "logreg.labels", &signed_labels(labels))?;
    let out = [0, 1, 2].map(|_| GpuBuffer::filled(gpu, "logreg.rows", plan.m, f32::NAN));
    let [a, b, c] = out;
    let (a, b, c) = (a?, b?, c?);
    let mut batch = Batch::new(gpu);
    logistic(plan, &mut batch, &wb, &yb, [&a, &b, &c])?;
    batch.submit()?;
    Ok([a.read(gpu)?, b.read(gpu)?, c.read(gpu)?])
}

/// Trains on `plan`'s (sparse) X with labels (±1 or 0/1); `progress(iteration, f)` is told
/// each Newton iteration's objective.
pub fn logreg_tron(
    gpu: &Gpu,
    plan: &Plan,
    labels: &[f32],
    options: &TronOptions,
    mut progress: impl FnMut(usize, f64),
) -> Result<TronReport> {
    if labels.len() != plan.m {
        return Err(Error::Shape(format!(
            "logistic regression on X {}×{} needs {} labels, got {}",
            plan.m,
            plan.n,
            plan.m,
            labels.len()
        )));
    }
    if let Some(i) = labels.iter().position(|v| !v.is_finite()) {
        return Err(Error::invalid(
            "labels",
            format!("label {i} is {}", labels[i]),
        ));
    }
    if !(options.lambda.is_finite() && options.lambda > 0.0) {
        return Err(Error::Option(format!(
            "λ = {} must be finite and > 0",
            options.lambda
        )));
    }
    // A NaN eps would stop before the first iteration and report an untrained model.
    if !(options.eps.is_finite() && options.eps >= 0.0) {
        return Err(Error::Option(format!(
            "eps = {} must be finite and ≥ 0",
            options.eps
        )));
    }
    let m = plan.m;
    let start = Instant::now();
    let zeros = |what: &str, len: usize| GpuBuffer::<f32>::zeroed(gpu, what, len);
    let mut dev = Device {
        gpu,
        pending: std::cell::RefCell::new(Batch::new(gpu)),
        plan,
        lambda: options.lambda,
        labels: GpuBuffer::upload(gpu, "logreg.labels", &signed_labels(labels))?,
        ones: GpuBuffer::filled(gpu, "logreg.ones", m, 1.0)?,
        rows: [
            zeros("logreg.loss", m)?,
            zeros("logreg.coef", m)?,
            zeros("logreg.dd", m)?,
        ],
        part: zeros("logreg.dot_partials", DOT_GROUPS as usize)?,
        scalar: zeros("logreg.scalar", 1)?,
        dd: zeros("logreg.d_saved", m)?,
        st: zeros("logreg.state", ts::LEN)?,
    };
    let (w, iterations, losses, cg_iterations, boundary_steps) =
        tron_device(&mut dev, options, &mut progress)?;
    dev.flush()?;
    Ok(TronReport {
        w: w.read(gpu)?,
        iterations,
        losses,
        cg_iterations,
        boundary_steps,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// Validation metrics of weights `w` on (`x`, labels): mean log-loss and ROC AUC (ties
/// counted half), in f64 on the host.
pub fn evaluate(x: &Csr, labels: &[f32], w: &[f32]) -> (f64, f64) {
    let y = signed_labels(labels);
    let scores: Vec<f64> = (0..x.nrows)
        .map(|r| {
            x.row_range(r)
                .map(|e| {
                    x.values[e] as f64 * w.get(x.col_idx[e] as usize).copied().unwrap_or(0.0) as f64
                })
                .sum()
        })
        .collect();
    let m = x.nrows.max(1) as f64;
    let logloss = scores
        .iter()
        .zip(&y)
        .map(|(&s, &y)| {
            let t = y as f64 * s;
            (-t).max(0.0) + (-t.abs()).exp().ln_1p()
        })
        .sum::<f64>()
        / m;
    let mut order: Vec<usize> = (0..scores.len()).collect();
    order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
    // Mann–Whitney U with average ranks for ties.
    let (mut rank_sum, mut pos, mut i) = (0.0, 0usize, 0);
    while i < order.len() {
        let mut j = i;
        while j + 1 < order.len() && scores[order[j + 1]] == scores[order[i]] {
            j += 1;
        }
        let avg = (i + j) as f64 / 2.0 + 1.0;
        for &k in &order[i..=j] {
            if y[k] > 0.0 {
                rank_sum += avg;
                pos += 1;
            }
        }
        i = j + 1;
    }
    let neg = order.len() - pos;
    let auc = if pos == 0 || neg == 0 {
        f64::NAN
    } else {
        (rank_sum - (pos * (pos + 1)) as f64 / 2.0) / (pos as f64 * neg as f64)
    };
    (logloss, auc)
}
