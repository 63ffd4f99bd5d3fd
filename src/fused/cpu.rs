//! The f64 CPU twins: `sparse` and `dense` (the fused kernels `fused.sparse`, `fused.dense`,
//! whatever their aggregation), and `spmv`, `scale`, `axpy` (the unfused sequence's steps,
//! composed by `unfused`). Each returns, beside the result, the magnitude that bounds its
//! rounding error.

use crate::sparse::{Csr, Dense};

/// The operands of w = α·Xᵀ(v ⊙ (X·y)) + β·z on the host (`xty`: w = α·Xᵀ(v ⊙ y) + β·z,
/// y ∈ ℝᵐ).
#[derive(Clone, Copy, Debug)]
pub struct HostOp<'a> {
    /// α.
    pub alpha: f32,
    /// y ∈ ℝⁿ (ℝᵐ when `xty`).
    pub y: &'a [f32],
    /// Optional v ∈ ℝᵐ.
    pub v: Option<&'a [f32]>,
    /// β (0: z is never read).
    pub beta: f32,
    /// z ∈ ℝⁿ, needed when β ≠ 0.
    pub z: Option<&'a [f32]>,
    /// The α·Xᵀy instantiation: y is already the row vector.
    pub xty: bool,
}

/// A matrix as the twins see it: its rows as (column, value) pairs.
trait Rows {
    fn shape(&self) -> (usize, usize);
    fn for_row(&self, r: usize, f: impl FnMut(usize, f64));
}

impl Rows for Csr {
    fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }
    fn for_row(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        for e in self.row_range(r) {
            f(self.col_idx[e] as usize, self.values[e] as f64);
        }
    }
}

impl Rows for Dense {
    fn shape(&self) -> (usize, usize) {
        (self.nrows, self.ncols)
    }
    fn for_row(&self, r: usize, mut f: impl FnMut(usize, f64)) {
        for (j, &x) in self.row(r).iter().enumerate() {
            f(j, x as f64);
        }
    }
}

fn pattern(x: &impl Rows, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    let (m, n) = x.shape();
    let mut w = vec![0f64; n];
    let mut mag = vec![0f64; n];
    if op.beta != 0.0 {
        let z = op.z.expect("β ≠ 0 needs z");
        for j in 0..n {
            w[j] = op.beta as f64 * z[j] as f64;
            mag[j] = w[j].abs();
        }
    }
    let alpha = op.alpha as f64;
    for r in 0..m {
        let (mut s, mut s_abs) = if op.xty {
            (op.y[r] as f64, (op.y[r] as f64).abs())
        } else {
            let (mut s, mut a) = (0.0, 0.0);
            x.for_row(r, |j, x| {
                s += x * op.y[j] as f64;
                a += (x * op.y[j] as f64).abs();
            });
            (s, a)
        };
        if let Some(v) = op.v {
            s *= v[r] as f64;
            s_abs *= (v[r] as f64).abs();
        }
        x.for_row(r, |j, x| {
            w[j] += alpha * x * s;
            mag[j] += (alpha * x).abs() * s_abs;
        });
    }
    (w, mag)
}

/// Twin of `fused.sparse`: w and |α|·|X|ᵀ(|v| ⊙ |X||y|) + |β||z| in f64.
pub fn sparse(x: &Csr, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    pattern(x, op)
}

/// Twin of `fused.dense`.
pub fn dense(x: &Dense, op: &HostOp) -> (Vec<f64>, Vec<f64>) {
    pattern(x, op)
}

/// Twin of `fused.spmv`: p = X·y.
pub fn spmv(x: &Csr, y: &[f32]) -> Vec<f64> {
    (0..x.nrows)
        .map(|r| {
            let mut s = 0.0;
            x.for_row(r, |j, x| s += x * y[j] as f64);
            s
        })
        .collect()
}

/// Twin of `fused.scale`: p ⊙ v.
pub fn scale(v: &[f32], p: &[f64]) -> Vec<f64> {
    p.iter().zip(v).map(|(p, v)| p * *v as f64).collect()
}

