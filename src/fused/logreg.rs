//! L2-regularized logistic regression by trust-region Newton-CG (TRON, as in LIBLINEAR) on
//! the GPU: minimizes f(w) = λ/2·‖w‖² + Σ_r log(1 + e^(−y_r·x_rᵀw)) for labels y = ±1.
//! Gradients are λ·w + Xᵀc and Hessian-vector products λ·d + Xᵀ(D ⊙ (X·d)) — the fused
//! pattern with v = D = σ(1 − σ) — with the per-row terms from `fused.logistic`. Only the
//! scalars the method needs (dot products, the loss) are read back; the vector work between
//! two such reads is recorded into one pending batch and submitted with the read. Sparse X.

use std::time::Instant;

use serde::Serialize;

use crate::fused::kernels::logistic;
use crate::fused::vectors::{axpy, dot, DOT_GROUPS};
use crate::fused::{Op, Plan};
use crate::gpu::{Batch, Gpu, GpuBuffer};
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
/// ([`crate::fused::cpu::logreg_tron`]) run the same algorithm ([`tron`]) on these.
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

/// The trust-region Newton method of LIBLINEAR's `tron.cpp` on `ops`; returns
/// (w, iterations, objective per iteration, CG iterations).
pub fn tron<O: TronOps>(
    ops: &mut O,
    options: &TronOptions,
    mut progress: impl FnMut(usize, f64),
) -> Result<(O::V, usize, Vec<f64>, usize)> {
    let [w, w_new, g, s, r, d, hd] = [
        ops.zeros("logreg.w")?,
        ops.zeros("logreg.w_new")?,
        ops.zeros("logreg.g")?,
        ops.zeros("logreg.s")?,
        ops.zeros("logreg.r")?,
        ops.zeros("logreg.d")?,
        ops.zeros("logreg.hd")?,
    ];
    let (eta0, eta1, eta2) = (1e-4, 0.25, 0.75);
    let (sigma1, sigma2, sigma3) = (0.25, 0.5, 4.0);
    let mut f = ops.fun(&w)?;
    ops.grad(&w, &g)?;
    let gnorm0 = ops.dot(&g, &g)?.sqrt();
    let mut gnorm = gnorm0;
    let mut delta = gnorm0;
    let mut losses = vec![f];
    let (mut iterations, mut cg_total) = (0, 0);
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
        let alpha = if fnew - f - gs <= 0.0 {
            sigma3
        } else {
            f64::max(sigma1, -0.5 * (gs / (fnew - f - gs)))
        };
        delta = if actred < eta0 * prered {
            f64::min(f64::max(alpha, sigma1) * snorm, sigma2 * delta)
        } else if actred < eta1 * prered {
            f64::max(sigma1 * delta, f64::min(alpha * snorm, sigma2 * delta))
        } else if actred < eta2 * prered {
            f64::max(sigma1 * delta, f64::min(alpha * snorm, sigma3 * delta))
        } else {
            f64::max(delta, f64::min(alpha * snorm, sigma3 * delta))
        };
        if actred > eta0 * prered {
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
    Ok((w, iterations, losses, cg_total))
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
    };
    let (w, iterations, losses, cg_iterations) = tron(&mut dev, options, &mut progress)?;
    dev.flush()?;
    Ok(TronReport {
        w: w.read(gpu)?,
        iterations,
        losses,
        cg_iterations,
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
