//! CG's fused steps (`fused.cg_step`: each dot product formed by the dispatch that writes its
//! inputs, the last workgroup summing the partials and updating the scalars) and
//! `Plan::record_onto` (the fused pass added onto a w its caller initialised), against the f64
//! twins.

mod common;

use common::fused::{host_op, opts, sparse_x, vectors};
use wgsparse::fused::linreg::{self, CgOptions};
use wgsparse::fused::{cpu, Matrix, Op, Options, Pattern, Plan, Variant};
use wgsparse::gen;
use wgsparse::gpu::{Batch, GpuBuffer};
use wgsparse::sddmm::cpu::compare;
use wgsparse::Error;

/// w = β·z written by the caller, then `record_onto` adds α·Xᵀ(v ⊙ (X·y)): the full pattern's
/// twin, on plans that accumulate (dense fused, the unfused sequence, sparse fused with w in
/// global memory and unfolded long rows); plans that write w themselves refuse.
#[test]
fn record_onto_adds_to_the_callers_w() {
    let gpu = common::gpu();
    let d = gen::dense_uniform(300, 19, 21);
    let s = sparse_x(400, 5_000, 6_000, 22);
    // Unfolded: the long-row passes add onto w too (folded, the dot pre-pass writes β·z).
    let global_w = Options {
        workgroup_w: Some(false),
        fold: false,
        ..opts(Variant::Fused)
    };
    for (x, o) in [
        (Matrix::Dense(&d), opts(Variant::Fused)),
        (Matrix::Dense(&d), opts(Variant::Unfused)),
        (Matrix::Sparse(&s), global_w),
        (Matrix::Sparse(&s), opts(Variant::Unfused)),
    ] {
        let (m, n) = x.shape();
        let vecs = vectors(m, n, false, 23);
        let hop = host_op(Pattern::Full, &vecs, -0.75, 1.25);
        let plan = Plan::new(gpu, x, &o).unwrap();
        assert!(plan.accumulates(false), "{}", plan.config.describe());
        let bz: Vec<f32> = vecs.z.iter().map(|z| 1.25 * z).collect();
        let w = GpuBuffer::upload(gpu, "onto.w", &bz).unwrap();
        let y = GpuBuffer::upload(gpu, "onto.y", &vecs.y).unwrap();
        let v = GpuBuffer::upload(gpu, "onto.v", &vecs.v).unwrap();
        // β and z are ignored: a NaN z bound here must stay unread.
        let nan = GpuBuffer::filled(gpu, "onto.z", n, f32::NAN).unwrap();
        let op = Op {
            alpha: -0.75,
            y: &y,
            v: Some(&v),
            beta: 3.0,
            z: Some(&nan),
            xty: false,
        };
        let mut batch = Batch::new(gpu);
        plan.record_onto(&mut batch, &op, &w).unwrap();
        assert_eq!(batch.dispatches() + 1, plan.dispatches(Pattern::Full));
        batch.submit().unwrap();
        let got = w.read(gpu).unwrap();
        let (want, mag) = x.reference(&hop);
        let cmp = compare(&got, &want, &mag, x.rounding_terms() + 1);
        assert!(
            cmp.ok(),
            "{}: w[{:?}] (max rel err {:.3e})",
            plan.config.describe(),
            cmp.first_bad,
            cmp.max_rel_error
        );
    }
    // Two-pass writes w in its second pass: no adding onto it.
    let plan = Plan::new(gpu, Matrix::Dense(&d), &opts(Variant::TwoPass)).unwrap();
    assert!(!plan.accumulates(false));
    let y = GpuBuffer::upload(gpu, "onto.y", &[1.0f32; 19]).unwrap();
    let w = GpuBuffer::zeroed(gpu, "onto.w", 19).unwrap();
    let op = Op {
        alpha: 1.0,
        y: &y,
        v: None,
        beta: 0.0,
        z: None,
        xty: false,
    };
    assert!(matches!(
        plan.record_onto(&mut Batch::new(gpu), &op, &w),
        Err(Error::Unsupported(_))
    ));
}