/// Twin of `fused.axpy`: a·x + b·z (a = 0 never reads x, b = 0 never reads z).
pub fn axpy(a: f32, x: &[f64], b: f32, z: &[f32]) -> Vec<f64> {
    let n = x.len().max(z.len());
    (0..n)
        .map(|i| {
            let ax = if a != 0.0 { a as f64 * x[i] } else { 0.0 };
            let bz = if b != 0.0 {
                b as f64 * z[i] as f64
            } else {
                0.0
            };
            ax + bz
        })
        .collect()
}

/// Twin of `fused.gemv`: p = X·y, X dense.
pub fn gemv(x: &Dense, y: &[f32]) -> Vec<f64> {
    (0..x.nrows)
        .map(|r| {
            let mut s = 0.0;
            x.for_row(r, |j, x| s += x * y[j] as f64);
            s
        })
        .collect()
}

/// Twin of `fused.gemv_t` after the β·z pre-pass: w = α·Xᵀp + βz, X dense.
pub fn gemv_t(x: &Dense, p: &[f64], alpha: f32, bz: Vec<f64>) -> Vec<f64> {
    let mut w = bz;
    w.resize(x.ncols, 0.0);
    for (r, &pr) in p.iter().enumerate() {
        x.for_row(r, |j, x| w[j] += alpha as f64 * x * pr);
    }
    w
}

/// The unfused sequence on the host, step by step as the GPU runs it: p = X·y (or y), p ⊙= v,
/// w = β·z, w += α·Xᵀp. Equal to [`sparse`] up to rounding.
pub fn unfused(x: &Csr, op: &HostOp) -> Vec<f64> {
    let mut p = if op.xty {
        op.y.iter().map(|&y| y as f64).collect()
    } else {
        spmv(x, op.y)
    };
    if let Some(v) = op.v {
        p = scale(v, &p);
    }
    let mut w = axpy(0.0, &[], op.beta, op.z.unwrap_or(&[]));
    w.resize(x.ncols, 0.0);
    for (r, &pr) in p.iter().enumerate() {
        x.for_row(r, |j, x| w[j] += op.alpha as f64 * x * pr);
    }
    w
}

/// [`unfused`] on dense X: p = X·y (or y), p ⊙= v, w = β·z + α·Xᵀp.
pub fn unfused_dense(x: &Dense, op: &HostOp) -> Vec<f64> {
    let mut p = if op.xty {
        op.y.iter().map(|&y| y as f64).collect()
    } else {
        gemv(x, op.y)
    };
    if let Some(v) = op.v {
        p = scale(v, &p);
    }
    gemv_t(
        x,
        &p,
        op.alpha,
        axpy(0.0, &[], op.beta, op.z.unwrap_or(&[])),
    )
}

/// The number of f32 roundings any one element of w sees at most: a row's dot product
/// (its length), then one addition per row touching the column, then α, v and β·z.
pub fn rounding_terms_sparse(x: &Csr) -> usize {
    let longest = (0..x.nrows)
        .map(|r| x.row_range(r).len())
        .max()
        .unwrap_or(0);
    let mut per_col = vec![0usize; x.ncols];
    for &j in &x.col_idx {
        per_col[j as usize] += 1;
    }
    longest + per_col.into_iter().max().unwrap_or(0) + 4
}

/// [`rounding_terms_sparse`] for a dense matrix: n + m + 4.
pub fn rounding_terms_dense(x: &Dense) -> usize {
    x.nrows + x.ncols + 4
}

/// The result of [`linreg_cg`].
#[derive(Clone, Debug)]
pub struct CgTwin {
    /// The solution.
    pub w: Vec<f64>,
    /// Iterations run.
    pub iterations: usize,
    /// ‖r‖ after each iteration (the first entry is the initial residual).
    pub residuals: Vec<f64>,
}

fn matvec(x: &impl Rows, p: &[f64]) -> Vec<f64> {
    (0..x.shape().0)
        .map(|r| {
            let mut s = 0.0;
            x.for_row(r, |j, x| s += x * p[j]);
            s
        })
        .collect()
}

