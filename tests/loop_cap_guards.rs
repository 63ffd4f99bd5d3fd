//! Kernels whose invocations loop longer as the input grows, under a software device's loop
//! cap (`gpu::loop_cap`; llvmpipe silently ends an invocation's loops after 65,535 iterations
//! in all): on inputs whose unbounded plans loop past the cap, a plan is either sized under
//! the budget and equals the f64 twin, or refused with an error naming the kernel and the
//! cap. On a device without a cap every case runs and equals the twin (but dense rows at
//! N = 70,000, whose ELL no storage binding holds).
//!
//! Sizes are such that the loops llvmpipe cannot unroll (those whose trip count is a runtime
//! value) already pass the cap unguarded; the guards' estimates also count constant-trip
//! loops, so they are conservative.
//!
//! A, B and the other operands are positive here: a result cut short then misses a share of
//! positive terms and lands outside the twin's tolerance, which a signed sum of many terms
//! (whose tolerance grows with K) could hide.

mod common;

use wgsparse::gen;
use wgsparse::gpu::loop_cap;
use wgsparse::sddmm::{self, cpu, trips};
use wgsparse::sparse::{Coo, Csr, Dense};
use wgsparse::{spdnn, wide};
use wgsparse::{Error, Gpu};

/// Random values in [0.05, 1.05): positive, never uniform.
fn positive(nrows: usize, ncols: usize, seed: u64) -> Dense {
    let mut d = gen::dense_uniform(nrows, ncols, seed);
    for x in &mut d.data {
        *x = x.abs() + 0.05;
    }
    d
}

/// Asserts that `e` refuses `kernel` for the loop cap, naming both.
fn assert_refused_for_the_cap(gpu: &Gpu, e: &Error, kernel: &str) {
    let msg = e.to_string();
    let cap = gpu.caps.loop_cap.expect("refused on a device with a cap");
    assert!(
        matches!(e, Error::Option(_)) && msg.contains(kernel) && msg.contains("loop cap"),
        "{msg}"
    );
    assert!(
        msg.contains(&cap.to_string()),
        "the cap {cap} unnamed: {msg}"
    );
}

/// Runs the SDDMM of `s` with `options` and compares it with the twin; a refusal must come
/// from the loop cap. Returns the plan's configuration, or `None` when refused.
fn sddmm_or_refused(
    gpu: &Gpu,
    s: &Csr,
    ops: (&Dense, &Dense),
    options: sddmm::Options,
) -> Option<sddmm::Config> {
    let k = ops.0.ncols;
    let name = match options.variant {
        sddmm::Variant::Auto => "sddmm.",
        v => v.name(),
    };
    let plan = match sddmm::Plan::new(gpu, s, k, options) {
        Ok(p) => p,
        Err(e) => {
            assert_refused_for_the_cap(gpu, &e, name);
            return None;
        }
    };
    if let Some(b) = loop_cap::budget(gpu.caps.loop_cap) {
        let iterations = trips::per_invocation(&plan.config);
        assert!(iterations <= b, "{:?}: {iterations} > {b}", plan.config);
    }
    let got = plan.run_host(gpu, ops.0, ops.1).unwrap();
    let (want, mag) = cpu::sddmm(s, ops.0, ops.1);
    let cmp = cpu::compare(&got, &want, &mag, k);
    assert!(
        cmp.ok(),
        "{:?}: entry {:?} = {} want {} (max rel err {:.3e})",
        plan.config,
        cmp.first_bad,
        cmp.first_bad.map_or(0.0, |e| got[e]),
        cmp.first_bad.map_or(0.0, |e| want[e]),
        cmp.max_rel_error
    );
    Some(plan.config)
}

/// K = 600,000: naive loops over 150,000 vec4s per nonzero; SM-L2 with the model's 32-float
/// slices over 18,750 slices (at least 5 runtime-bounded loop turns each), with a caller's
/// 8-float slices over 75,000.
#[test]
fn sddmm_at_a_k_past_the_cap() {
    let gpu = common::gpu();
    let k = 600_000;
    let s = gen::power_law(8, 8, 30, 1.1, 11).unwrap();
    let (a, b) = (positive(8, k, 12), positive(8, k, 13));
    let capped = gpu.caps.loop_cap.is_some();
    // SM-L2 with the model's sizes: wider slices under the budget.
    let o = |variant, tk| sddmm::Options {
        variant,
        tk,
        ..Default::default()
    };
    let c = sddmm_or_refused(gpu, &s, (&a, &b), o(sddmm::Variant::SmL2, None))
        .expect("SM-L2 with the model's sizes fits the budget");
    if capped {
        assert!(c.tk > 32, "slices of {} over K = {k}", c.tk);
    }
    // A caller's narrow slice stays, and is refused.
    let narrow = sddmm_or_refused(gpu, &s, (&a, &b), o(sddmm::Variant::SmL2, Some(8)));
    assert_eq!(narrow.is_none(), capped);
    // Naive cannot be sized: refused.
    let naive = sddmm_or_refused(gpu, &s, (&a, &b), o(sddmm::Variant::Naive, None));
    assert_eq!(naive.is_none(), capped);
}

