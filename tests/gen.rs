//! Seeded generators: determinism, exact counts, skew, and the planted structure.

use std::collections::HashSet;

use wgsparse::gen::{
    dense_uniform, planted_ratings, planted_ratings_with_noise, power_law, radix_net_layer,
    zipf_ctr, CtrModel,
};
use wgsparse::sparse::Csr;
use wgsparse::Error;

fn row_lengths(m: &Csr) -> Vec<usize> {
    m.row_ptr
        .windows(2)
        .map(|w| (w[1] - w[0]) as usize)
        .collect()
}

fn col_lengths(m: &Csr) -> Vec<usize> {
    let mut c = vec![0; m.ncols];
    for &j in &m.col_idx {
        c[j as usize] += 1;
    }
    c
}

#[test]
fn power_law_is_deterministic() {
    let a = power_law(2000, 1500, 40_000, 1.1, 7).unwrap();
    let b = power_law(2000, 1500, 40_000, 1.1, 7).unwrap();
    let c = power_law(2000, 1500, 40_000, 1.1, 8).unwrap();
    assert_eq!(a, b);
    assert_ne!(a.col_idx, c.col_idx);
    assert_ne!(a.row_ptr, c.row_ptr);
}

#[test]
fn power_law_exact_valid_and_skewed() {
    for (nrows, ncols, nnz, alpha, seed) in [
        (5000, 3000, 100_000, 1.1, 1),
        (3000, 5000, 100_000, 1.0, 2),
        (4000, 4000, 60_000, 1.2, 3),
    ] {
        let m = power_law(nrows, ncols, nnz, alpha, seed).unwrap();
        m.validate().unwrap();
        assert_eq!((m.nrows, m.ncols, m.nnz()), (nrows, ncols, nnz));
        for &v in &m.values {
            assert!(
                (0.5..=1.5).contains(&v.abs()),
                "value {v} outside ±[0.5, 1.5]"
            );
        }
        let rows = row_lengths(&m);
        let cols = col_lengths(&m);
        let mean_row = nnz as f64 / nrows as f64;
        let mean_col = nnz as f64 / ncols as f64;
        let max_row = *rows.iter().max().unwrap();
        let max_col = *cols.iter().max().unwrap();
        assert!(
            max_row as f64 > 20.0 * mean_row,
            "max row {max_row} vs mean {mean_row}"
        );
        assert!(
            max_col as f64 > 20.0 * mean_col,
            "max col {max_col} vs mean {mean_col}"
        );
        assert!(max_row <= ncols);
        // Heavy rows and columns are scattered by the permutations, not all at index 0.
        let heaviest = rows.iter().position(|&l| l == max_row).unwrap();
        let top10: Vec<usize> = {
            let mut idx: Vec<usize> = (0..nrows).collect();
            idx.sort_by_key(|&i| std::cmp::Reverse(rows[i]));
            idx.truncate(10);
            idx
        };
        assert!(
            top10.iter().any(|&i| i > nrows / 10),
            "heavy rows {top10:?} (max at {heaviest})"
        );
        let mut cidx: Vec<usize> = (0..ncols).collect();
        cidx.sort_by_key(|&j| std::cmp::Reverse(cols[j]));
        assert!(cidx[..10].iter().any(|&j| j > ncols / 10));
        // The median row is much lighter than the mean (heavy tail).
        let mut sorted = rows.clone();
        sorted.sort_unstable();
        assert!((sorted[nrows / 2] as f64) < mean_row);
    }
}