/// The CG after k = 1, 2, 3 iterations (tol 0: no early stop) against the twin's after k:
/// ‖r‖ before and after each iteration (the start step's r·r, the update step's r·r, both
/// through the partials hand-off) and w (α from the alpha step's p·q). Grids of one
/// workgroup (n = 19, 1,500: the update step also updates p), several (n = 3,000) and the most
/// (n = 270,000 > 1,024 × 256: the last workgroup sums four partials per invocation); plans
/// that add onto q (the step writes q = λ·p) and plans that write q themselves (two-pass).
#[test]
fn cg_steps_match_the_twin_iteration_by_iteration() {
    let gpu = common::gpu();
    let d = gen::dense_uniform(500, 19, 31);
    let s_one = sparse_x(2_000, 1_500, 20_000, 35);
    let s_mid = sparse_x(2_000, 3_000, 30_000, 32);
    let s_big = sparse_x(3_000, 270_000, 40_000, 33);
    let cases = [
        (Matrix::Dense(&d), Variant::Fused, true),
        (Matrix::Dense(&d), Variant::TwoPass, false),
        (Matrix::Sparse(&s_one), Variant::Unfused, true),
        (Matrix::Sparse(&s_mid), Variant::Unfused, true),
        (Matrix::Sparse(&s_mid), Variant::TwoPass, false),
        (Matrix::Sparse(&s_big), Variant::Unfused, true),
    ];
    for (x, variant, onto) in cases {
        let b = linreg::synthetic_labels(x, 34);
        let fused = opts(variant);
        let plan = Plan::new(gpu, x, &fused).unwrap();
        assert_eq!(plan.accumulates(false), onto, "{}", plan.config.describe());
        for k in 1..=3 {
            let o = CgOptions {
                lambda: 0.05,
                tol: 0.0,
                max_iter: k,
                fused: fused.clone(),
                ..Default::default()
            };
            let got = linreg::linreg_cg(gpu, &plan, &b, &o, |_, _| {}).unwrap();
            let twin = cpu::linreg_cg(x, &b, 0.05, 0.0, k);
            let what = format!(
                "{} on {:?}, {k} iterations",
                plan.config.describe(),
                x.shape()
            );
            assert_eq!((got.iterations, twin.iterations), (k, k), "{what}");
            for (i, (g, t)) in got.residuals.iter().zip(&twin.residuals).enumerate() {
                assert!((g - t).abs() <= 1e-4 * t, "{what}: ‖r{i}‖ {g} vs {t}");
            }
            let diff = linreg::weights_rel_diff(&got.w, &twin.w);
            assert!(diff <= 1e-4, "{what}: w {diff:.3e} from the twin's");
        }
    }
}

/// `CgOptions::breakdown`: the phases a solve ran (one `gate`, `fused`, `alpha` and `update`
/// pass per recorded iteration; above 2,048 columns a `p_update` per iteration after the
/// first, at most that the update step does it), the same bits as without it (two-pass X is
/// bit-reproducible), and the host parts filled in.
#[test]
fn breakdown_names_every_phase_and_changes_no_bits() {
    let gpu = common::gpu();
    let narrow = sparse_x(500, 30, 5_000, 41);
    let wide = sparse_x(3_000, 2_500, 40_000, 43);
    for (s, p_update) in [(&narrow, false), (&wide, true)] {
        let x = Matrix::Sparse(s);
        let b = linreg::synthetic_labels(x, 42);
        let fused = opts(Variant::TwoPass);
        let plan = Plan::new(gpu, x, &fused).unwrap();
        let solve = |breakdown: bool| {
            let o = CgOptions {
                lambda: 0.01,
                chunk: 3,
                breakdown,
                fused: fused.clone(),
                ..Default::default()
            };
            linreg::linreg_cg(gpu, &plan, &b, &o, |_, _| {}).unwrap()
        };
        let (plain, timed) = (solve(false), solve(true));
        assert!(plain.breakdown.is_none());
        let bits = |w: &[f32]| w.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&timed.w), bits(&plain.w));
        assert_eq!(timed.residuals, plain.residuals);
        assert!(timed.iterations > 3, "{}", timed.iterations);
        let bd = timed.breakdown.expect("a breakdown");
        assert!(
            bd.setup_ms >= 0.0 && bd.record_ms >= 0.0 && bd.wait_ms >= 0.0,
            "{bd:?}"
        );
        if !gpu.caps.timestamps {
            assert!(!bd.timed && bd.phases.is_empty());
            continue;
        }
        assert!(bd.timed);
        // Recorded iterations: chunks of 3, 6, 12, … up to the one that stopped (at most the
        // 100 of max_iter).
        let (mut recorded, mut chunk, mut subs) = (0, 3, 0);
        while recorded < timed.iterations {
            recorded += chunk.min(100 - recorded);
            chunk *= 2;
            subs += 1;
        }
        assert_eq!(subs, timed.submissions);
        let passes = |name: &str| {
            bd.phases
                .iter()
                .find(|p| p.name == name)
                .map_or(0, |p| p.passes)
        };
        let names: Vec<&str> = bd.phases.iter().map(|p| p.name).collect();
        let mut want = vec!["xtb", "start", "gate", "fused", "alpha", "update"];
        if p_update {
            want.push("p_update");
        }
        assert_eq!(names, want);
        assert_eq!((passes("xtb"), passes("start")), (1, 1));
        for name in ["gate", "fused", "alpha", "update"] {
            assert_eq!(passes(name), recorded, "{name}");
        }
        // Every iteration but the solve's first updates p, in a step of its own or not.
        assert_eq!(passes("p_update"), if p_update { recorded - 1 } else { 0 });
        let sum: f64 = bd.phases.iter().map(|p| p.ms).sum();
        assert!(bd.phases.iter().all(|p| p.ms >= 0.0), "{bd:?}");
        assert!(sum <= bd.gpu_ms * (1.0 + 1e-9) + 1e-9, "{bd:?}");
    }
}