/// A dense S (auto takes SM-SM) at K = 65,536: the model's tile covers all of S, 16 trips
/// of its 128 virtual subgroups over 2,048 slices (over 100,000 iterations); under the
/// budget the tiles shrink.
#[test]
fn sddmm_sm_sm_tiles_shrink_under_the_budget() {
    let gpu = common::gpu();
    let k = 65_536;
    let s = gen::power_law(64, 64, 2000, 1.0, 21).unwrap();
    let (a, b) = (positive(64, k, 22), positive(64, k, 23));
    let c = sddmm_or_refused(gpu, &s, (&a, &b), sddmm::Options::default())
        .expect("auto fits the budget");
    assert_eq!(c.variant, sddmm::Variant::SmSm);
    if gpu.caps.loop_cap.is_some() {
        assert!(c.ti < 64 && c.tj < 64, "{c:?}");
    }
}

/// One row of over 100,000 nonzeros in one column panel, one lane per run: a caller's run
/// length beyond the budget is refused (unguarded, a step per nonzero), the model's runs fit.
#[test]
fn sddmm_row_run_lengths_past_the_budget_are_refused() {
    let gpu = common::gpu();
    let k = 8;
    let s = gen::power_law(2, 200_000, 170_000, 1.5, 31).unwrap();
    let longest = (0..s.nrows).map(|r| s.row_range(r).len()).max().unwrap();
    assert!(longest > 100_000, "longest row {longest}");
    let (a, b) = (positive(s.nrows, k, 32), positive(s.ncols, k, 33));
    let o = |block_nnz| sddmm::Options {
        variant: sddmm::Variant::RowRun,
        block_nnz,
        vws: Some(1),
        tj: Some(s.ncols),
        ..Default::default()
    };
    let long = sddmm_or_refused(gpu, &s, (&a, &b), o(Some(1 << 20)));
    assert_eq!(long.is_none(), gpu.caps.loop_cap.is_some());
    sddmm_or_refused(gpu, &s, (&a, &b), o(None)).expect("the model's runs fit");
}

/// A one-layer network of `n` neurons whose neuron 0 takes every neuron as a source (weights
/// about 1/n, so its output stays below the clamp), the others a power-law pattern of
/// positive weights, bias 0.
fn heavy_column_network(n: usize, seed: u64) -> spdnn::Network {
    let light = gen::power_law(n, n, 4 * n, 1.1, seed).unwrap();
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    let heavy = positive(1, n, seed + 1);
    for i in 0..n {
        rows.push(i as u32);
        cols.push(0);
        vals.push(heavy.data[i] / n as f32);
        for e in light.row_range(i) {
            if light.col_idx[e] != 0 {
                rows.push(i as u32);
                cols.push(light.col_idx[e]);
                vals.push(0.01 + light.values[e].abs() * 0.1);
            }
        }
    }
    let w = Coo::new(n, n, rows, cols, vals).unwrap().to_csr();
    assert_eq!(spdnn::loops::max_in_degree(&w), n);
    spdnn::Network::new(n, vec![w], 0.0).unwrap()
}

/// Runs `net` with `approach` and compares with the twin; a refusal must come from the loop
/// cap. Returns whether it ran.
fn spdnn_or_refused(
    gpu: &Gpu,
    net: &spdnn::Network,
    y0: &Csr,
    approach: spdnn::Approach,
    workgroup: u32,
) -> bool {
    let options = spdnn::Options {
        approach,
        workgroup: Some(workgroup),
        ..Default::default()
    };
    spdnn_options_or_refused(gpu, net, y0, &options)
}

/// [`spdnn_or_refused`] with `options`.
fn spdnn_options_or_refused(
    gpu: &Gpu,
    net: &spdnn::Network,
    y0: &Csr,
    options: &spdnn::Options,
) -> bool {
    let approach = options.approach;
    let plan = match spdnn::Plan::new(gpu, net, y0, options) {
        Ok(p) => p,
        Err(e) => {
            assert_refused_for_the_cap(gpu, &e, "spdnn.");
            return false;
        }
    };
    plan.poison(gpu).unwrap();
    plan.run(gpu).unwrap();
    let got = plan.output(gpu).unwrap();
    let want = spdnn::cpu::infer(net, y0);
    assert!(want[0] > 0.1, "neuron 0 of row 0 is {}", want[0]);
    for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "{approach:?}: row {} neuron {}: GPU {g} twin {w}",
            e / net.n,
            e % net.n
        );
    }
    true
}

