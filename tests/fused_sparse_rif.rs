//! Sparse rows in flight (`Options::rows_in_flight` on sparse `fused`): a vector loads R rows'
//! bounds and their first register entries before reducing and scattering them in row order.
//! Against the f64 twin (w poisoned with NaN) for every pattern and aggregation of w, with and
//! without registers, folded long rows, the compare-exchange and no-subgroup paths, X in row
//! bands; every row of every vector taken exactly once when C is not a multiple of R; the
//! same bits for every R where the order of additions is fixed; other variants refuse R > 1;
//! the tuner times it. tests/fused.rs runs its sparse shapes at R = 1, 2 and 4 too.

mod common;

use common::fused::{check, sparse_x, with_hot_columns};
use wgsparse::fused::{tune, HostOp, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::sparse::Csr;
use wgsparse::{Error, Gpu};

/// Every value the kernel takes.
const RIF: [u32; 3] = [1, 2, 4];

fn x_of(seed: u64) -> Csr {
    with_hot_columns(&sparse_x(1_400, 450, 11_000, seed), &[2, 200], seed + 1)
}

/// The aggregations of w at VS = 4, 128 invocations: workgroup copy, hot copies, global w
/// with and without the hot-column cache.
fn aggregations(r: u32, regs: Option<u32>, long_row: Option<u32>) -> Vec<Options> {
    let o = |workgroup_w, hot_cols| Options {
        variant: Variant::Fused,
        workgroup_w,
        hot_cols,
        regs,
        rows_in_flight: Some(r),
        vs: Some(4),
        workgroup: Some(128),
        long_row,
        ..Default::default()
    };
    vec![
        o(Some(true), None),
        o(Some(true), Some(16)),
        o(Some(false), Some(8)),
        o(Some(false), Some(0)),
    ]
}

fn every_pattern(gpu: &Gpu, x: &Csr, o: &Options, seed: u64) {
    for p in Pattern::ALL {
        let (_, plan) = check(gpu, Matrix::Sparse(x), o, p, seed);
        let c = plan.config;
        assert_eq!(
            c.rows_in_flight,
            o.rows_in_flight.unwrap(),
            "{}",
            c.describe()
        );
    }
}

#[test]
fn rows_in_flight_equal_the_twin_for_every_aggregation() {
    let gpu = common::gpu();
    let x = x_of(211);
    for r in [2, 4] {
        for (regs, long_row) in [(None, None), (Some(1), Some(24)), (Some(4), None)] {
            for o in aggregations(r, regs, long_row) {
                every_pattern(gpu, &x, &o, 212);
            }
        }
    }
}

#[test]
fn rows_in_flight_without_subgroups_or_native_atomics() {
    let gpu = common::gpu_plain();
    let x = x_of(213);
    for o in aggregations(2, Some(3), None)
        .into_iter()
        .chain(aggregations(4, None, Some(20)))
    {
        every_pattern(gpu, &x, &o, 214);
    }
}

#[test]
fn rows_in_flight_over_row_bands() {
    let gpu = common::gpu_small_bindings();
    let x = x_of(215);
    for o in aggregations(4, Some(2), Some(20))
        .into_iter()
        .chain(aggregations(2, None, None))
    {
        let o = Options {
            rows_per_vector: Some(31),
            ..o
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        assert!(plan.n_bands() > 1, "{}", plan.config.describe());
        every_pattern(gpu, &x, &o, 216);
    }
}

/// Row r holds one entry, in column r (n = m): a row dropped or taken twice leaves its
/// column at β·z or doubles its product.
fn diagonal(m: usize) -> Csr {
    let row_ptr = (0..=m as u32).collect();
    let col_idx = (0..m as u32).collect();
    let values = (0..m).map(|r| 1.0 + (r % 7) as f32 / 4.0).collect();
    Csr::new(m, m, row_ptr, col_idx, values).unwrap()
}

#[test]
fn every_row_once_when_c_ends_on_a_partial_step() {
    for gpu in [common::gpu(), common::gpu_plain()] {
        // Two workgroups of 32 vectors, every vector's C rows all present (m = G·nv·C).
        for c in [3u32, 4, 5] {
            let x = diagonal(2 * 32 * c as usize);
            for (r, regs, shared) in RIF
                .into_iter()
                .flat_map(|r| [(r, None, true), (r, Some(2), true), (r, None, false)])
            {
                let o = Options {
                    variant: Variant::Fused,
                    vs: Some(4),
                    workgroup: Some(128),
                    rows_per_vector: Some(c),
                    rows_in_flight: Some(r),
                    regs,
                    workgroup_w: Some(shared),
                    hot_cols: Some(0),
                    ..Default::default()
                };
                for p in [Pattern::Full, Pattern::Xty] {
                    let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, p, 217);
                    let cf = plan.config;
                    let filled = cf.groups * (cf.workgroup / cf.vs) * cf.rows_per_vector;
                    assert_eq!(filled as usize, x.nrows, "{}", cf.describe());
                }
            }
        }
    }
}

#[test]
fn one_vector_gives_the_same_bits_for_every_r() {
    // One workgroup of one vector: every addition in a fixed order, so R (which keeps each
    // row's products and the rows' order) cannot change a bit.
    let gpu = common::gpu_plain();
    let x = sparse_x(300, 120, 4_000, 218);
    let (m, n) = (x.nrows, x.ncols);
    let vecs = common::fused::vectors(m, n, false, 219);
    let op: HostOp = common::fused::host_op(Pattern::Full, &vecs, -0.75, 1.25);
    let mut first: Option<Vec<u32>> = None;
    for (r, regs) in RIF.into_iter().flat_map(|r| [(r, None), (r, Some(2))]) {
        let o = Options {
            variant: Variant::Fused,
            vs: Some(32),
            workgroup: Some(32),
            rows_per_vector: Some(m as u32),
            rows_in_flight: Some(r),
            regs,
            workgroup_w: Some(true),
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        assert_eq!(plan.config.groups, 1, "{}", plan.config.describe());
        let bits: Vec<u32> = plan
            .run_host(gpu, &op)
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect();
        match &first {
            None => first = Some(bits),
            Some(f) => assert!(f == &bits, "{}", plan.config.describe()),
        }
    }
}

#[test]
fn bad_rows_in_flight_are_refused() {
    let gpu = common::gpu();
    let x = x_of(220);
    for (v, r) in [
        (Variant::Fused, 3),
        (Variant::Fused, 8),
        (Variant::Sorted, 2),
        (Variant::TwoPass, 2),
        (Variant::Split, 4),
        (Variant::Unfused, 2),
    ] {
        let o = Options {
            variant: v,
            rows_in_flight: Some(r),
            ..Default::default()
        };
        assert!(
            matches!(
                Plan::new(gpu, Matrix::Sparse(&x), &o),
                Err(Error::Option(_))
            ),
            "{v:?} with {r} rows in flight"
        );
    }
    // R = 1 is every variant's own walk.
    for v in [Variant::Sorted, Variant::TwoPass, Variant::Unfused] {
        let o = Options {
            variant: v,
            rows_in_flight: Some(1),
            ..Default::default()
        };
        let (_, plan) = check(gpu, Matrix::Sparse(&x), &o, Pattern::Full, 221);
        assert_eq!(plan.config.rows_in_flight, 1);
    }
}

#[test]
fn the_tuner_times_rows_in_flight_and_its_pick_equals_the_twin() {
    let gpu = common::gpu();
    let x = x_of(222);
    // `fused` asked for: the tuner's last step is the rows in flight.
    let asked = Options {
        variant: Variant::Fused,
        ..Default::default()
    };
    let (pick, timed) = tune::tune(gpu, Matrix::Sparse(&x), &asked).unwrap();
    assert_eq!(pick.config.variant, Variant::Fused);
    for r in [2, 4] {
        assert!(
            timed.iter().any(|o| o.rows_in_flight == Some(r)),
            "R = {r} not timed: {timed:?}"
        );
    }
    let c = pick.config;
    let picked = Options {
        variant: c.variant,
        vs: Some(c.vs),
        workgroup: Some(c.workgroup),
        hot_cols: Some(c.hot_cols),
        long_row: Some(c.long_row),
        regs: Some(c.regs),
        rows_in_flight: Some(c.rows_in_flight),
        workgroup_w: Some(c.workgroup_w),
        ..Default::default()
    };
    check(gpu, Matrix::Sparse(&x), &picked, Pattern::Full, 223);
}