/// A `CgSolver` workspace solved again and again: on other labels (each buffer new, then an
/// earlier one again, whose recorded r = −Xᵀb pass is the one replayed), then with λ and the
/// tolerance changed. The start step zeroes w and the plan's pre-pass zeroes r, so each solve
/// is a fresh solver's (the same bits on two-pass X, where λ sits in the fused pass's
/// uniform; on dense fused, whose adds land in any order and whose λ sits in the steps'
/// settings, the same ‖r₀‖ and the twin's weights).
#[test]
fn a_reused_workspace_solves_as_a_fresh_one() {
    let gpu = common::gpu();
    let d = gen::dense_uniform(400, 15, 51);
    let s = sparse_x(600, 40, 6_000, 52);
    for (x, variant) in [
        (Matrix::Sparse(&s), Variant::TwoPass),
        (Matrix::Dense(&d), Variant::Fused),
    ] {
        let fused = opts(variant);
        let plan = Plan::new(gpu, x, &fused).unwrap();
        let o = CgOptions {
            lambda: 0.01,
            chunk: 2,
            fused,
            ..Default::default()
        };
        let what = plan.config.describe();
        let labels: Vec<Vec<f32>> = (53..56)
            .map(|seed| linreg::synthetic_labels(x, seed))
            .collect();
        let bufs: Vec<_> = labels
            .iter()
            .map(|b| GpuBuffer::upload(gpu, "reuse.b", b).unwrap())
            .collect();
        // Against a fresh solver's, and (λ', tol') the twin's.
        let same = |got: &linreg::CgReport, b: &[f32], o: &CgOptions| {
            let fresh = linreg::linreg_cg(gpu, &plan, b, o, |_, _| {}).unwrap();
            assert!(got.converged, "{what}");
            let twin = cpu::linreg_cg(x, b, o.lambda as f64, o.tol, o.max_iter);
            let diff = linreg::weights_rel_diff(&got.w, &twin.w);
            assert!(diff <= 1e-3, "{what}: w {diff:.3e} from the twin's");
            if variant == Variant::TwoPass {
                let bits = |w: &[f32]| w.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&got.w), bits(&fresh.w), "{what}");
                assert_eq!(got.residuals, fresh.residuals, "{what}");
            } else {
                let r0 = (got.residuals[0] - fresh.residuals[0]).abs();
                assert!(r0 <= 1e-5 * fresh.residuals[0], "{what}: ‖r₀‖ {r0}");
                let its = got.iterations.abs_diff(fresh.iterations);
                assert!(its <= 1, "{what}: {} iterations", got.iterations);
            }
        };
        let mut solver = linreg::CgSolver::new(gpu, &plan, &o).unwrap();
        let mut seen = vec![];
        for k in [0, 1, 2, 1] {
            let got = solver.solve(gpu, &bufs[k], |_, _| {}).unwrap();
            same(&got, &labels[k], &o);
            seen.push(got.residuals[0]);
        }
        assert!(seen[0] != seen[1] && seen[1] != seen[2], "{what}: {seen:?}");
        // λ alone, then the tolerance too.
        let mut changed = CgOptions {
            lambda: 2.0,
            ..o.clone()
        };
        solver.set_lambda(gpu, changed.lambda).unwrap();
        let got = solver.solve(gpu, &bufs[1], |_, _| {}).unwrap();
        same(&got, &labels[1], &changed);
        changed.tol = 1e-3;
        solver.set_tol(gpu, changed.tol).unwrap();
        let got = solver.solve(gpu, &bufs[2], |_, _| {}).unwrap();
        same(&got, &labels[2], &changed);
        assert!(solver.set_lambda(gpu, f32::NAN).is_err() && solver.set_tol(gpu, -1.0).is_err());
    }
}