/// N = 4,096 with one neuron fed by all, workgroups of 64: dense rows loop over the ELL width
/// (4,096 slots) for each of an invocation's 64 outputs (262,144 iterations) and are refused;
/// sliced ELL walks the heavy column once (4,096 words) and runs.
#[test]
fn spdnn_dense_rows_of_a_wide_ell_are_refused_sliced_runs() {
    let gpu = common::gpu();
    let n = 4096;
    let net = heavy_column_network(n, 41);
    let y0 = spdnn::data::random_inputs(4, n, 0.5, 42).unwrap();
    assert!(spdnn_or_refused(gpu, &net, &y0, spdnn::Approach::Auto, 64));
    let dense = spdnn_or_refused(gpu, &net, &y0, spdnn::Approach::DenseRows, 64);
    assert_eq!(dense, gpu.caps.loop_cap.is_none());
}

/// The same network with a slice's segments together (the default) would walk the heavy
/// segment T times over: under a loop cap the plan runs them one after another instead
/// (and matches the twin above); without a cap it keeps them together.
#[test]
fn spdnn_segments_together_fall_back_under_the_cap() {
    let gpu = common::gpu();
    let n = 4096;
    let net = heavy_column_network(n, 41);
    let y0 = spdnn::data::random_inputs(4, n, 0.5, 42).unwrap();
    let options = spdnn::Options {
        workgroup: Some(64),
        ..Default::default()
    };
    assert!(options.segments_together);
    let plan = spdnn::Plan::new(gpu, &net, &y0, &options).unwrap();
    assert_eq!(plan.segments_together(), gpu.caps.loop_cap.is_none());
    // Staging unrolled and the bounds prefetched: the same fallback, and the plan (with
    // its loops counted for those switches) runs and equals the twin.
    for (unroll, prefetch) in [(4, true), (2, false), (3, true)] {
        let switched = spdnn::Options {
            stage_unroll: unroll,
            prefetch_bounds: prefetch,
            ..options.clone()
        };
        let plan = spdnn::Plan::new(gpu, &net, &y0, &switched).unwrap();
        assert_eq!(plan.segments_together(), gpu.caps.loop_cap.is_none());
        assert!(spdnn_options_or_refused(gpu, &net, &y0, &switched));
    }
}

/// N = 70,000 with one neuron fed by all: the sliced ELL invocation of that neuron walks
/// 70,000 words; refused under the cap. Dense rows are refused there too, by the loop check
/// before their ELL (70,000 slots of each of 70,000 neurons) is laid out; without a cap that
/// ELL exceeds any storage binding, which `dense_rows_beyond_a_binding_are_refused_first`
/// covers.
#[test]
fn spdnn_a_column_past_the_cap_is_refused() {
    let gpu = common::gpu();
    let n = 70_000;
    let net = heavy_column_network(n, 51);
    let y0 = spdnn::data::random_inputs(2, n, 0.3, 52).unwrap();
    let ran = spdnn_or_refused(gpu, &net, &y0, spdnn::Approach::Auto, 256);
    assert_eq!(ran, gpu.caps.loop_cap.is_none());
    if gpu.caps.loop_cap.is_some() {
        assert!(!spdnn_or_refused(
            gpu,
            &net,
            &y0,
            spdnn::Approach::DenseRows,
            256
        ));
    }
}

/// A dense-rows ELL beyond one storage binding is refused, naming it (the plan checks it
/// before the host lays the ELL out: at N = 70,000 with one neuron fed by all, without a
/// cap, that took two arrays of 19.6 GB): here 256 slots of 256 neurons over 8 KiB bindings.
#[test]
fn dense_rows_beyond_a_binding_are_refused_first() {
    let gpu = common::gpu_small_bindings();
    let n = 256;
    let net = heavy_column_network(n, 53);
    let y0 = spdnn::data::random_inputs(2, n, 0.3, 54).unwrap();
    let options = spdnn::Options {
        approach: spdnn::Approach::DenseRows,
        ..Default::default()
    };
    let e = spdnn::Plan::new(gpu, &net, &y0, &options)
        .err()
        .expect("refused");
    let msg = e.to_string();
    assert!(
        matches!(e, Error::TooLarge { .. }) && msg.contains("spdnn.w_idx"),
        "{msg}"
    );
}

