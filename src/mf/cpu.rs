//! f64 twins of the `mf` kernels, computing from the same arrays the shaders bind: samples as
//! u32 triplets (u, v, bits of r) and P, Q row-major with `k` features per row.

use half::f16;

use crate::gpu::shaders::pcg_hash;

/// Twin of one `mf.sgd` update: e = r − p·q; p += lr·(e·q − λ·p); q += lr·(e·p − λ·q), both
/// from the old values. Returns e.
pub fn update(p: &mut [f64], q: &mut [f64], r: f64, lr: f64, lambda: f64) -> f64 {
    let e = r - p.iter().zip(q.iter()).map(|(a, b)| a * b).sum::<f64>();
    for (a, b) in p.iter_mut().zip(q.iter_mut()) {
        let (pa, qb) = (*a, *b);
        *a = pa + lr * (e * qb - lambda * pa);
        *b = qb + lr * (e * pa - lambda * qb);
    }
    e
}

/// The stored value of `x`: rounded to f16 (nearest even, as `pack2x16float`) when `half`.
fn stored(x: f64, half: bool) -> f32 {
    if half {
        f16::from_f64(x).to_f32()
    } else {
        x as f32
    }
}

/// Updates sample `s` of `samples` in place in `p` and `q` (values as stored).
fn update_sample(samples: &[u32], s: usize, p: &mut [f32], q: &mut [f32], k: usize, c: Coeffs) {
    let (u, v) = (samples[3 * s] as usize, samples[3 * s + 1] as usize);
    let r = f32::from_bits(samples[3 * s + 2]) as f64;
    let mut pu: Vec<f64> = p[u * k..(u + 1) * k].iter().map(|&x| x as f64).collect();
    let mut qv: Vec<f64> = q[v * k..(v + 1) * k].iter().map(|&x| x as f64).collect();
    update(&mut pu, &mut qv, r, c.lr, c.lambda);
    for j in 0..k {
        p[u * k + j] = stored(pu[j], c.half);
        q[v * k + j] = stored(qv[j], c.half);
    }
}

/// Learning rate, regularization and storage precision of one epoch.
#[derive(Clone, Copy, Debug)]
pub struct Coeffs {
    /// Learning rate.
    pub lr: f64,
    /// λ.
    pub lambda: f64,
    /// Values are stored as f16.
    pub half: bool,
}

/// Twin of one `mf.hogwild` epoch with a single worker: from PCG state `state`, `batches`
/// random starts, each followed by `batch` serial updates wrapping at the sample count.
/// Advances `state` as the kernel does.
pub fn hogwild(
    samples: &[u32],
    p: &mut [f32],
    q: &mut [f32],
    k: usize,
    state: &mut u32,
    (batches, batch): (usize, usize),
    c: Coeffs,
) {
    let nnz = samples.len() / 3;
    for _ in 0..batches {
        let start = pcg_hash(*state) as usize % nnz;
        *state = pcg_next(*state);
        for j in 0..batch {
            update_sample(samples, (start + j) % nnz, p, q, k, c);
        }
    }
}

/// Twin of `pcg_next` in `mf/sgd.wgsl`: the LCG step of a worker's stream.
pub fn pcg_next(state: u32) -> u32 {
    state.wrapping_mul(747796405).wrapping_add(2891336453)
}

/// Serial SGD over the samples in order (the wavefront's blocks visited one at a time).
pub fn serial(samples: &[u32], p: &mut [f32], q: &mut [f32], k: usize, c: Coeffs) {
    for s in 0..samples.len() / 3 {
        update_sample(samples, s, p, q, k, c);
    }
}

/// Twin of `mf.rmse`: √(mean over samples of (r − scale·p_u·q_v)²); `None` with no samples.
pub fn rmse(samples: &[u32], p: &[f32], q: &[f32], k: usize, scale: f64) -> Option<f64> {
    let n = samples.len() / 3;
    if n == 0 {
        return None;
    }
    let sse: f64 = (0..n)
        .map(|s| {
            let (u, v) = (samples[3 * s] as usize, samples[3 * s + 1] as usize);
            let dot: f64 = (0..k)
                .map(|j| p[u * k + j] as f64 * q[v * k + j] as f64)
                .sum();
            let e = f32::from_bits(samples[3 * s + 2]) as f64 - scale * dot;
            e * e
        })
        .sum();
    Some((sse / n as f64).sqrt())
}

/// Lockstep simulation of one batch-Hogwild! epoch with `states.len()` workers, each
/// drawing its batch starts from its own PCG stream as the kernel does: at every step all
/// workers read p_u and q_v of their current sample, then all write their updated rows, in
/// worker order (a row two workers touch keeps the last worker's values and loses the
/// other's update, as racing stores do). This is what real concurrency costs the
/// optimisation; a GPU that serialises its workers (lavapipe) shows none of it.
pub fn hogwild_lockstep(
    samples: &[u32],
    p: &mut [f32],
    q: &mut [f32],
    k: usize,
    states: &mut [u32],
    (batches, batch): (usize, usize),
    c: Coeffs,
) {
    let nnz = samples.len() / 3;
    let s = states.len();
    let mut starts = vec![0usize; s];
    let mut rows: Vec<(usize, usize, Vec<f64>, Vec<f64>)> = Vec::with_capacity(s);
    for step in 0..batches * batch {
        let j = step % batch;
        if j == 0 {
            for (w, state) in states.iter_mut().enumerate() {
                starts[w] = pcg_hash(*state) as usize % nnz;
                *state = pcg_next(*state);
            }
        }
        rows.clear();
        for &start in &starts {
            let x = (start + j) % nnz;
            let (u, v) = (samples[3 * x] as usize, samples[3 * x + 1] as usize);
            let r = f32::from_bits(samples[3 * x + 2]) as f64;
            let mut pu: Vec<f64> = p[u * k..(u + 1) * k].iter().map(|&x| x as f64).collect();
            let mut qv: Vec<f64> = q[v * k..(v + 1) * k].iter().map(|&x| x as f64).collect();
            update(&mut pu, &mut qv, r, c.lr, c.lambda);
            rows.push((u, v, pu, qv));
        }
        for (u, v, pu, qv) in &rows {
            for i in 0..k {
                p[u * k + i] = stored(pu[i], c.half);
                q[v * k + i] = stored(qv[i], c.half);
            }
        }
    }
}
