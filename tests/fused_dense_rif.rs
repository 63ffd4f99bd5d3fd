//! Dense rows in flight (`fused.dense`'s RIF: each vector loads R rows before reducing them):
//! every row counted exactly once when C is not a multiple of R, bad values refused, sparse X
//! unaffected, the tuner times it, the CLI takes and reports it. The f64-twin comparisons of
//! every R on the dense shapes are in tests/fused.rs.

mod common;

use common::fused::{check, opts, sparse_x};
use common::{wgsparse, wgsparse_json as json};
use wgsparse::fused::{cpu, tune, HostOp, Matrix, Options, Pattern, Variant};
use wgsparse::gen;
use wgsparse::sparse::Dense;
use wgsparse::Error;

/// Small integers: every product and sum of the pattern below is exact in f32.
fn ints(len: usize, seed: u64, lo: i32, hi: i32) -> Vec<f32> {
    let u = gen::dense_uniform(1, len, seed).data;
    let span = (hi - lo + 1) as f32;
    // dense_uniform is in [-1, 1): map it onto lo..=hi.
    u.iter()
        .map(|&x| (lo as f32 + ((x + 1.0) / 2.0 * span).floor()).min(hi as f32))
        .collect()
}

#[test]
fn a_partial_last_step_counts_each_row_once() {
    // VS = 4, a workgroup of 32: 8 vectors. With C rows per vector and R rows in flight, every
    // vector's last step runs C mod R rows and masks the rest; m leaves the last workgroup
    // part-filled. Integer X, y and v keep w exact, so a row dropped or added twice shows as
    // a difference, not as rounding.
    let (n, vs, wg) = (13, 4, 32);
    for gpu in [common::gpu(), common::gpu_plain()] {
        for (c, r) in [(3, 2), (3, 4), (5, 2), (5, 4), (6, 4), (1, 4)] {
            let m = (wg / vs) as usize * c as usize * 3 - 5;
            let x = Dense {
                nrows: m,
                ncols: n,
                data: ints(m * n, 31, -2, 2),
            };
            for xty in [false, true] {
                let y = ints(if xty { m } else { n }, 32, -1, 1);
                let v = ints(m, 33, 1, 2);
                let op = HostOp {
                    alpha: 1.0,
                    y: &y,
                    v: Some(&v),
                    beta: 0.0,
                    z: None,
                    xty,
                };
                for variant in [Variant::Fused, Variant::TwoPass] {
                    let o = Options {
                        variant,
                        vs: Some(vs),
                        workgroup: Some(wg),
                        rows_per_vector: Some(c),
                        rows_in_flight: Some(r),
                        ..Default::default()
                    };
                    let plan = wgsparse::fused::Plan::new(gpu, Matrix::Dense(&x), &o).unwrap();
                    assert_eq!(
                        (plan.config.rows_per_vector, plan.config.rows_in_flight),
                        (c, r)
                    );
                    let got = plan.run_host(gpu, &op).unwrap();
                    let (want, _) = cpu::dense(&x, &op);
                    for (j, (g, w)) in got.iter().zip(&want).enumerate() {
                        assert_eq!(
                            *g as f64,
                            *w,
                            "w[{j}], {} xty={xty} m={m}",
                            plan.config.describe()
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn bad_rows_in_flight_are_refused_and_sparse_ignores_it() {
    let gpu = common::gpu();
    let d = gen::dense_uniform(50, 20, 3);
    for r in [0, 3, 8] {
        let o = Options {
            rows_in_flight: Some(r),
            ..Default::default()
        };
        let got = wgsparse::fused::Plan::new(gpu, Matrix::Dense(&d), &o);
        assert!(matches!(got, Err(Error::Option(_))), "{r}");
    }
    let x = sparse_x(200, 60, 1_500, 4);
    let o = Options {
        rows_in_flight: Some(4),
        ..opts(Variant::Fused)
    };
    let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 5);
    assert_eq!(plan.config.rows_in_flight, 1);
}

#[test]
fn the_tuner_times_rows_in_flight_on_dense_and_its_pick_equals_the_twin() {
    let gpu = common::gpu();
    let d = gen::dense_uniform(3_000, 28, 7);
    let (pick, timed) = tune::tune(gpu, Matrix::Dense(&d), &Options::default()).unwrap();
    for r in [2, 4] {
        assert!(
            timed.iter().any(|o| o.rows_in_flight == Some(r)),
            "R = {r} not timed: {timed:?}"
        );
    }
    let picked = Options {
        vs: Some(pick.config.vs),
        tl: Some(pick.config.tl),
        workgroup: Some(pick.config.workgroup),
        rows_in_flight: Some(pick.config.rows_in_flight),
        ..opts(pick.config.variant)
    };
    check(gpu, Matrix::Dense(&d), &picked, Pattern::Full, 8);
}

#[test]
fn the_tuner_times_workgroups_up_to_four_times_the_models_and_c() {
    // n = 200: the model's workgroup is the paper's 128; 512 (the sweep's best on an H100)
    // is among the candidates, so are C at half and twice Eq. 5's, and the pick equals the
    // twin.
    let gpu = common::gpu();
    let d = gen::dense_uniform(2_000, 200, 9);
    let model = wgsparse::fused::Plan::new(gpu, Matrix::Dense(&d), &opts(Variant::Fused)).unwrap();
    let wg = model.config.workgroup;
    let (pick, timed) = tune::tune(gpu, Matrix::Dense(&d), &Options::default()).unwrap();
    let max = gpu.caps.max_invocations_per_workgroup.min(1024);
    for w in [wg / 4, wg * 2, wg * 4]
        .into_iter()
        .filter(|&w| w >= 32 && w <= max)
    {
        assert!(
            timed.iter().any(|o| o.workgroup == Some(w)),
            "workgroup {w} not timed (model {wg}): {:?}",
            timed.iter().map(|o| o.workgroup).collect::<Vec<_>>()
        );
    }
    assert!(
        timed.iter().any(|o| o.rows_per_vector.is_some()),
        "no C timed: {:?}",
        timed.iter().map(|o| o.rows_per_vector).collect::<Vec<_>>()
    );
    common::fused::check_plan(gpu, Matrix::Dense(&d), &pick, 10);
}

#[test]
fn the_cli_takes_rows_in_flight_and_reports_it() {
    let args = |r: &'static str| {
        [
            "fused",
            "--gen",
            "dense-32",
            "--scale",
            "0.002",
            "--variant",
            "fused",
            "--pattern",
            "full",
            "--rows-in-flight",
            r,
            "--check",
            "--reps",
            "2",
            "--json",
        ]
    };
    let j = json(&args("4"));
    assert_eq!(j["ok"], true, "{j}");
    let r = &j["results"][0]["measurement"];
    assert_eq!(r["config"]["rows_in_flight"], 4, "{j}");
    assert!(r["max_rel_error"].as_f64().unwrap() < 1e-3, "{j}");
    let (ok, _, _) = wgsparse(&args("3"));
    assert!(!ok);
}
