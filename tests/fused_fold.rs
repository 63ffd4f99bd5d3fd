//! The folded sequence of the sparse fused kernels (`Options::fold`): the long-row dot
//! pre-pass initialising w = β·z and the long-row chunks taken by the main kernel, or without
//! long rows one dispatch whose last workgroup writes w, against the unfolded passes and the
//! f64 twin (w poisoned with NaN before each run) for every pattern × sparse variant, with and
//! without long rows, with hot columns, β = 0 with NaN z, X in row bands, and runs repeated
//! on one plan; the dispatches each plan records are counted and pinned.

mod common;

use common::fused::{host_op, run_counted, sparse_x, vectors, with_hot_columns};
use wgsparse::fused::{HostOp, Matrix, Options, Pattern, Plan, Variant};
use wgsparse::sddmm::cpu::compare;
use wgsparse::sparse::Csr;
use wgsparse::Gpu;

/// `got` against the twin's `want` within the twin's bound scaled by `k`.
fn assert_close(x: &Csr, op: &HostOp, got: &[f32], want: &[f64], k: f64, what: &str) {
    let (_, mag) = Matrix::Sparse(x).reference(op);
    let mag: Vec<f64> = mag.iter().map(|m| k * m).collect();
    let cmp = compare(got, want, &mag, Matrix::Sparse(x).rounding_terms());
    assert!(
        cmp.ok(),
        "{what}: w[{:?}] = {:?} want {:?} (max rel err {:.3e})",
        cmp.first_bad,
        cmp.first_bad.map(|e| got[e]),
        cmp.first_bad.map(|e| want[e]),
        cmp.max_rel_error
    );
}

/// The dispatches a sparse plan must record for `p`: fused / sorted with long rows 2 folded,
/// else 5 (3 for `xty`: no dot pre-pass); without long rows 1 when the main kernel finishes
/// w, else 2; two-pass 2; unfused β·z, X·y (none for `xty`), ⊙v when `p` takes v, Xᵀp.
fn expected_dispatches(plan: &Plan, p: Pattern) -> usize {
    let xty = p == Pattern::Xty;
    match plan.config.variant {
        Variant::TwoPass => 2,
        Variant::Unfused => 2 + usize::from(!xty) + usize::from(p.has_v()),
        _ if plan.finishes() => 1,
        _ if plan.long_chunks() == 0 || plan.long_folded() => 2,
        _ if xty => 3,
        _ => 5,
    }
}

/// Every pattern under `base` with fold on and off: each against the twin, the two against
/// each other (twice the twin's bound), dispatch counts pinned on one band. Returns whether
/// the folded plan folded its long rows, and whether it finished w in its main kernel.
fn fold_on_off(gpu: &Gpu, x: &Csr, base: &Options, seed: u64) -> (bool, bool) {
    let (mut folded, mut finishes) = (false, false);
    for p in Pattern::ALL {
        let vecs = vectors(x.nrows, x.ncols, p == Pattern::Xty, seed);
        let op = host_op(p, &vecs, -0.75, 1.25);
        let (want, _) = Matrix::Sparse(x).reference(&op);
        let mut outs = vec![];
        for fold in [true, false] {
            let o = Options {
                fold,
                ..base.clone()
            };
            let plan = Plan::new(gpu, Matrix::Sparse(x), &o).unwrap_or_else(|e| panic!("{e}"));
            let what = format!("{} {:?} fold {fold}", plan.config.describe(), p);
            let (got, count) = run_counted(gpu, &plan, &op);
            assert_close(x, &op, &got, &want, 1.0, &what);
            assert_eq!(count, plan.dispatches(p), "{what}: Plan::dispatches");
            if plan.n_bands() == 1 {
                assert_eq!(count, expected_dispatches(&plan, p), "{what}");
            }
            if !fold {
                assert!(!plan.long_folded() && !plan.finishes(), "{what}");
            }
            // The finishing plan leaves its accumulator and count zero: a second run (new
            // operands drawn from the same seed, w poisoned again) is as exact.
            if plan.finishes() {
                let (again, _) = run_counted(gpu, &plan, &op);
                assert_close(x, &op, &again, &want, 1.0, &format!("{what}, run 2"));
            }
            folded |= plan.long_folded();
            finishes |= plan.finishes();
            outs.push(got);
        }
        let on64: Vec<f64> = outs[0].iter().map(|&v| v as f64).collect();
        assert_close(
            x,
            &op,
            &outs[1],
            &on64,
            2.0,
            &format!("{p:?} fold on vs off"),
        );
    }
    (folded, finishes)
}

