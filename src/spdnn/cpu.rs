//! The f64 CPU twin of the inference: the same semantics as `spdnn.layer` and the
//! compaction, computed layer by layer on each input row (rows are independent, so they
//! are spread over threads).

use crate::sparse::Csr;
use crate::spdnn::{Network, YMAX};

/// One layer on one row: `y` (dense, `n` entries) times `w`, the bias added where the
/// product is nonzero, clamped to [0, 32].
pub fn layer(y: &[f64], w: &Csr, bias: f64) -> Vec<f64> {
    activate(product(y, w), bias)
}

/// Z = y · W for one row.
fn product(y: &[f64], w: &Csr) -> Vec<f64> {
    let mut z = vec![0.0f64; w.ncols];
    for (i, &v) in y.iter().enumerate() {
        if v == 0.0 {
            continue;
        }
        for e in w.row_range(i) {
            z[w.col_idx[e] as usize] += v * f64::from(w.values[e]);
        }
    }
    z
}

/// The bias on the structural nonzeros of `z`, then the clamp to [0, YMAX].
fn activate(mut z: Vec<f64>, bias: f64) -> Vec<f64> {
    for x in &mut z {
        *x = if *x != 0.0 {
            (*x + bias).clamp(0.0, f64::from(YMAX))
        } else {
            0.0
        };
    }
    z
}

/// The final activations of every row of `y0` (`rows × n`, row-major) after all layers.
/// A row that becomes all zero stays all zero, so it is not carried further.
pub fn infer(net: &Network, y0: &Csr) -> Vec<f64> {
    infer_with_margins(net, y0).0
}

/// [`infer`] and, per row, how far its survival was from flipping: the smallest, over the
/// layers it went through, of |max_j (z_j + b)| over the entries with z_j ≠ 0 (a layer with
/// no such entry kills the row exactly and does not count). A row whose margin is within
/// f32 rounding can come out either way in f32 arithmetic whatever the order of its sums.
pub fn infer_with_margins(net: &Network, y0: &Csr) -> (Vec<f64>, Vec<f64>) {
    let n = net.n;
    let rows = y0.nrows;
    let mut out = vec![0.0f64; rows * n];
    let mut margins = vec![f64::INFINITY; rows];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per = rows.div_ceil(threads.max(1)).max(1);
    let bias = f64::from(net.bias);
    std::thread::scope(|scope| {
        for (c, (chunk, marg)) in out
            .chunks_mut(per * n)
            .zip(margins.chunks_mut(per))
            .enumerate()
        {
            scope.spawn(move || {
                for (k, (dst, m)) in chunk.chunks_mut(n).zip(marg.iter_mut()).enumerate() {
                    let r = c * per + k;
                    let mut y = vec![0.0f64; n];
                    for e in y0.row_range(r) {
                        y[y0.col_idx[e] as usize] = f64::from(y0.values[e]);
                    }
                    for w in &net.layers {
                        if y.iter().all(|&v| v == 0.0) {
                            break;
                        }
                        let z = product(&y, w);
                        let top = z
                            .iter()
                            .filter(|&&v| v != 0.0)
                            .map(|&v| v + bias)
                            .fold(f64::NEG_INFINITY, f64::max);
                        if top.is_finite() {
                            *m = m.min(top.abs());
                        }
                        y = activate(z, bias);
                    }
                    dst.copy_from_slice(&y);
                }
            });
        }
    });
    (out, margins)
}

/// Rows of `values` (`n` per row) with a nonzero sum, 0-based, increasing.
pub fn categories(values: &[f64], n: usize) -> Vec<u32> {
    values
        .chunks(n.max(1))
        .enumerate()
        .filter(|(_, r)| r.iter().sum::<f64>() != 0.0)
        .map(|(i, _)| i as u32)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn diag(n: usize, v: f32) -> Csr {
        Csr::new(
            n,
            n,
            (0..=n as u32).collect(),
            (0..n as u32).collect(),
            vec![v; n],
        )
        .unwrap()
    }

    #[test]
    fn bias_only_on_structural_nonzeros_and_clamped() {
        // A positive bias shows the rule: entries with Z = 0 stay 0, the others get the bias.
        let y = [0.0, 1.0, 100.0, 0.5];
        assert_eq!(layer(&y, &diag(4, 1.0), 0.25), vec![0.0, 1.25, 32.0, 0.75]);
        assert_eq!(layer(&y, &diag(4, 1.0), -0.5), vec![0.0, 0.5, 32.0, 0.0]);
    }

    #[test]
    fn margins_measure_the_closest_call() {
        // One layer, identity of 1/16: the row with 4 at a neuron reaches z + b = 0.25 − 0.25
        // = 0 exactly (margin 0); the row with 8 survives by 0.25; an empty row never counts.
        let n = 4;
        let net = Network::new(n, vec![diag(n, 1.0 / 16.0)], -0.25).unwrap();
        let y0 = Csr::new(3, n, vec![0, 1, 2, 2], vec![1, 2], vec![4.0, 8.0]).unwrap();
        let (values, margins) = infer_with_margins(&net, &y0);
        assert_eq!(categories(&values, n), vec![1]);
        assert_eq!(margins[0], 0.0);
        assert_eq!(margins[1], 0.25);
        assert_eq!(margins[2], f64::INFINITY);
    }

    #[test]
    fn dead_rows_are_not_categories() {
        let v = [0.0, 0.0, 1.0, 0.0, 0.0, 0.0];
        assert_eq!(categories(&v, 2), vec![1]);
    }

    #[test]
    fn challenge_biases() {
        use crate::spdnn::challenge_bias;
        assert_eq!(challenge_bias(1024), -0.30);
        assert_eq!(challenge_bias(4096), -0.35);
        assert_eq!(challenge_bias(16384), -0.40);
        assert_eq!(challenge_bias(65536), -0.45);
    }
}