#[test]
fn power_law_edge_cases() {
    // Full and nearly full matrices.
    let full = power_law(20, 30, 600, 1.1, 3).unwrap();
    full.validate().unwrap();
    assert!(row_lengths(&full).iter().all(|&l| l == 30));
    let nearly = power_law(50, 40, 1990, 1.1, 3).unwrap();
    nearly.validate().unwrap();
    assert_eq!(nearly.nnz(), 1990);
    // Uniform (alpha 0) and very skewed (alpha 3: exercises the exact fallback sampler).
    for alpha in [0.0, 3.0, 6.0] {
        let m = power_law(800, 600, 30_000, alpha, 4).unwrap();
        m.validate().unwrap();
        assert_eq!(m.nnz(), 30_000);
    }
    // Single row / column.
    let r = power_law(1, 100, 37, 1.1, 5).unwrap();
    r.validate().unwrap();
    assert_eq!(r.nnz(), 37);
    let c = power_law(100, 1, 37, 1.1, 5).unwrap();
    c.validate().unwrap();
    assert_eq!(c.nnz(), 37);
    // Empty.
    assert_eq!(power_law(0, 0, 0, 1.1, 1).unwrap(), Csr::empty(0, 0));
    assert_eq!(power_law(10, 0, 0, 1.1, 1).unwrap(), Csr::empty(10, 0));
    assert_eq!(power_law(10, 20, 0, 1.1, 1).unwrap(), Csr::empty(10, 20));
    // Infeasible or bad options.
    assert!(matches!(
        power_law(10, 20, 201, 1.1, 1),
        Err(Error::Option(_))
    ));
    assert!(matches!(power_law(0, 20, 1, 1.1, 1), Err(Error::Option(_))));
    assert!(matches!(
        power_law(10, 20, 5, -1.0, 1),
        Err(Error::Option(_))
    ));
    assert!(matches!(
        power_law(10, 20, 5, f64::NAN, 1),
        Err(Error::Option(_))
    ));
}

#[test]
fn dense_uniform_is_seeded_and_in_range() {
    let a = dense_uniform(300, 257, 1);
    let b = dense_uniform(300, 257, 1);
    let c = dense_uniform(300, 257, 2);
    a.validate().unwrap();
    assert_eq!((a.nrows, a.ncols, a.data.len()), (300, 257, 300 * 257));
    assert_eq!(a, b);
    assert_ne!(a, c);
    assert!(a
        .data
        .iter()
        .all(|&v| (-1.0..=1.0).contains(&v) && v != 0.0));
    let mean = a.data.iter().map(|&v| v as f64).sum::<f64>() / a.data.len() as f64;
    assert!(mean.abs() < 0.02, "mean {mean}");
    assert!(a.data.iter().any(|&v| v > 0.99) && a.data.iter().any(|&v| v < -0.99));
    assert_eq!(dense_uniform(0, 5, 1).data.len(), 0);
}

#[test]
fn radix_layer_is_regular() {
    for (n, k, seed) in [
        (1024, 16, 1),
        (1000, 7, 2),
        (5, 5, 3),
        (1, 1, 4),
        (3000, 32, 5),
    ] {
        let m = radix_net_layer(n, k, 1.0 / 16.0, seed).unwrap();
        m.validate().unwrap();
        assert_eq!((m.nrows, m.ncols, m.nnz()), (n, n, n * k));
        assert!(row_lengths(&m).iter().all(|&l| l == k));
        assert!(
            col_lengths(&m).iter().all(|&l| l == k),
            "columns of n={n} k={k}"
        );
        assert!(m.values.iter().all(|&v| v == 1.0 / 16.0));
    }
    let a = radix_net_layer(512, 8, 0.5, 9).unwrap();
    assert_eq!(a, radix_net_layer(512, 8, 0.5, 9).unwrap());
    assert_ne!(a.col_idx, radix_net_layer(512, 8, 0.5, 10).unwrap().col_idx);
    assert_eq!(radix_net_layer(0, 0, 1.0, 1).unwrap(), Csr::empty(0, 0));
    assert_eq!(radix_net_layer(4, 0, 1.0, 1).unwrap(), Csr::empty(4, 4));
    assert!(matches!(
        radix_net_layer(4, 5, 1.0, 1),
        Err(Error::Option(_))
    ));
    assert!(matches!(
        radix_net_layer(4, 2, f32::NAN, 1),
        Err(Error::Option(_))
    ));
}