fn matvec_t(x: &impl Rows, q: &[f64]) -> Vec<f64> {
    let mut w = vec![0.0; x.shape().1];
    for (r, &qr) in q.iter().enumerate() {
        x.for_row(r, |j, x| w[j] += x * qr);
    }
    w
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a * b).sum()
}

fn cg_on(x: &impl Rows, b: &[f32], lambda: f64, tol: f64, max_iter: usize) -> CgTwin {
    let b: Vec<f64> = b.iter().map(|&v| v as f64).collect();
    let n = x.shape().1;
    let mut w = vec![0.0; n];
    let mut r: Vec<f64> = matvec_t(x, &b).iter().map(|v| -v).collect();
    let mut p: Vec<f64> = r.iter().map(|v| -v).collect();
    let mut nr2 = dot(&r, &r);
    let target = nr2 * tol * tol;
    let mut residuals = vec![nr2.sqrt()];
    let mut iterations = 0;
    while iterations < max_iter && nr2 > target {
        let xp = matvec(x, &p);
        let q: Vec<f64> = matvec_t(x, &xp)
            .iter()
            .zip(&p)
            .map(|(q, p)| q + lambda * p)
            .collect();
        let alpha = nr2 / dot(&p, &q);
        for j in 0..n {
            w[j] += alpha * p[j];
            r[j] += alpha * q[j];
        }
        let old = nr2;
        nr2 = dot(&r, &r);
        for j in 0..n {
            p[j] = -r[j] + nr2 / old * p[j];
        }
        iterations += 1;
        residuals.push(nr2.sqrt());
    }
    CgTwin {
        w,
        iterations,
        residuals,
    }
}

/// Twin of the GPU linear-regression CG (Listing 1 of Ashari et al.) in f64: solves
/// (XᵀX + λI)·w = Xᵀb from w = 0 until ‖r‖ ≤ tol·‖r₀‖ or `max_iter` iterations.
pub fn linreg_cg(x: super::Matrix, b: &[f32], lambda: f64, tol: f64, max_iter: usize) -> CgTwin {
    match x {
        super::Matrix::Sparse(x) => cg_on(x, b, lambda, tol, max_iter),
        super::Matrix::Dense(x) => cg_on(x, b, lambda, tol, max_iter),
    }
}

/// The f64 twin of the GPU logistic regression: the same TRON
/// ([`crate::fused::logreg::tron`]) on f64 host vectors, with the row terms of
/// `fused.logistic`, the gradient λ·w + Xᵀc and the Hessian-vector product of the fused
/// pattern computed here in f64.
pub struct LogregTwin<'a> {
    x: &'a Csr,
    y: Vec<f64>,
    lambda: f64,
    coef: Vec<f64>,
    dd_next: Vec<f64>,
    dd: Vec<f64>,
}

impl<'a> LogregTwin<'a> {
    /// The twin on X with labels (±1 or 0/1) and ridge term λ.
    pub fn new(x: &'a Csr, labels: &[f32], lambda: f32) -> Self {
        LogregTwin {
            x,
            y: crate::fused::logreg::signed_labels(labels)
                .iter()
                .map(|&v| v as f64)
                .collect(),
            lambda: lambda as f64,
            coef: vec![0.0; x.nrows],
            dd_next: vec![0.0; x.nrows],
            dd: vec![0.0; x.nrows],
        }
    }
}

type Cell = std::cell::RefCell<Vec<f64>>;