/// The sparse variants: fused with w in workgroup memory, in global memory with and without
/// hot columns, sorted, two-pass, unfused.
fn variants(long_row: Option<u32>) -> Vec<Options> {
    let o = |variant, workgroup_w, hot_cols| Options {
        variant,
        workgroup_w,
        hot_cols,
        long_row,
        vs: Some(4),
        // n ≤ 4·128 columns: the one-dispatch ending where w is in workgroup memory.
        workgroup: Some(128),
        ..Default::default()
    };
    vec![
        o(Variant::Fused, None, None),
        o(Variant::Fused, Some(false), Some(4)),
        o(Variant::Fused, Some(false), Some(0)),
        o(Variant::Sorted, None, None),
        o(Variant::Sorted, Some(false), None),
        o(Variant::TwoPass, None, None),
        o(Variant::Unfused, None, None),
    ]
}

#[test]
fn every_pattern_and_variant_folded_and_not() {
    let gpu = common::gpu();
    // Power-law rows up to a few hundred entries, hot columns: with a threshold of 24 the
    // heavy rows split into up to ~25 chunks each (folded); without one, none split.
    let x = with_hot_columns(&sparse_x(1_200, 500, 9_000, 71), &[3, 250], 72);
    let longest = (0..x.nrows).map(|r| x.row_range(r).len()).max().unwrap();
    assert!((200..=24 * 64).contains(&longest), "longest row {longest}");
    for (long_row, any_long) in [(Some(24), true), (None, false)] {
        for o in variants(long_row) {
            let (folded, finishes) = fold_on_off(gpu, &x, &o, 81);
            let ours = matches!(o.variant, Variant::Fused | Variant::Sorted);
            assert_eq!(folded, any_long && ours, "{o:?}");
            let shared = o.workgroup_w != Some(false);
            assert_eq!(finishes, !any_long && ours && shared, "{o:?}");
        }
    }
}

#[test]
fn without_subgroups_or_native_atomics() {
    // The compare-exchange and workgroup-memory paths of the folded kernels and of the
    // one-dispatch ending (its exchange on the accumulator's bits).
    let gpu = common::gpu_plain();
    let x = sparse_x(800, 300, 6_000, 73);
    let five = |l| variants(l).into_iter().take(5);
    for o in five(Some(16)).chain(five(None)) {
        fold_on_off(gpu, &x, &o, 82);
    }
}