#[test]
fn planted_ratings_structure() {
    let (nu, ni, nr, rank) = (3000, 2000, 60_000, 8);
    let p = planted_ratings(nu, ni, nr, rank, 0.2, 11).unwrap();
    assert_eq!(p, planted_ratings(nu, ni, nr, rank, 0.2, 11).unwrap());
    assert_ne!(
        p.train.items,
        planted_ratings(nu, ni, nr, rank, 0.2, 12)
            .unwrap()
            .train
            .items
    );
    assert_eq!(p.train.len() + p.test.len(), nr);
    let frac = p.test.len() as f64 / nr as f64;
    assert!((frac - 0.2).abs() < 0.02, "test fraction {frac}");
    assert_eq!((p.user_factors.nrows, p.user_factors.ncols), (nu, rank));
    assert_eq!((p.item_factors.nrows, p.item_factors.ncols), (ni, rank));
    p.user_factors.validate().unwrap();
    p.item_factors.validate().unwrap();

    let mut seen = HashSet::new();
    for set in [&p.train, &p.test] {
        assert_eq!((set.n_users, set.n_items), (nu, ni));
        assert_eq!(set.users.len(), set.len());
        assert_eq!(set.items.len(), set.len());
        set.to_coo().validate().unwrap();
        for e in 0..set.len() {
            assert!(
                seen.insert((set.users[e], set.items[e])),
                "duplicate pair ({}, {}) (train and test must be disjoint)",
                set.users[e],
                set.items[e]
            );
            assert!((1.0..=5.0).contains(&set.values[e]));
        }
    }
    // Ratings follow the planted factors up to small noise (where not clamped).
    let mut sq = 0.0;
    let mut count = 0;
    let all: Vec<f32> = p
        .train
        .values
        .iter()
        .chain(&p.test.values)
        .copied()
        .collect();
    for e in 0..p.train.len() {
        let (u, i) = (p.train.users[e] as usize, p.train.items[e] as usize);
        let dot: f32 = p
            .user_factors
            .row(u)
            .iter()
            .zip(p.item_factors.row(i))
            .map(|(a, b)| a * b)
            .sum();
        if (1.3..=4.7).contains(&dot) {
            sq += ((p.train.values[e] - dot) as f64).powi(2);
            count += 1;
        }
    }
    let rmse = (sq / count as f64).sqrt();
    assert!(rmse < 0.15, "residual RMSE {rmse}");
    let mean = all.iter().map(|&v| v as f64).sum::<f64>() / all.len() as f64;
    let std =
        (all.iter().map(|&v| (v as f64 - mean).powi(2)).sum::<f64>() / all.len() as f64).sqrt();
    assert!((2.5..3.5).contains(&mean), "mean rating {mean}");
    assert!(std > 0.5, "rating spread {std}");
    // Zipf users: the most active user rates far more than the mean.
    let mut per_user = vec![0usize; nu];
    for &u in p.train.users.iter().chain(&p.test.users) {
        per_user[u as usize] += 1;
    }
    assert!(*per_user.iter().max().unwrap() as f64 > 10.0 * nr as f64 / nu as f64);

    let none = planted_ratings(10, 10, 0, 2, 0.5, 1).unwrap();
    assert!(none.train.is_empty() && none.test.is_empty());
    assert_eq!(
        planted_ratings(10, 10, 100, 2, 0.0, 1).unwrap().train.len(),
        100
    );
    assert_eq!(
        planted_ratings(10, 10, 100, 2, 1.0, 1).unwrap().test.len(),
        100
    );
    assert!(matches!(
        planted_ratings(10, 10, 101, 2, 0.1, 1),
        Err(Error::Option(_))
    ));
    assert!(matches!(
        planted_ratings(10, 10, 10, 0, 0.1, 1),
        Err(Error::Option(_))
    ));
    assert!(matches!(
        planted_ratings(10, 10, 10, 2, 1.5, 1),
        Err(Error::Option(_))
    ));
}

