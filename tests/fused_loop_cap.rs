//! The fused kernels under a software device's loop cap (`gpu::loop_cap`; llvmpipe ends an
//! invocation's loops after 65,535 iterations): on an X whose launch model, unbounded, gives
//! each invocation far more iterations than that, the bounded grids (fused, two-pass,
//! sorted, stream; `xty` and the full pattern) equal the f64 twin, and a caller's C beyond the
//! budget is refused with the cap named. Unbounded, this input's grids on lavapipe (2 cores)
//! were fused c = 9,375 and sorted 46 workgroups of 256-entry tiles: the full pattern's fused
//! w and both sorted patterns' w came back with NaN (entries the device skipped); two-pass at
//! c = 9,375 still ran whole (its loop turns pass a barrier, which seems to restart
//! llvmpipe's count), and is checked here all the same.

mod common;

use common::fused::{check, sparse_x};
use wgsparse::fused::{loops, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::gpu::{loop_cap, Residency};

const M: usize = 1_200_000;
const N: usize = 64;
const NNZ: usize = 2_400_000;
/// 32 lanes per row: the fewest vectors a device keeps resident, so the largest C.
const VS: u32 = 32;

#[test]
fn bounded_grids_match_the_twin_where_the_unbounded_model_loops_past_the_cap() {
    let gpu = common::gpu();
    let caps = &gpu.caps;
    if caps.adapter_name.to_lowercase().contains("llvmpipe") {
        assert!(caps.loop_cap.is_some(), "llvmpipe's loop cap was not found");
    }
    let budget = loop_cap::budget(caps.loop_cap);
    let x = sparse_x(M, N, NNZ, 97);
    let mu = NNZ as f64 / M as f64;
    let r = Residency::of(caps);
    // Without the bound, C is at least m over every resident invocation's share of vectors.
    let c_unbounded = M.div_ceil((r.units * r.threads_per_unit / VS) as usize) as u64;
    for variant in [
        Variant::Fused,
        Variant::TwoPass,
        Variant::Sorted,
        Variant::Stream,
    ] {
        let tiled = matches!(variant, Variant::Sorted | Variant::Stream);
        let o = Options {
            variant,
            vs: Some(VS),
            // Sorted, stream: small tiles, so a workgroup takes many.
            workgroup: tiled.then_some(32),
            epl: (variant == Variant::Stream).then_some(4),
            ..Default::default()
        };
        for p in [Pattern::Xty, Pattern::Full] {
            let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 61);
            let cfg = &plan.config;
            let nv = cfg.workgroup / cfg.vs;
            assert_eq!(cfg.variant, variant);
            if tiled {
                // Stream's loops per tile are short enough that the resident grid stays
                // within the budget here: its twin check above is the whole test.
                if variant == Variant::Stream {
                    continue;
                }
                // Unbounded, the sorted grid never exceeds the resident workgroups.
                if let Some(b) = budget {
                    assert!(
                        cfg.groups > r.units * r.groups_per_unit,
                        "{} (budget {b})",
                        cfg.describe()
                    );
                }
                continue;
            }
            let per_row = loops::sparse_row(mu, cfg.vs, nv, variant == Variant::TwoPass);
            if let (Some(b), Some(cap)) = (budget, caps.loop_cap) {
                assert!(
                    c_unbounded * per_row > cap as u64,
                    "the input is too small to need the bound"
                );
                assert!(
                    cfg.rows_per_vector as u64 * per_row <= b,
                    "{} over budget {b}",
                    cfg.describe()
                );
            } else {
                assert!(cfg.rows_per_vector as u64 >= c_unbounded.min(u32::MAX as u64));
            }
        }
    }
}

#[test]
fn a_rows_per_vector_beyond_the_loop_budget_is_refused() {
    let gpu = common::gpu();
    let Some(cap) = gpu.caps.loop_cap else {
        return;
    };
    let x = sparse_x(20_000, N, 40_000, 98);
    for variant in [Variant::Fused, Variant::TwoPass] {
        let o = Options {
            variant,
            vs: Some(VS),
            rows_per_vector: Some(cap),
            ..Default::default()
        };
        let e = Plan::new(gpu, Matrix::Sparse(&x), &o)
            .err()
            .unwrap_or_else(|| panic!("{variant:?}: C = {cap} accepted"))
            .to_string();
        assert!(
            e.contains("--c") && e.contains("loop cap") && e.contains(&cap.to_string()),
            "{e}"
        );
        // Within the budget it runs.
        let o = Options {
            rows_per_vector: Some(8),
            ..o
        };
        check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 62);
    }
}
