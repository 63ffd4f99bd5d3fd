//! The fused kernels' timing-only switches (`fused::Diag`, `wgsparse fused --diag`): each
//! removes what it names (with no adds or no flush, w is β·z alone), they apply only to the
//! sparse fused, sorted and stream kernels with w in workgroup memory, and neither the checks, the
//! export nor the autotuner take them.

mod common;

use common::fused::{check_op, host_op, sparse_x, vectors};
use common::{wgsparse, wgsparse_json as json};
use wgsparse::fused::{tune, Diag, HostOp, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::gen;

fn diag_opts(variant: Variant, list: &str) -> Options {
    Options {
        variant,
        diag: Diag::parse(list).unwrap(),
        // No long rows: their unfolded pass would add to global w past the switches.
        long_row: Some(u32::MAX),
        ..Default::default()
    }
}

#[test]
fn no_adds_or_no_flush_leave_beta_z_alone() {
    let gpu = common::gpu();
    let x = sparse_x(700, 300, 9_000, 3);
    let vecs = vectors(x.nrows, x.ncols, false, 4);
    let op = host_op(Pattern::Full, &vecs, -0.75, 1.25);
    let want: Vec<f32> = vecs.z.iter().map(|&z| 1.25 * z).collect();
    // The stream kernel's long rows (past 24 entries) are in its one dispatch: switched too.
    let stream_long = |list: &str| Options {
        long_row: Some(24),
        ..diag_opts(Variant::Stream, list)
    };
    for variant in [Variant::Fused, Variant::Sorted, Variant::Stream] {
        for list in ["skip-wg-adds", "skip-flush", "skip-wg-adds,skip-flush"] {
            let o = if variant == Variant::Stream {
                stream_long(list)
            } else {
                diag_opts(variant, list)
            };
            let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
            assert!(variant != Variant::Stream || plan.long_chunks() > 0);
            assert!(plan.config.workgroup_w && plan.config.diag.any());
            let got = plan.run_host(gpu, &op).unwrap();
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() <= 1e-6 * w.abs().max(1.0),
                    "{variant:?} --diag {list}: w[{i}] = {g}, β·z = {w}"
                );
            }
        }
        // Plain adds run (racing vectors may lose updates): w is finite and holds products.
        let plan = Plan::new(
            gpu,
            Matrix::Sparse(&x),
            &diag_opts(variant, "plain-wg-adds"),
        )
        .unwrap();
        let got = plan.run_host(gpu, &op).unwrap();
        assert!(got.iter().all(|g| g.is_finite()), "{variant:?}");
        assert!(got.iter().zip(&want).any(|(g, w)| g != w), "{variant:?}");
        // Integer adds of the bits never become native float adds.
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &diag_opts(variant, "int-wg-adds")).unwrap();
        assert!(!plan.config.wg_native_atomics);
        let got = plan.run_host(gpu, &op).unwrap();
        assert!(got.iter().zip(&want).any(|(g, w)| g != w), "{variant:?}");
    }
}

#[test]
fn row_factor_switches_drop_v_or_misplace_it() {
    let gpu = common::gpu();
    let x = sparse_x(700, 300, 9_000, 7);
    let vecs = vectors(x.nrows, x.ncols, false, 8);
    let full = host_op(Pattern::Full, &vecs, -0.75, 1.25);
    // Every factor 1: the full pattern without v, against its twin.
    let no_v = HostOp { v: None, ..full };
    check_op(
        gpu,
        Matrix::Sparse(&x),
        &diag_opts(Variant::Stream, "skip-row-factors"),
        &no_v,
    );
    // Factors at the tile-row index: finite, and not the true w (X has empty rows, so tile
    // rows and X's rows part).
    assert!((0..x.nrows).any(|r| x.row_ptr[r] == x.row_ptr[r + 1]));
    let plan = Plan::new(
        gpu,
        Matrix::Sparse(&x),
        &diag_opts(Variant::Stream, "direct-rows"),
    )
    .unwrap();
    let got = plan.run_host(gpu, &full).unwrap();
    let (want, _) = Matrix::Sparse(&x).reference(&full);
    assert!(got.iter().all(|g| g.is_finite()));
    assert!(got
        .iter()
        .zip(&want)
        .any(|(g, w)| (*g as f64 - w).abs() > 1e-3 * w.abs().max(1.0)));
    for variant in [Variant::Fused, Variant::Sorted] {
        let e = Plan::new(
            gpu,
            Matrix::Sparse(&x),
            &diag_opts(variant, "skip-row-factors"),
        )
        .err()
        .unwrap_or_else(|| panic!("{variant:?} took skip-row-factors"));
        assert!(e.to_string().contains("stream kernel's row factors"), "{e}");
    }
}

#[test]
fn switches_apply_only_where_they_mean_something() {
    let gpu = common::gpu();
    let x = sparse_x(400, 200, 4_000, 5);
    for variant in [Variant::Unfused, Variant::TwoPass, Variant::Split] {
        let e = Plan::new(gpu, Matrix::Sparse(&x), &diag_opts(variant, "skip-flush"))
            .err()
            .unwrap_or_else(|| panic!("{variant:?} took --diag"));
        assert!(e.to_string().contains("--diag skip-flush"), "{e}");
    }
    let global = Options {
        workgroup_w: Some(false),
        ..diag_opts(Variant::Fused, "plain-wg-adds")
    };
    assert!(Plan::new(gpu, Matrix::Sparse(&x), &global).is_err());
    let d = gen::dense_uniform(64, 16, 6);
    assert!(Plan::new(
        gpu,
        Matrix::Dense(&d),
        &diag_opts(Variant::Fused, "skip-flush")
    )
    .is_err());
    let e = tune::autotuned_plan(
        gpu,
        Matrix::Sparse(&x),
        &diag_opts(Variant::Auto, "skip-flush"),
    )
    .err()
    .unwrap();
    assert!(e.to_string().contains("autotuner"), "{e}");
}

#[test]
fn cli_marks_diag_runs_invalid_and_refuses_checks() {
    let base = ["fused", "--gen", "demo", "--scale", "0.05", "--reps", "2"];
    let fused = ["--variant", "fused"];
    let j = json(
        &[
            &base[..],
            &fused,
            &["--diag", "skip-flush,plain-wg-adds", "--json"],
        ]
        .concat(),
    );
    assert_eq!(j["valid_result"], false);
    assert_eq!(
        j["diag"],
        serde_json::json!(["plain-wg-adds", "skip-flush"])
    );
    let config = &j["results"][0]["measurement"]["config"]["diag"];
    assert_eq!(config["skip_flush"], true, "{j}");
    let plain = json(&[&base[..], &fused, &["--json"]].concat());
    assert_eq!(plain["valid_result"], true);
    for extra in [
        &["--variant", "fused", "--diag", "skip-flush", "--check"][..],
        &["--variant", "auto", "--diag", "skip-flush"][..],
        &["--variant", "fused", "--diag", "bogus"][..],
    ] {
        let (ok, _, err) = wgsparse(&[&base[..], extra].concat());
        assert!(!ok, "{extra:?} passed");
        assert!(err.contains("--diag"), "{extra:?}: {err}");
    }
}
