//! The f64 CPU twin of the engine: Accums, loss and exact mini-batch SGD for the shipped
//! models, on the parameter layout the GPU uses (feature j's parameters at
//! `j·NPARAM .. (j+1)·NPARAM`, FM as `[w_j, v_j0 … v_j(k−1)]`, the bias last).

use crate::sparse::Csr;
use crate::wide::Model;

/// The Accums of one sample: `[w·x]` for the linear models; `[w·x, v_f·x (f < k),
/// Σ_f Σ_j v_jf² x_j²]` for FM.
pub fn accums(model: Model, params: &[f64], feats: &[u32], vals: &[f32]) -> Vec<f64> {
    let k = model.k();
    let np = model.params_per_feature();
    let mut a = vec![0.0; model.accums()];
    for (&j, &x) in feats.iter().zip(vals) {
        let p = &params[j as usize * np..(j as usize + 1) * np];
        let x = x as f64;
        a[0] += p[0] * x;
        for f in 0..k {
            let v = p[1 + f];
            a[1 + f] += v * x;
            a[1 + k] += v * v * x * x;
        }
    }
    a
}

/// ŷ from the Accums and the bias `b`.
pub fn score(model: Model, a: &[f64], b: f64) -> f64 {
    let k = model.k();
    let squares = if k > 0 { a[1 + k] } else { 0.0 };
    let pair: f64 = (0..k).map(|f| a[1 + f] * a[1 + f]).sum::<f64>() - squares;
    b + a[0] + 0.5 * pair
}

/// The bias: the last parameter.
pub fn bias(params: &[f64]) -> f64 {
    *params.last().expect("parameters end with the bias")
}

/// ŷ of row `i` of `x`.
pub fn predict(model: Model, params: &[f64], x: &Csr, i: usize) -> f64 {
    let r = x.row_range(i);
    let a = accums(model, params, &x.col_idx[r.clone()], &x.values[r]);
    score(model, &a, bias(params))
}

/// FM's ŷ by the naive pairwise sum b + w·x + Σ_{p<q} ⟨v_p, v_q⟩ x_p x_q: O(k·nnz²), the
/// reference for the O(k·nnz) form.
pub fn fm_naive(k: usize, params: &[f64], feats: &[u32], vals: &[f32]) -> f64 {
    let np = 1 + k;
    let p = |j: u32, i: usize| params[j as usize * np + i];
    let mut s = bias(params);
    for (a, (&ja, &xa)) in feats.iter().zip(vals).enumerate() {
        s += p(ja, 0) * xa as f64;
        for (&jb, &xb) in feats.iter().zip(vals).skip(a + 1) {
            let dot: f64 = (0..k).map(|f| p(ja, 1 + f) * p(jb, 1 + f)).sum();
            s += dot * xa as f64 * xb as f64;
        }
    }
    s
}

/// ∂ŷ/∂θ of one sample: (parameter index, derivative) for every parameter of every active
/// feature, and the bias (derivative 1) last. ∂ŷ/∂w_j = x_j; ∂ŷ/∂v_jf = x_j·(v_f·x) − v_jf·x_j².
pub fn score_grad(model: Model, params: &[f64], feats: &[u32], vals: &[f32]) -> Vec<(usize, f64)> {
    let k = model.k();
    let np = model.params_per_feature();
    let a = accums(model, params, feats, vals);
    let mut g = Vec::with_capacity(feats.len() * np + 1);
    for (&j, &x) in feats.iter().zip(vals) {
        let base = j as usize * np;
        let x = x as f64;
        g.push((base, x));
        for f in 0..k {
            g.push((base + 1 + f, x * a[1 + f] - params[base + 1 + f] * x * x));
        }
    }
    g.push((params.len() - 1, 1.0));
    g
}

/// (ℓ, dℓ/dŷ, ŷ) of row `i` with label `y` ∈ {−1, +1}.
pub fn sample_loss(model: Model, params: &[f64], x: &Csr, y: f32, i: usize) -> (f64, f64, f64) {
    let yhat = predict(model, params, x, i);
    let (l, d) = model.loss().eval(yhat, y as f64);
    (l, d, yhat)
}