/// LR and FM scoring a sample of 600,000 features: 8 lanes would loop 75,000 times each;
/// under a cap the sample takes more lanes and the scores equal the twin's.
#[test]
fn wide_predict_of_a_long_sample_is_sized_under_the_budget() {
    let gpu = common::gpu();
    let n_features = 600_000;
    // Sample 0 has every feature; the others a power-law handful.
    let short = gen::power_law(5, n_features, 200, 1.1, 62).unwrap();
    let long_vals = positive(1, n_features, 63).data;
    let mut row_ptr = vec![0u32, n_features as u32];
    let mut col_idx: Vec<u32> = (0..n_features as u32).collect();
    let mut values = long_vals;
    for i in 0..short.nrows {
        for e in short.row_range(i) {
            col_idx.push(short.col_idx[e]);
            values.push(short.values[e].abs() + 0.05);
        }
        row_ptr.push(col_idx.len() as u32);
    }
    let x = Csr {
        nrows: 1 + short.nrows,
        ncols: n_features,
        row_ptr,
        col_idx,
        values,
    };
    x.validate().unwrap();
    // LR: 32 lanes per sample under llvmpipe's cap; FM (k = 4, 5 parameters an edge): 128.
    for (model, seed) in [(wide::Model::Lr, 61), (wide::Model::Fm { k: 4 }, 64)] {
        let spec = model.spec().unwrap();
        let len = n_features * spec.params_per_feature + 1;
        let file = wide::WideModel {
            name: spec.name.clone(),
            accums: spec.accums,
            params_per_feature: spec.params_per_feature,
            n_features,
            params: positive(1, len, seed)
                .data
                .iter()
                .map(|&p| p * 1e-3)
                .collect(),
        };
        if model == wide::Model::Lr {
            wide_validation_of_the_long_sample(gpu, &x, &spec, &file.params);
        }
        let (_, lanes) = wide::predict::shape(gpu.caps.loop_cap, n_features, &spec).unwrap();
        if gpu.caps.loop_cap.is_some() {
            assert!(lanes > wide::predict::PREDICT_LANES, "{lanes} lanes");
        }
        let scores = wide::predict(gpu, &spec, &file, &x).unwrap();
        let p: Vec<f64> = file.params.iter().map(|&v| v as f64).collect();
        for (i, &s) in scores.iter().enumerate() {
            let w = wide::cpu::predict(model, &p, &x, i);
            assert!(
                (s as f64 - w).abs() <= 1e-4 * (1.0 + w.abs()),
                "{}: ŷ{i}: {s} vs {w} ({lanes} lanes)",
                spec.name
            );
        }
        // Past one whole workgroup of lanes: refused, not scored short.
        if let Some(b) = loop_cap::budget(gpu.caps.loop_cap) {
            let sizes = wide::predict::iterations(100_000_000, wide::predict::PREDICT_WG, &spec);
            assert!(sizes > b);
            assert!(wide::predict::shape(gpu.caps.loop_cap, 100_000_000, &spec).is_none());
        }
    }
}

/// The trainer's validation prediction of `x` (its first sample long) under `params`: refused
/// under a cap, else ŷ equal to the twin's.
fn wide_validation_of_the_long_sample(gpu: &Gpu, x: &Csr, spec: &wide::ModelSpec, params: &[f32]) {
    let train = x.row_band(1..x.nrows);
    let y = [1.0f32, 0.0, 1.0, 0.0, 1.0];
    let yv: Vec<f32> = (0..x.nrows).map(|i| (i % 2) as f32).collect();
    let mut t = match wide::Trainer::new(
        gpu,
        spec,
        x.ncols,
        (&train, &y[..train.nrows]),
        Some((x, &yv)),
        wide::Options::default(),
    ) {
        Ok(t) => t,
        Err(e) => {
            assert_refused_for_the_cap(gpu, &e, "wide validation data");
            return;
        }
    };
    t.set_params(params).unwrap();
    let got = t.predict_valid().unwrap().unwrap();
    let p: Vec<f64> = t.params().unwrap().iter().map(|&v| v as f64).collect();
    let magnitude: Vec<f64> = p.iter().map(|v| v.abs()).collect();
    for i in 0..x.nrows {
        let w = wide::cpu::predict(wide::Model::Lr, &p, x, i);
        // The parameters are signed: the tolerance follows Σ|θ_j x_j|.
        let mag = wide::cpu::predict(wide::Model::Lr, &magnitude, x, i);
        let s = got[2 * i];
        assert!(
            (s as f64 - w).abs() <= 1e-5 * (1.0 + mag),
            "validation ŷ{i}: {s} vs {w} (Σ|θx| {mag})"
        );
    }
}

