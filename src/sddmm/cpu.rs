//! The f64 CPU twin of every SDDMM variant: P_ij = S_ij · Σ_k A_ik · B_jk in CSR order.

use crate::sparse::{Csr, Dense};

/// Reference SDDMM in f64, one value per nonzero of `s` in CSR order, and for each the
/// magnitude |S_ij| · Σ_k |A_ik · B_jk| that bounds its rounding error.
pub fn sddmm(s: &Csr, a: &Dense, b: &Dense) -> (Vec<f64>, Vec<f64>) {
    let k = a.ncols;
    let mut out = Vec::with_capacity(s.nnz());
    let mut mag = Vec::with_capacity(s.nnz());
    for i in 0..s.nrows {
        let ra = &a.data[i * k..(i + 1) * k];
        for e in s.row_range(i) {
            let j = s.col_idx[e] as usize;
            let (dot, abs) = dot_and_magnitude(ra, &b.data[j * k..(j + 1) * k]);
            let v = s.values[e] as f64;
            out.push(v * dot);
            mag.push(v.abs() * abs);
        }
    }
    (out, mag)
}

/// Σ x·y and Σ |x·y| in f64.
pub fn dot_and_magnitude(x: &[f32], y: &[f32]) -> (f64, f64) {
    x.iter().zip(y).fold((0.0, 0.0), |(dot, abs), (a, b)| {
        let t = *a as f64 * *b as f64;
        (dot + t, abs + t.abs())
    })
}

/// Compares a GPU result with the twin. Each element may differ by
/// (K + 4) · ε_f32 · |S_ij| Σ_k |A_ik B_jk| (f32 accumulation of K products in any order);
/// returns the largest error relative to that magnitude and the first violating index.
pub fn compare(gpu: &[f32], reference: &[f64], magnitude: &[f64], k: usize) -> Comparison {
    let tol_factor = (k as f64 + 4.0) * f32::EPSILON as f64;
    let mut worst = 0f64;
    let mut first_bad = None;
    for (e, ((&g, &r), &m)) in gpu.iter().zip(reference).zip(magnitude).enumerate() {
        let err = (g as f64 - r).abs();
        let scale = m.max(f32::MIN_POSITIVE as f64);
        let rel = if g.is_finite() {
            err / scale
        } else {
            f64::INFINITY
        };
        worst = worst.max(rel);
        let within = err <= tol_factor * scale + f64::EPSILON; // false for NaN
        if first_bad.is_none() && !within {
            first_bad = Some(e);
        }
    }
    if gpu.len() != reference.len() && first_bad.is_none() {
        first_bad = Some(gpu.len().min(reference.len()));
    }
    Comparison {
        max_rel_error: worst,
        first_bad,
        tolerance: tol_factor,
    }
}

/// The outcome of [`compare`].
#[derive(Clone, Copy, Debug)]
pub struct Comparison {
    /// Largest |gpu − ref| / (|S| Σ|A·B|) over all nonzeros.
    pub max_rel_error: f64,
    /// First nonzero outside the tolerance (NaN counts: an unwritten output fails).
    pub first_bad: Option<usize>,
    /// The relative tolerance used.
    pub tolerance: f64,
}

impl Comparison {
    /// True when every element is within tolerance.
    pub fn ok(&self) -> bool {
        self.first_bad.is_none()
    }
}