/// One exact mini-batch SGD step over `rows`: every gradient at the current parameters, then
/// θ −= lr · (1/|rows|) Σ_i dℓ_i/dŷ · ∂ŷ_i/∂θ. Returns the summed loss of the mini-batch
/// before the step.
pub fn sgd_step(
    model: Model,
    params: &mut [f64],
    x: &Csr,
    y: &[f32],
    rows: &[usize],
    lr: f64,
) -> f64 {
    Sgd::new(params.len()).step(model, params, x, y, rows, lr)
}

/// [`sgd_step`] with scratch kept between steps, touching only the parameters of the
/// mini-batch's features (for epochs over large data).
pub struct Sgd {
    grad: Vec<f64>,
    touched: Vec<usize>,
    l2: f64,
}

impl Sgd {
    /// Scratch for `n_params` parameters.
    pub fn new(n_params: usize) -> Self {
        Sgd {
            grad: vec![0.0; n_params],
            touched: vec![],
            l2: 0.0,
        }
    }

    /// With L2 regularization λ on the parameters each sample touches: every sample's loss
    /// gains (λ/2) Σ_{j in the sample} ‖θ_j‖² (the bias is not regularized), so a feature is
    /// pulled toward 0 in proportion to how often it occurs.
    pub fn with_l2(mut self, l2: f64) -> Self {
        self.l2 = l2;
        self
    }

    /// Adds `d · ∂ŷ/∂θ` of row `i` (and the L2 term) into the gradient, scaled by `inv`.
    fn add_row(&mut self, model: Model, params: &[f64], x: &Csr, i: usize, d: f64, inv: f64) {
        let r = x.row_range(i);
        let bias = params.len() - 1;
        for (p, g) in score_grad(model, params, &x.col_idx[r.clone()], &x.values[r]) {
            if self.grad[p] == 0.0 {
                self.touched.push(p);
            }
            let reg = if p == bias { 0.0 } else { self.l2 * params[p] };
            self.grad[p] += inv * (d * g + reg);
        }
    }

    /// One exact mini-batch step (see [`sgd_step`]); returns the mini-batch's summed loss.
    pub fn step(
        &mut self,
        model: Model,
        params: &mut [f64],
        x: &Csr,
        y: &[f32],
        rows: &[usize],
        lr: f64,
    ) -> f64 {
        if rows.is_empty() {
            return 0.0;
        }
        let mut loss = 0.0;
        for &i in rows {
            let (l, d, _) = sample_loss(model, params, x, y[i], i);
            loss += l;
            self.add_row(model, params, x, i, d, 1.0);
        }
        let scale = lr / rows.len() as f64;
        // A gradient entry that sums to exactly 0 may be listed twice: the second visit
        // subtracts 0.
        for &p in &self.touched {
            params[p] -= scale * self.grad[p];
            self.grad[p] = 0.0;
        }
        self.touched.clear();
        loss
    }
}

/// Mean loss over every row of `x`.
pub fn mean_loss(model: Model, params: &[f64], x: &Csr, y: &[f32]) -> f64 {
    if y.is_empty() {
        return 0.0;
    }
    let s: f64 = (0..x.nrows)
        .map(|i| sample_loss(model, params, x, y[i], i).0)
        .sum();
    s / y.len() as f64
}

impl Sgd {
    /// Async mode's worst case, the twin of a window of mini-batches in flight together:
    /// the gradient of every mini-batch of `window` at the same parameters, each scaled by
    /// 1/|mini-batch| and summed, then θ_p −= `step[p]` · g_p (a step size per parameter,
    /// the bias last: lr times async mode's scale; lr alone is the plain sum, which a large
    /// window makes diverge). Returns the window's summed loss before the step.
    pub fn stale_step(
        &mut self,
        model: Model,
        params: &mut [f64],
        x: &Csr,
        y: &[f32],
        window: &[Vec<usize>],
        step: &[f64],
    ) -> f64 {
        let mut loss = 0.0;
        for rows in window.iter().filter(|r| !r.is_empty()) {
            let inv = 1.0 / rows.len() as f64;
            for &i in rows {
                let (l, d, _) = sample_loss(model, params, x, y[i], i);
                loss += l;
                self.add_row(model, params, x, i, d, inv);
            }
        }
        for &p in &self.touched {
            params[p] -= step[p] * self.grad[p];
            self.grad[p] = 0.0;
        }
        self.touched.clear();
        loss
    }
}
