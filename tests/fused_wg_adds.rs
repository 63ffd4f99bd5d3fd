//! Native f32 adds into workgroup memory (`Options::wg_atomics`; SPIR-V rewritten from
//! naga's, `src/gpu/spirv_wg_adds.rs`) against the compare-exchange loops, in every sparse
//! kernel that adds there: `stream`, `sorted`, `fused` with w in workgroup memory (with and
//! without hot copies) and `fused` with w in global memory and its hot columns in workgroup
//! memory. Each equals the f64 twin (w poisoned) for every pattern, the configuration says
//! which kind ran, the kernels that add nowhere in workgroup memory never take it, and a
//! device without the feature refuses `Native` in the library and the CLI.

mod common;

use common::fused::{check, sparse_x, with_hot_columns};
use wgsparse::fused::{Atomics, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::{Error, Gpu};

/// The configurations that add into workgroup memory, with how each names itself.
fn adding_kernels() -> Vec<(&'static str, Options)> {
    let o = |variant| Options {
        variant,
        ..Default::default()
    };
    vec![
        (
            "stream",
            Options {
                workgroup: Some(128),
                epl: Some(4),
                ..o(Variant::Stream)
            },
        ),
        ("sorted", o(Variant::Sorted)),
        (
            "fused, w in workgroup memory",
            Options {
                workgroup_w: Some(true),
                ..o(Variant::Fused)
            },
        ),
        (
            "fused, hot copies",
            Options {
                workgroup_w: Some(true),
                hot_cols: Some(4),
                ..o(Variant::Fused)
            },
        ),
        (
            "fused, hot columns of a global w",
            Options {
                workgroup_w: Some(false),
                hot_cols: Some(16),
                ..o(Variant::Fused)
            },
        ),
    ]
}

fn runs_both_kinds(gpu: &Gpu) {
    let x = with_hot_columns(&sparse_x(1_100, 300, 9_000, 171), &[3, 200], 172);
    for (what, base) in adding_kernels() {
        for kind in [Atomics::Native, Atomics::Cas, Atomics::Auto] {
            let o = Options {
                wg_atomics: kind,
                ..base.clone()
            };
            if kind == Atomics::Native && !gpu.caps.wg_f32_atomics {
                match Plan::new(gpu, Matrix::Sparse(&x), &o) {
                    Err(Error::Unsupported(msg)) => {
                        assert!(msg.contains("workgroup memory"), "{msg}")
                    }
                    other => panic!("{what}: {:?}", other.err()),
                }
                continue;
            }
            for p in Pattern::ALL {
                let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 173);
                let c = &plan.config;
                let native = kind != Atomics::Cas && gpu.caps.wg_f32_atomics;
                assert_eq!(c.wg_native_atomics, native, "{what}: {}", c.describe());
                assert_eq!(
                    c.describe().contains("wg-native"),
                    native,
                    "{}",
                    c.describe()
                );
            }
        }
    }
}

#[test]
fn native_and_compare_exchange_adds_equal_the_twin() {
    let gpu = common::gpu();
    runs_both_kinds(gpu);
    // The fallback device has no workgroup f32 adds: Native is refused, the rest run.
    runs_both_kinds(common::gpu_plain());
}

#[test]
fn kernels_without_workgroup_adds_never_take_them() {
    let gpu = common::gpu();
    let x = sparse_x(700, 150, 4_000, 181);
    let dense = wgsparse::gen::dense_uniform(300, 40, 182);
    for (what, x, variant) in [
        ("unfused", Matrix::Sparse(&x), Variant::Unfused),
        ("two-pass", Matrix::Sparse(&x), Variant::TwoPass),
        ("split", Matrix::Sparse(&x), Variant::Split),
        ("transpose", Matrix::Sparse(&x), Variant::Transpose),
        ("dense", Matrix::Dense(&dense), Variant::Fused),
    ] {
        let o = Options {
            variant,
            wg_atomics: Atomics::Auto,
            ..Default::default()
        };
        let (_, plan) = check(gpu, x, &o, Pattern::Full, 183);
        assert!(
            !plan.config.wg_native_atomics,
            "{what}: {}",
            plan.config.describe()
        );
    }
}

#[test]
fn the_cli_takes_the_kind_and_refuses_a_bad_one() {
    let json = common::wgsparse_json(&[
        "fused",
        "--gen",
        "demo",
        "--variant",
        "stream",
        "--wg-atomics",
        "cas",
        "--check",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(json["ok"], true, "{json}");
    let config = &json["results"][0]["measurement"]["config"];
    assert_eq!(config["wg_native_atomics"], false, "{json}");
    let (code, _, err) = common::wgsparse_exit(&["fused", "--gen", "demo", "--wg-atomics", "fast"]);
    assert_ne!(code, 0);
    assert!(err.contains("--wg-atomics"), "{err}");
}

#[test]
fn the_tuner_times_both_kinds_where_its_pick_adds_in_workgroup_memory() {
    // Rows of about two entries over 200 columns (stream or fused with w in workgroup
    // memory wins): the pick is timed with native adds and with the loops, and equals the
    // twin; a caller's fixed kind is kept.
    let gpu = common::gpu();
    let x = sparse_x(12_000, 200, 24_000, 191);
    let (pick, timed) =
        wgsparse::fused::tune::tune(gpu, Matrix::Sparse(&x), &Options::default()).unwrap();
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &pick, 192);
    if gpu.caps.wg_f32_atomics {
        assert!(
            timed.iter().any(|o| o.wg_atomics == Atomics::Cas),
            "the loops were not timed: {}",
            pick.config.describe()
        );
    }
    let fixed = Options {
        wg_atomics: Atomics::Cas,
        ..Default::default()
    };
    let (pick, timed) = wgsparse::fused::tune::tune(gpu, Matrix::Sparse(&x), &fixed).unwrap();
    assert!(!pick.config.wg_native_atomics, "{}", pick.config.describe());
    assert!(timed.iter().all(|o| o.wg_atomics == Atomics::Cas));
}