/// Folded long-row chunks (`--fold on`): 64 rows of about 1,560 entries cut into chunks of
/// 32, over 3,000 chunks, taken by the one workgroup that C = 64 rows per vector leaves
/// (fused) or by the sorted grid's two (each chunk summing up to 64 partials): unbounded,
/// tens of thousands of iterations past the cap. Under a cap the plan keeps the unfolded
/// sequence, and w equals the twin.
#[test]
fn fused_folded_long_rows_stay_under_the_budget() {
    use wgsparse::fused::{Matrix, Options, Pattern, Variant};
    let gpu = common::gpu();
    let x = gen::power_law(64, 2048, 100_000, 0.3, 71).unwrap();
    for (variant, p) in [
        (Variant::Fused, Pattern::Full),
        (Variant::Fused, Pattern::Xty),
        (Variant::Sorted, Pattern::Full),
    ] {
        let o = Options {
            variant,
            long_row: Some(32),
            rows_per_vector: (variant == Variant::Fused).then_some(64),
            fold: true,
            ..Default::default()
        };
        let (_, plan) = common::fused::check(gpu, Matrix::Sparse(&x), &o, p, 72);
        if variant == Variant::Fused {
            assert_eq!(plan.config.groups, 1, "{}", plan.config.describe());
        }
        assert_eq!(
            plan.long_folded(),
            gpu.caps.loop_cap.is_none(),
            "{}",
            plan.config.describe()
        );
    }
}

/// The thesis's CSR·CSR 1D at N = 40,000: a row of W with 300 targets takes all 256 lanes per
/// left entry, so one workgroup walks Y's full first row (40,000 entries) one entry a turn:
/// refused under the cap (any later layer could fill a row of Y to N), else equal to the twin.
#[test]
fn spdnn_thesis_rows_past_the_cap_are_refused() {
    use wgsparse::spdnn::thesis::{Format, ThesisOptions, ThesisPlan, Tiling};
    let gpu = common::gpu();
    let n = 40_000;
    let light = gen::power_law(n, n, 4 * n, 1.1, 81).unwrap();
    let (mut rows, mut cols, mut vals) = (vec![], vec![], vec![]);
    for i in 0..n {
        let targets: Vec<u32> = if i == 0 {
            (0..300).map(|t| t * 97 % n as u32).collect()
        } else {
            light.row_range(i).map(|e| light.col_idx[e]).collect()
        };
        for (k, c) in targets.into_iter().enumerate() {
            rows.push(i as u32);
            cols.push(c);
            vals.push(0.01 + 0.001 * (k % 7) as f32);
        }
    }
    let w = Coo::new(n, n, rows, cols, vals).unwrap().to_csr();
    let net = spdnn::Network::new(n, vec![w], 0.0).unwrap();
    // Row 0 of Y0 full, row 1 sparse.
    let dense = positive(1, n, 82).data;
    let sparse = gen::power_law(1, n, 300, 1.0, 83).unwrap();
    let mut y0 = Csr {
        nrows: 2,
        ncols: n,
        row_ptr: vec![0, n as u32],
        col_idx: (0..n as u32).collect(),
        values: dense,
    };
    y0.col_idx.extend_from_slice(&sparse.col_idx);
    y0.values
        .extend(sparse.values.iter().map(|v| v.abs() + 0.05));
    y0.row_ptr.push(y0.col_idx.len() as u32);
    let opts = ThesisOptions {
        format: Format::CsrCsr,
        tiling: Tiling::OneD,
        ..Default::default()
    };
    let mut plan = match ThesisPlan::new(gpu, &net, &y0, &opts) {
        Ok(p) => p,
        Err(e) => {
            assert_refused_for_the_cap(gpu, &e, "spdnn.thesis_multiply");
            return;
        }
    };
    assert!(gpu.caps.loop_cap.is_none(), "not refused under the cap");
    plan.set_poison(true);
    plan.start(gpu).unwrap();
    plan.layer(gpu, 0).unwrap();
    let got = plan.output(gpu).unwrap();
    let mut y = vec![0f64; 2 * n];
    for r in 0..2 {
        for e in y0.row_range(r) {
            y[r * n + y0.col_idx[e] as usize] = f64::from(y0.values[e]);
        }
    }
    let want: Vec<f64> = y
        .chunks(n)
        .flat_map(|r| spdnn::cpu::layer(r, &net.layers[0], 0.0))
        .collect();
    for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= 1e-4 * (1.0 + w.abs()),
            "row {} neuron {}: GPU {g} twin {w}",
            e / n,
            e % n
        );
    }
}