#[test]
fn planted_rating_noise_sets_the_floor() {
    let (nu, ni, nr) = (400, 300, 30_000);
    let floor = |noise| {
        let p = planted_ratings_with_noise(nu, ni, nr, 4, 0.2, noise, 3).unwrap();
        p.noise_floor().unwrap()
    };
    // Same pattern and factors: only the noise differs, and the floor follows it (plus what
    // the clamp to [1, 5] takes from planted dot products outside that range).
    let base = planted_ratings_with_noise(nu, ni, nr, 4, 0.2, 0.1, 3).unwrap();
    assert_eq!(base, planted_ratings(nu, ni, nr, 4, 0.2, 3).unwrap());
    let noisy = planted_ratings_with_noise(nu, ni, nr, 4, 0.2, 0.85, 3).unwrap();
    assert_eq!(base.user_factors, noisy.user_factors);
    assert_eq!(base.train.items, noisy.train.items);
    let (lo, hi) = (floor(0.1), floor(0.85));
    let clamped = floor(0.0);
    assert!(clamped < 0.1, "{clamped}");
    assert!(lo > 0.1 && lo < 0.1 + clamped, "{lo}");
    assert!(hi > lo && (0.7..=0.85 + clamped).contains(&hi), "{hi}");
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        assert!(matches!(
            planted_ratings_with_noise(10, 10, 10, 2, 0.1, bad, 1),
            Err(Error::Option(_))
        ));
    }
}

#[test]
fn zipf_ctr_structure() {
    for model in [CtrModel::Lr, CtrModel::Fm { k: 8 }] {
        let (n, f, m) = (20_000, 5000, 20);
        let d = zipf_ctr(n, f, m, model, 3).unwrap();
        assert_eq!(d, zipf_ctr(n, f, m, model, 3).unwrap());
        assert_ne!(d.labels, zipf_ctr(n, f, m, model, 4).unwrap().labels);
        d.features.validate().unwrap();
        assert_eq!((d.features.nrows, d.features.ncols), (n, f));
        assert!(row_lengths(&d.features).iter().all(|&l| l == m));
        assert!(d.features.values.iter().all(|&v| v == 1.0));
        assert_eq!(d.labels.len(), n);
        assert!(d.labels.iter().all(|&y| y == 0.0 || y == 1.0));
        let rate = d.labels.iter().sum::<f32>() / n as f32;
        assert!(
            (0.15..0.85).contains(&rate),
            "click rate {rate} for {model:?}"
        );
        assert_eq!(d.true_weights.len(), f);
        match model {
            CtrModel::Lr => assert!(d.true_factors.is_none()),
            CtrModel::Fm { k } => {
                let v = d.true_factors.as_ref().unwrap();
                assert_eq!((v.nrows, v.ncols), (f, k));
            }
        }
        // Zipf popularity: the top feature is far above the mean.
        let cols = col_lengths(&d.features);
        let mean = (n * m) as f64 / f as f64;
        assert!(*cols.iter().max().unwrap() as f64 > 20.0 * mean);
        // Labels carry signal: samples with a higher planted linear score click more.
        let scores: Vec<f32> = (0..n)
            .map(|s| {
                d.features
                    .row_range(s)
                    .map(|e| d.true_weights[d.features.col_idx[e] as usize])
                    .sum()
            })
            .collect();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|&a, &b| scores[a].total_cmp(&scores[b]));
        let low: f32 = order[..n / 4].iter().map(|&s| d.labels[s]).sum();
        let high: f32 = order[3 * n / 4..].iter().map(|&s| d.labels[s]).sum();
        assert!(
            high > 1.5 * low,
            "top-quartile clicks {high} vs bottom {low}"
        );
    }
    let tiny = zipf_ctr(10, 3, 3, CtrModel::Fm { k: 2 }, 1).unwrap();
    assert!(row_lengths(&tiny.features).iter().all(|&l| l == 3));
    assert_eq!(zipf_ctr(0, 3, 2, CtrModel::Lr, 1).unwrap().labels.len(), 0);
    assert!(matches!(
        zipf_ctr(10, 3, 4, CtrModel::Lr, 1),
        Err(Error::Option(_))
    ));
    assert!(matches!(
        zipf_ctr(10, 3, 2, CtrModel::Fm { k: 0 }, 1),
        Err(Error::Option(_))
    ));
}