#[test]
fn rows_of_too_many_chunks_keep_the_unfolded_sequence() {
    // A threshold of 2: rows of more than 128 entries have more chunks than the folded main
    // kernel sums per chunk, so the plan records the unfolded passes (5 dispatches).
    let gpu = common::gpu();
    let x = sparse_x(600, 400, 5_000, 74);
    assert!((0..x.nrows).any(|r| x.row_range(r).len() > 2 * 64));
    for variant in [Variant::Fused, Variant::Sorted] {
        let o = Options {
            variant,
            long_row: Some(2),
            workgroup: Some(64),
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        assert!(plan.config.fold && plan.long_chunks() > 0 && !plan.long_folded());
        assert_eq!(plan.dispatches(Pattern::Full), 5);
        fold_on_off(gpu, &x, &o, 83);
    }
}

#[test]
fn beta_zero_never_reads_z() {
    // The folded dot pre-pass initialises w: with β = 0 a NaN z must stay unread.
    let gpu = common::gpu();
    let x = sparse_x(900, 300, 7_000, 75);
    let folded = variants(Some(16)).into_iter().take(5);
    // Without long rows and w in workgroup memory: the main kernel's last workgroup.
    let finishing = [0, 3].map(|i| variants(None)[i].clone());
    for o in folded.chain(finishing) {
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        let count = plan.dispatches(Pattern::Full);
        assert!(
            plan.long_folded() || plan.finishes(),
            "{}",
            plan.config.describe()
        );
        for p in [Pattern::Full, Pattern::XtxyBz] {
            let mut vecs = vectors(x.nrows, x.ncols, false, 84);
            vecs.z.fill(f32::NAN);
            let op = host_op(p, &vecs, -0.75, 0.0);
            let (want, _) = Matrix::Sparse(&x).reference(&op);
            let (got, recorded) = run_counted(gpu, &plan, &op);
            assert_eq!(recorded, count);
            assert!(got.iter().all(|v| v.is_finite()), "{p:?}: NaN from z");
            assert_close(&x, &op, &got, &want, 1.0, &format!("{p:?} β = 0"));
        }
    }
}

#[test]
fn banded_x_folded_and_not() {
    // 8 KiB bindings: X in many row bands, long rows in several of them (band 0 without
    // chunks still initialises w), each band's chunks at its own offset of the partials.
    let gpu = common::gpu_small_bindings();
    let x = sparse_x(1_000, 300, 8_000, 76);
    for o in variants(Some(20)).into_iter().chain(variants(None)) {
        // Two workgroups: two-pass partials (groups × n) within one binding.
        let o = Options {
            rows_per_vector: Some(32),
            ..o
        };
        let (folded, finishes) = fold_on_off(gpu, &x, &o, 85);
        let ours = matches!(o.variant, Variant::Fused | Variant::Sorted);
        assert_eq!(folded, ours && o.long_row.is_some(), "{o:?}");
        let shared = o.workgroup_w != Some(false);
        assert_eq!(finishes, ours && shared && o.long_row.is_none(), "{o:?}");
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        assert!(plan.n_bands() >= 4, "{} bands", plan.n_bands());
    }
}

#[test]
fn dense_plans_count_their_dispatches() {
    // Dense X: no fold; Plan::dispatches still equals what each variant records.
    let gpu = common::gpu();
    let x = wgsparse::gen::dense_uniform(300, 40, 77);
    for v in [Variant::Fused, Variant::TwoPass, Variant::Unfused] {
        let plan = Plan::new(gpu, Matrix::Dense(&x), &common::fused::opts(v)).unwrap();
        for p in Pattern::ALL {
            let vecs = vectors(x.nrows, x.ncols, p == Pattern::Xty, 86);
            let op = host_op(p, &vecs, -0.75, 1.25);
            let (_, count) = run_counted(gpu, &plan, &op);
            assert_eq!(
                count,
                plan.dispatches(p),
                "{} {p:?}",
                plan.config.describe()
            );
        }
    }
}

#[test]
fn the_cli_reports_dispatches_and_times_both_sequences() {
    // `--fold on|off` on the CLI: the one-dispatch ending against β·z + the main kernel, both
    // checked, `dispatches` and `fold` in the JSON.
    let run = |fold: &str| {
        common::wgsparse_json(&[
            "fused",
            "--gen",
            "demo",
            "--scale",
            "0.1",
            "--variant",
            "fused",
            "--pattern",
            "full",
            "--fold",
            fold,
            "--check",
            "--reps",
            "2",
            "--json",
        ])
    };
    for (fold, dispatches) in [("on", 1), ("off", 2)] {
        let j = run(fold);
        assert_eq!(j["ok"], true, "{j}");
        let r = &j["results"][0];
        assert_eq!(r["dispatches"], dispatches, "{r}");
        assert_eq!(r["measurement"]["config"]["fold"], fold == "on", "{r}");
    }
}

#[test]
fn sorted_at_1024_invocations_with_workgroup_memory_full() {
    // Sorted at 1,024 invocations fills workgroup memory exactly when 4·EPL·WG + 4·n is the
    // limit: with EPL = 4 at n = limit/4 − 4,096 (lavapipe: 32 KiB at n = 4,096; an H200:
    // 48 KiB at n = 8,192; EPL = 8 would need 16 KiB more there). The one-dispatch ending's
    // flag is 4 bytes more: that plan must keep the β·z pre-pass (on an H200 the overfull
    // kernel never finished; the kernel registry now refuses it), and folds where the flag
    // fits (n = limit/16). Short rows: no long-row chunks.
    let gpu = common::gpu();
    let limit = gpu.caps.max_workgroup_storage_bytes as usize;
    for (n, fits) in [(limit / 4 - 4 * 1024, false), (limit / 16, true)] {
        let x = sparse_x(3_000, n, 24_000, 87);
        let o = Options {
            variant: Variant::Sorted,
            workgroup: Some(1024),
            ..Default::default()
        };
        let plan = Plan::new(gpu, Matrix::Sparse(&x), &o).unwrap();
        let c = plan.config;
        let full = 4 * (c.tile as usize + n) == limit;
        assert!(
            c.workgroup_w && c.fold && c.subgroup_reduce,
            "{}",
            c.describe()
        );
        assert_eq!((full, plan.long_chunks()), (!fits, 0), "{}", c.describe());
        // Run first: an overfull kernel is refused when it is created.
        let (folded, finishes) = fold_on_off(gpu, &x, &o, 88);
        assert_eq!(plan.finishes(), fits, "{}", c.describe());
        assert_eq!((folded, finishes), (false, fits), "n = {n}");
    }
}
