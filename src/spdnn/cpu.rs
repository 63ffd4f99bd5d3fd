//! The f64 CPU twin of the inference: the same semantics as `spdnn.layer` and the
//! compaction, computed layer by layer on each input row (rows are independent, so they
//! are spread over threads).

use crate::sparse::Csr;
use crate::spdnn::{Network, YMAX};

/// One layer on one row: `y` (dense, `n` entries) times `w`, the bias added where the
/// product is nonzero, clamped to [0, 32].
pub fn layer(y: &[f64], w: &Csr, bias: f64) -> Vec<f64> {
    let mut z = vec![0.0f64; w.ncols];
    for (i, &v) in y.iter().enumerate() {
        if v == 0.0 {
            continue;
        }
        for e in w.row_range(i) {
            z[w.col_idx[e] as usize] += v * f64::from(w.values[e]);
        }
    }
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
    let n = net.n;
    let rows = y0.nrows;
    let mut out = vec![0.0f64; rows * n];
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let per = rows.div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        for (c, chunk) in out.chunks_mut(per * n).enumerate() {
            scope.spawn(move || {
                for (k, dst) in chunk.chunks_mut(n).enumerate() {
                    let r = c * per + k;
                    let mut y = vec![0.0f64; n];
                    for e in y0.row_range(r) {
                        y[y0.col_idx[e] as usize] = f64::from(y0.values[e]);
                    }
                    for w in &net.layers {
                        if y.iter().all(|&v| v == 0.0) {
                            break;
                        }
                        y = layer(&y, w, f64::from(net.bias));
                    }
                    dst.copy_from_slice(&y);
                }
            });
        }
    });
    out
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
