//! The scatter probe (`wgsparse roofline`'s scatter rows): every add lands (the probe checks
//! the target's sum against the adds made) on the native and compare-exchange paths, runs of
//! words included, and bad specs are refused.

mod common;

use wgsparse::report::scatter::{measure_scatter, ScatterSpec};

fn spec(run: u32, gather: bool, native_atomics: bool) -> ScatterSpec {
    ScatterSpec {
        target_bytes: 64 << 10,
        count: 200_003,
        run,
        gather,
        native_atomics,
    }
}

#[test]
fn adds_land_on_both_paths_and_loads_run() {
    let gpu = common::gpu();
    for native in [true, false] {
        for run in [1, 8] {
            let r = measure_scatter(gpu, spec(run, false, native), 2).unwrap();
            assert_eq!(r.op, "add");
            assert_eq!(r.native, native && gpu.caps.f32_atomics);
            assert_eq!(r.target_bytes, 64 << 10);
            assert!(r.gops > 0.0 && r.gops >= r.gops_median, "{r:?}");
        }
    }
    let r = measure_scatter(gpu, spec(1, true, true), 2).unwrap();
    assert_eq!(r.op, "load");
    assert!(!r.native && r.gops > 0.0);
}

#[test]
fn refuses_empty_specs() {
    let gpu = common::gpu();
    for bad in [
        ScatterSpec {
            count: 0,
            ..spec(1, false, true)
        },
        ScatterSpec {
            run: 0,
            ..spec(1, false, true)
        },
    ] {
        let e = measure_scatter(gpu, bad, 2).unwrap_err().to_string();
        assert!(e.contains("must be ≥ 1"), "{e}");
    }
    assert!(measure_scatter(gpu, spec(1, false, true), 0).is_err());
}