impl crate::fused::logreg::TronOps for LogregTwin<'_> {
    type V = Cell;

    fn zeros(&self, _what: &str) -> crate::Result<Cell> {
        Ok(Cell::new(vec![0.0; self.x.ncols]))
    }

    fn dot(&self, a: &Cell, b: &Cell) -> crate::Result<f64> {
        Ok(dot(&a.borrow(), &b.borrow()))
    }

    fn axpy(&self, a: f32, x: &Cell, b: f32, z: &Cell, w: &Cell) -> crate::Result<()> {
        let new: Vec<f64> = {
            let (x, z) = (x.borrow(), z.borrow());
            (0..self.x.ncols)
                .map(|i| {
                    let ax = if a != 0.0 { a as f64 * x[i] } else { 0.0 };
                    let bz = if b != 0.0 { b as f64 * z[i] } else { 0.0 };
                    ax + bz
                })
                .collect()
        };
        *w.borrow_mut() = new;
        Ok(())
    }

    fn fun(&mut self, w: &Cell) -> crate::Result<f64> {
        let w = w.borrow();
        let z = matvec(self.x, &w);
        let mut loss = 0.0;
        for (r, &zr) in z.iter().enumerate() {
            let t = self.y[r] * zr;
            let e = (-t.abs()).exp();
            loss += e.ln_1p() + (-t).max(0.0);
            let sigma = if t < 0.0 {
                e / (1.0 + e)
            } else {
                1.0 / (1.0 + e)
            };
            self.coef[r] = (sigma - 1.0) * self.y[r];
            self.dd_next[r] = sigma * (1.0 - sigma);
        }
        Ok(loss + 0.5 * self.lambda * dot(&w, &w))
    }

    fn grad(&mut self, w: &Cell, g: &Cell) -> crate::Result<()> {
        let xtc = matvec_t(self.x, &self.coef);
        let w = w.borrow();
        *g.borrow_mut() = xtc
            .iter()
            .zip(w.iter())
            .map(|(a, w)| a + self.lambda * w)
            .collect();
        self.dd.clone_from(&self.dd_next);
        Ok(())
    }

    fn hess(&self, d: &Cell, hd: &Cell) -> crate::Result<()> {
        let d = d.borrow();
        let xd: Vec<f64> = matvec(self.x, &d)
            .iter()
            .zip(&self.dd)
            .map(|(a, b)| a * b)
            .collect();
        *hd.borrow_mut() = matvec_t(self.x, &xd)
            .iter()
            .zip(d.iter())
            .map(|(a, d)| a + self.lambda * d)
            .collect();
        Ok(())
    }
}

/// Twin of `fused.logistic`: per row, with t = y_r·(x_r·w), the loss log(1 + e^(−t)), the
/// gradient weight (σ(t) − 1)·y_r and the Hessian weight σ(t)(1 − σ(t)); labels ±1.
pub fn logistic(x: &Csr, w: &[f64], y: &[f64]) -> [Vec<f64>; 3] {
    let z = matvec(x, w);
    let mut out = [vec![0.0; x.nrows], vec![0.0; x.nrows], vec![0.0; x.nrows]];
    for (r, &zr) in z.iter().enumerate() {
        let t = y[r] * zr;
        let e = (-t.abs()).exp();
        let sigma = if t < 0.0 {
            e / (1.0 + e)
        } else {
            1.0 / (1.0 + e)
        };
        out[0][r] = e.ln_1p() + (-t).max(0.0);
        out[1][r] = (sigma - 1.0) * y[r];
        out[2][r] = sigma * (1.0 - sigma);
    }
    out
}

/// ‖(XᵀX + λI)·w − Xᵀb‖ in f64: how well `w` solves the regression's normal equations.
pub fn linreg_residual(x: super::Matrix, w: &[f32], b: &[f32], lambda: f64) -> f64 {
    let w: Vec<f64> = w.iter().map(|&v| v as f64).collect();
    let b: Vec<f64> = b.iter().map(|&v| v as f64).collect();
    let normal = |x: &dyn Fn(&[f64]) -> Vec<f64>, xt: &dyn Fn(&[f64]) -> Vec<f64>| {
        let q = xt(&x(&w));
        let xtb = xt(&b);
        q.iter()
            .zip(&xtb)
            .zip(&w)
            .map(|((q, t), w)| (q + lambda * w - t).powi(2))
            .sum::<f64>()
            .sqrt()
    };
    match x {
        super::Matrix::Sparse(s) => normal(&|p| matvec(s, p), &|q| matvec_t(s, q)),
        super::Matrix::Dense(d) => normal(&|p| matvec(d, p), &|q| matvec_t(d, q)),
    }
}
