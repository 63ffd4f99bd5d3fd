//! `wide`'s f64 twin formulas on the CPU: the logistic loss at zero, FM's gradient against
//! finite differences, FM's fast form against the pairwise sum, AUC against a pair count.

mod common;

use common::wide::{data, random_params};
use rand::{Rng, SeedableRng};
use wgsparse::wide::{cpu, metrics, Model};

#[test]
fn logloss_at_zero_is_ln2() {
    let (x, y) = data(200, 50, 6, 1);
    let y = metrics::labels_pm1(&y);
    let p = vec![0.0; 50 + 1];
    let l = cpu::mean_loss(Model::Lr, &p, &x, &y);
    assert!((l - std::f64::consts::LN_2).abs() < 1e-12, "{l}");
}

#[test]
fn fm_gradient_matches_finite_differences() {
    let k = 5;
    let model = Model::Fm { k };
    let (x, _) = data(20, 40, 6, 2);
    let p = random_params(&model.spec().unwrap(), 40, 3);
    let r = x.row_range(1);
    let (f, v) = (&x.col_idx[r.clone()], &x.values[r]);
    let yhat = |p: &[f64]| cpu::score(model, &cpu::accums(model, p, f, v), cpu::bias(p));
    let grads = cpu::score_grad(model, &p, f, v);
    assert_eq!(grads.len(), f.len() * (1 + k) + 1);
    for (i, g) in grads {
        let h = 1e-5;
        let (mut a, mut b) = (p.clone(), p.clone());
        a[i] += h;
        b[i] -= h;
        let fd = (yhat(&a) - yhat(&b)) / (2.0 * h);
        assert!(
            (fd - g).abs() <= 1e-7 * (1.0 + g.abs()),
            "θ{i}: {g} vs {fd}"
        );
    }
}

#[test]
fn fm_fast_form_matches_naive_pairwise_sum() {
    for k in [1, 4, 10] {
        let model = Model::Fm { k };
        let (x, _) = data(30, 60, 8, 4 + k as u64);
        let p = random_params(&model.spec().unwrap(), 60, 5);
        for i in 0..x.nrows {
            let r = x.row_range(i);
            let fast = cpu::predict(model, &p, &x, i);
            let naive = cpu::fm_naive(k, &p, &x.col_idx[r.clone()], &x.values[r]);
            assert!(
                (fast - naive).abs() <= 1e-12 * (1.0 + naive.abs()),
                "{fast} {naive}"
            );
        }
    }
}

#[test]
fn auc_matches_pair_count() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(9);
    // Scores on a coarse grid so ties occur.
    let s: Vec<f32> = (0..300)
        .map(|_| (rng.random_range(0..40) as f32) / 8.0)
        .collect();
    let y: Vec<f32> = s
        .iter()
        .map(|&v| {
            if rng.random_range(0.0..5.0) < v {
                1.0
            } else {
                -1.0
            }
        })
        .collect();
    let (mut num, mut den) = (0.0, 0.0);
    for i in 0..s.len() {
        for j in 0..s.len() {
            if y[i] > 0.0 && y[j] < 0.0 {
                den += 1.0;
                num += if s[i] > s[j] {
                    1.0
                } else if s[i] == s[j] {
                    0.5
                } else {
                    0.0
                };
            }
        }
    }
    let a = metrics::auc(&s, &y).unwrap();
    assert!((a - num / den).abs() < 1e-12, "{a} {}", num / den);
}
