//! SDDMM over several devices: one adapter opened as two (and three) devices, S cut by rows
//! and by columns; the gathered P must equal one device's P bit for bit for every variant
//! (same configuration), and the f64 twin within the usual bound.

mod common;

use std::sync::OnceLock;

use wgsparse::gen;
use wgsparse::gpu::GpuOptions;
use wgsparse::sddmm::{
    cpu, Breakdown, Cut, MultiPlan, Options, Plan, ReadMode, Resident, Transpose, Variant,
    WriteMode,
};
use wgsparse::sparse::{Csr, Dense};
use wgsparse::Gpu;

/// Three devices on the test adapter (lavapipe on CI).
fn devices() -> &'static [Gpu] {
    static GPUS: OnceLock<Vec<Gpu>> = OnceLock::new();
    GPUS.get_or_init(|| {
        Gpu::several(
            Some(3),
            &GpuOptions {
                share_adapters: true,
                ..Default::default()
            },
        )
        .unwrap_or_else(|e| panic!("{e}"))
    })
}

/// Every variant with its configuration pinned, so a part resolves exactly as the whole.
fn pinned() -> Vec<Options> {
    let base = Options {
        tk: Some(16),
        ti: Some(16),
        vws: Some(4),
        unroll: Some(1),
        workgroup: Some(64),
        transpose: Transpose::Never,
        build_on_device: Some(false),
        ..Default::default()
    };
    let mut out = Vec::new();
    for variant in Variant::CONCRETE {
        let tj = match variant {
            Variant::SmSm => Some(32),
            Variant::RowRun => Some(64),
            _ => Some(128),
        };
        out.push(Options {
            variant,
            tj,
            block_nnz: (variant == Variant::RowRun).then_some(16),
            ..base.clone()
        });
    }
    out
}

fn operands(s: &Csr, k: usize, seed: u64) -> (Dense, Dense) {
    (
        gen::dense_uniform(s.nrows, k, seed),
        gen::dense_uniform(s.ncols, k, seed + 1),
    )
}

fn assert_partitioned_equals_one(s: &Csr, k: usize, devices: &[Gpu], what: &str) {
    let (a, b) = operands(s, k, 9);
    let (want64, mag) = cpu::sddmm(s, &a, &b);
    for options in pinned() {
        let one = Plan::new(&devices[0], s, k, options.clone())
            .unwrap()
            .run_host(&devices[0], &a, &b)
            .unwrap();
        for cut in [Cut::Rows, Cut::Columns] {
            let multi = MultiPlan::new(devices, s, k, &options, cut, false).unwrap();
            assert_eq!(multi.shards().iter().map(|p| p.nnz).sum::<usize>(), s.nnz());
            let got = multi.run_host(&a, &b).unwrap();
            let same = got
                .iter()
                .zip(&one)
                .position(|(x, y)| x.to_bits() != y.to_bits());
            assert!(
                same.is_none(),
                "{what}: {:?} cut by {cut:?} differs from one device at nonzero {:?}: {} vs {}",
                options.variant,
                same,
                same.map_or(0.0, |e| got[e]),
                same.map_or(0.0, |e| one[e]),
            );
            let cmp = cpu::compare(&got, &want64, &mag, k);
            assert!(
                cmp.ok(),
                "{what}: {:?} {cut:?} vs the twin",
                options.variant
            );
        }
    }
}

#[test]
fn two_and_three_devices_equal_one_device_exactly() {
    let s = gen::power_law(700, 500, 12_000, 1.3, 5).unwrap();
    assert_partitioned_equals_one(&s, 24, &devices()[..2], "power-law, 2 devices");
    let s = gen::power_law_skewed(300, 900, 6_000, 0.7, 1.4, 6).unwrap();
    assert_partitioned_equals_one(&s, 40, devices(), "skewed, 3 devices");
}

#[test]
fn empty_parts_and_heavy_rows_on_boundaries() {
    // One row holds almost every nonzero: a row cut leaves parts empty or tiny, a column
    // cut splits it.
    let mut row_ptr = vec![0u32, 3];
    let mut col_idx: Vec<u32> = vec![1, 7, 90];
    row_ptr.push(row_ptr[1] + 100);
    col_idx.extend(0..100u32);
    row_ptr.push(row_ptr[2]);
    row_ptr.push(row_ptr[3] + 2);
    col_idx.extend([5, 99]);
    let nnz = col_idx.len();
    let values = (0..nnz).map(|i| 0.5 + (i % 7) as f32).collect();
    let s = Csr::new(4, 100, row_ptr, col_idx, values).unwrap();
    assert_partitioned_equals_one(&s, 8, devices(), "heavy row");
    // Fewer rows than devices.
    let s = Csr::new(1, 5, vec![0, 2], vec![1, 3], vec![1.0, 2.0]).unwrap();
    assert_partitioned_equals_one(&s, 8, devices(), "one row");
}

#[test]
fn outputs_stay_on_their_devices_and_shapes_are_checked() {
    let s = gen::power_law(200, 150, 2_000, 1.2, 3).unwrap();
    let devs = &devices()[..2];
    let options = pinned().remove(1);
    let multi = MultiPlan::new(devs, &s, 16, &options, Cut::Rows, false).unwrap();
    let (a, b) = operands(&s, 16, 1);
    let ops = multi.upload(&a, &b).unwrap();
    multi.run(&ops).unwrap();
    let whole = multi.gather(&ops).unwrap();
    // Under a row cut each device's output is a contiguous range of P.
    let mut at = 0;
    for (d, info) in multi.shards().iter().enumerate() {
        let part = ops.output(d).unwrap().read(&devs[d]).unwrap();
        assert_eq!(part, whole[at..at + info.nnz]);
        at += info.nnz;
    }
    let wrong = gen::dense_uniform(s.nrows, 8, 1);
    assert!(multi.upload(&wrong, &b).is_err());
}

#[test]
fn new_operands_written_in_place_equal_a_fresh_upload() {
    // An iterating caller's step: the second A and B written over the resident operands give
    // exactly what a fresh upload of them gives, under both cuts (padded rows: K = 12).
    let s = gen::power_law(300, 220, 3_000, 1.2, 5).unwrap();
    let devs = &devices()[..2];
    let options = pinned().remove(1);
    for cut in [Cut::Rows, Cut::Columns] {
        let multi = MultiPlan::new(devs, &s, 12, &options, cut, false).unwrap();
        let (a0, b0) = operands(&s, 12, 1);
        let (a1, b1) = operands(&s, 12, 7);
        let ops = multi.upload(&a0, &b0).unwrap();
        multi.run(&ops).unwrap();
        let first = multi.gather(&ops).unwrap();
        multi.write(&ops, &a1, &b1).unwrap();
        multi.run(&ops).unwrap();
        let reused = multi.gather(&ops).unwrap();
        let fresh = multi.run_host(&a1, &b1).unwrap();
        assert_eq!(reused, fresh, "{cut:?}");
        assert_ne!(reused, first, "{cut:?}: the new operands changed nothing");
        let wrong = gen::dense_uniform(s.nrows, 8, 1);
        assert!(multi.write(&ops, &wrong, &b1).is_err());
        let mut bad = a1.clone();
        bad.data[5] = f32::NAN;
        assert!(multi.write(&ops, &bad, &b1).is_err());
    }
}

#[test]
fn asking_for_more_devices_than_adapters_is_an_error_unless_shared() {
    let err = Gpu::several(Some(64), &GpuOptions::default());
    if std::env::var("WGSPARSE_SHARE_ADAPTERS").is_err() {
        let e = err.err().expect("64 devices on this machine");
        assert!(e.to_string().contains("64 devices"), "{e}");
    }
    assert!(Gpu::several(Some(0), &GpuOptions::default()).is_err());
}

#[test]
fn cli_runs_on_two_devices_and_reports_both_cuts() {
    // `sddmm --gpus 2` on the demo matrix with one adapter shared as two devices, checked;
    // its JSON.
    let run_two = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "sddmm",
            "--gpus",
            "2",
            "--gen",
            "demo",
            "--scale",
            "0.3",
            "--k",
            "8",
            "--variant",
            "warp",
            "--check",
            "--json",
        ];
        args.extend_from_slice(extra);
        let out = std::process::Command::new(common::binary())
            .args(&args)
            .env("WGSPARSE_SHARE_ADAPTERS", "1")
            .env(
                "WGSPARSE_CACHE_DIR",
                std::env::temp_dir().join("wgsparse-multi-test"),
            )
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(j["ok"], true);
        j
    };
    let j = run_two(&["--reps", "2"]);
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "rows and columns");
    for r in results {
        let devices = r["devices"].as_array().unwrap();
        assert_eq!(devices.len(), 2);
        let nnz: u64 = devices
            .iter()
            .map(|d| d["shard"]["nnz"].as_u64().unwrap())
            .sum();
        assert_eq!(nnz, j["matrix"]["nnz"].as_u64().unwrap());
        assert!(r["max_rel_error"].as_f64().unwrap() < 1e-5);
        assert!(r["kernel_ms"].as_f64().unwrap() > 0.0);
        // The iteration with P read back and with P left on the GPUs, on both sides, and
        // where its time goes.
        for key in ["end_to_end_ms", "resident_ms"] {
            for pre in ["", "one_gpu_"] {
                let v = r[format!("{pre}{key}")].as_f64().unwrap();
                assert!(v > 0.0, "{pre}{key}: {v}");
            }
        }
        for pre in ["", "one_gpu_"] {
            let b = &r[format!("{pre}breakdown_ms")];
            let phases: f64 = ["write", "run", "readback", "gather"]
                .iter()
                .map(|p| b[p].as_f64().unwrap())
                .sum();
            assert!(phases > 0.0 && (phases - b["total"].as_f64().unwrap()).abs() < 1e-9);
            for (phase, parts) in [
                ("write", ["write_layout", "write_copy"]),
                ("readback", ["readback_copy", "readback_map"]),
            ] {
                let [x, y] = parts.map(|p| b[p].as_f64().unwrap());
                assert!(x >= 0.0 && y >= 0.0, "{pre}{phase}: {x} {y}");
                assert!(
                    (x + y - b[phase].as_f64().unwrap()).abs() < 1e-9,
                    "{pre}{phase}"
                );
            }
        }
        assert_eq!(r["write_mode"], "staged");
        assert_eq!(r["read_mode"], "whole");
    }
    // The overlapped write, on both sides of the comparison, checked the same way.
    let j = run_two(&["--cut", "rows", "--overlap-write", "--reps", "1"]);
    assert_eq!(j["results"][0]["write_mode"], "overlapped");
    // The pieced read-back (checked the same way): the row cut and its baseline read in
    // pieces, the column cut whole; the overlapped read's readback and gather still add up.
    let j = run_two(&["--overlap-read", "--reps", "1"]);
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "rows and columns");
    for (r, read) in results.iter().zip(["pieced", "whole"]) {
        assert_eq!(r["read_mode"], read, "{}", r["cut"]);
        for pre in ["", "one_gpu_"] {
            let b = &r[format!("{pre}breakdown_ms")];
            let [x, y, rb] =
                ["readback_copy", "readback_map", "readback"].map(|p| b[p].as_f64().unwrap());
            assert!(
                x >= 0.0 && y >= 0.0 && (x + y - rb).abs() < 1e-9,
                "{pre}: {b}"
            );
            assert!(b["gather"].as_f64().unwrap() >= 0.0, "{pre}: {b}");
        }
    }
    // Without sharing, two devices on a one-adapter machine is a clear error, exit 2.
    let out = std::process::Command::new(common::binary())
        .args(["sddmm", "--gpus", "2", "--gen", "demo", "--k", "8"])
        .env_remove("WGSPARSE_SHARE_ADAPTERS")
        .output()
        .expect("the binary runs");
    if Gpu::several(Some(2), &GpuOptions::default()).is_err() {
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("2 devices asked for"));
    }
}

/// Bitwise equality, naming the first difference.
fn assert_same_bits(got: &[f32], want: &[f32], what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let at = got
        .iter()
        .zip(want)
        .position(|(x, y)| x.to_bits() != y.to_bits());
    assert!(
        at.is_none(),
        "{what}: differs at nonzero {at:?}: {} vs {}",
        at.map_or(0.0, |e| got[e]),
        at.map_or(0.0, |e| want[e])
    );
}

#[test]
fn iterations_read_back_on_request_and_equal_one_device() {
    // An iterating caller: new A and B every iteration through the reused staging buffers;
    // P read back into the caller's array when asked (gathered in S's CSR order), left on the
    // devices otherwise. Each iteration equals one device's plan on the same operands, under
    // both cuts, on two and three devices, with padded (K = 12) and unpadded (K = 16) rows.
    let s = gen::power_law_skewed(260, 310, 4_000, 0.8, 1.3, 11).unwrap();
    for (k, devs) in [(12, &devices()[..2]), (16, devices())] {
        let options = pinned().remove(4);
        let one = Plan::new(&devs[0], &s, k, options.clone()).unwrap();
        for cut in [Cut::Rows, Cut::Columns] {
            let multi = MultiPlan::new(devs, &s, k, &options, cut, false).unwrap();
            let (a0, b0) = operands(&s, k, 100);
            let ops = multi.upload(&a0, &b0).unwrap();
            let mut p = vec![f32::NAN; s.nnz()];
            for it in 0..3u64 {
                let what = format!("K={k}, {} devices, {cut:?}, iteration {it}", devs.len());
                let (a, b) = operands(&s, k, 200 + 10 * it);
                let want = one.run_host(&devs[0], &a, &b).unwrap();
                multi.poison(&ops).unwrap();
                p.fill(f32::NAN);
                multi.iterate(&ops, &a, &b, Some(&mut p)).unwrap();
                assert_same_bits(&p, &want, &what);
                // P left on the devices, then read on request: per device and gathered.
                let (a, b) = operands(&s, k, 300 + 10 * it);
                let want = one.run_host(&devs[0], &a, &b).unwrap();
                multi.poison(&ops).unwrap();
                multi.iterate(&ops, &a, &b, None).unwrap();
                let parts = multi.read_parts(&ops).unwrap();
                for (d, part) in parts.iter().enumerate() {
                    let on_device = ops.output(d).map(|o| o.read(&devs[d]).unwrap());
                    assert_eq!(on_device.unwrap_or_default(), *part, "{what}: part {d}");
                }
                if cut == Cut::Rows {
                    assert_same_bits(&parts.concat(), &want, &format!("{what}, parts"));
                }
                let mut gathered = vec![f32::NAN; s.nnz()];
                multi.gather_into(&ops, &mut gathered).unwrap();
                assert_same_bits(&gathered, &want, &format!("{what}, gathered"));
            }
            assert!(multi.iterate(&ops, &a0, &b0, Some(&mut p[1..])).is_err());
        }
    }
}

#[test]
fn a_refused_write_leaves_the_operands_usable() {
    // A non-finite value is refused, named by row and column, before any device receives
    // anything (overlapped: before any device's spare operands become current); the
    // staging buffers stay usable and the next write goes through.
    let s = gen::power_law(240, 200, 2_500, 1.2, 8).unwrap();
    let devs = &devices()[..2];
    let options = pinned().remove(1);
    for (cut, mode) in modes() {
        let cut_mode = format!("{cut:?}, {mode:?}");
        let multi = MultiPlan::new(devs, &s, 12, &options, cut, false).unwrap();
        let (a0, b0) = operands(&s, 12, 1);
        let (a1, b1) = operands(&s, 12, 2);
        let ops = multi.upload_with(&a0, &b0, mode).unwrap();
        let mut p0 = vec![f32::NAN; s.nnz()];
        multi.iterate(&ops, &a0, &b0, Some(&mut p0)).unwrap();
        let mut bad = b1.clone();
        bad.data[7 * 12 + 5] = f32::INFINITY;
        let e = multi
            .iterate(&ops, &a1, &bad, None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("B") && e.contains("row 7, column 5"), "{e}");
        // The refused operands cannot be flushed to a device by hand either.
        assert!(ops.device(0).unwrap().flush(&devs[0]).is_err());
        // Nothing moved: the devices still hold A0 and B0.
        let mut again = vec![f32::NAN; s.nnz()];
        multi.gather_into(&ops, &mut again).unwrap();
        assert_same_bits(&again, &p0, &format!("{cut_mode} after the refused write"));
        // A NaN in A's last row: under a row cut the first device lays out (and, overlapped,
        // copies) all of its rows before the last device refuses; still no device changes,
        // and runs on what they hold give P0 again.
        let mut bad = a1.clone();
        let last = bad.data.len() - 1;
        bad.data[last] = f32::NAN;
        let e = multi.write(&ops, &bad, &b1).unwrap_err().to_string();
        assert!(e.contains("A") && e.contains("row 239, column 11"), "{e}");
        for (d, dev) in devs.iter().enumerate() {
            let o = ops.device(d).unwrap();
            let (held, info) = (o.a().read(dev).unwrap(), &multi.shards()[d]);
            assert_eq!(
                held.data,
                a0.data[info.rows.0 * 12..info.rows.1 * 12],
                "{cut_mode}"
            );
        }
        multi.poison(&ops).unwrap();
        multi.run(&ops).unwrap();
        multi.gather_into(&ops, &mut again).unwrap();
        assert_same_bits(&again, &p0, &format!("{cut_mode} after the refused A"));
        multi.iterate(&ops, &a1, &b1, Some(&mut again)).unwrap();
        let fresh = multi.run_host(&a1, &b1).unwrap();
        assert_same_bits(&again, &fresh, &format!("{cut_mode} after the next write"));
    }
}

/// Both cuts under both write modes.
fn modes() -> Vec<(Cut, WriteMode)> {
    let mut out = Vec::new();
    for cut in [Cut::Rows, Cut::Columns] {
        for mode in [WriteMode::Staged, WriteMode::Overlapped] {
            out.push((cut, mode));
        }
    }
    out
}

/// A breakdown's phases and parts are non-negative and the parts add up to their phase.
fn assert_parts_add_up(b: &Breakdown, what: &str) {
    for v in [b.write, b.run, b.readback, b.gather] {
        assert!(v >= 0.0, "{what}: {b:?}");
    }
    for (phase, x, y) in [
        (b.write, b.write_layout, b.write_copy),
        (b.readback, b.readback_copy, b.readback_map),
    ] {
        assert!(x >= 0.0 && y >= 0.0, "{what}: {b:?}");
        assert!(
            (x + y - phase).abs() <= 1e-12 * phase.max(1.0),
            "{what}: {b:?}"
        );
    }
}

#[test]
fn overlapped_writes_give_the_staged_writes_p_bit_for_bit() {
    // A and B written in pieces, each piece's copy queued into the spare operands as it is
    // laid out: every iteration's P (read back, or left on the devices and gathered) equals
    // the staged write's bit for bit, on two devices under both cuts and on one device, with
    // padded rows (K = 12); and the breakdowns' parts add up to their phases.
    let s = gen::power_law_skewed(300, 280, 4_000, 0.8, 1.3, 21).unwrap();
    let devs = &devices()[..2];
    let options = pinned().remove(4);
    let k = 12;
    for cut in [Cut::Rows, Cut::Columns] {
        let multi = MultiPlan::new(devs, &s, k, &options, cut, false).unwrap();
        let (a0, b0) = operands(&s, k, 40);
        let staged = multi.upload_with(&a0, &b0, WriteMode::Staged).unwrap();
        let overlapped = multi.upload_with(&a0, &b0, WriteMode::Overlapped).unwrap();
        assert_eq!(overlapped.device(0).unwrap().mode(), WriteMode::Overlapped);
        let (mut want, mut got) = (vec![f32::NAN; s.nnz()], vec![f32::NAN; s.nnz()]);
        for it in 0..3u64 {
            let what = format!("{cut:?}, iteration {it}");
            let (a, b) = operands(&s, k, 50 + 10 * it);
            multi.iterate(&staged, &a, &b, Some(&mut want)).unwrap();
            multi.poison(&overlapped).unwrap();
            multi.iterate(&overlapped, &a, &b, Some(&mut got)).unwrap();
            assert_same_bits(&got, &want, &what);
            let (a, b) = operands(&s, k, 55 + 10 * it);
            multi.iterate(&staged, &a, &b, None).unwrap();
            multi.poison(&overlapped).unwrap();
            multi.iterate(&overlapped, &a, &b, None).unwrap();
            multi.gather_into(&staged, &mut want).unwrap();
            multi.gather_into(&overlapped, &mut got).unwrap();
            assert_same_bits(&got, &want, &format!("{what}, left on the devices"));
        }
        for ops in [&staged, &overlapped] {
            let b = multi.breakdown(ops, &a0, &b0, 3).unwrap();
            assert_parts_add_up(&b, &format!("{cut:?}"));
        }
    }
    let gpu = &devs[0];
    let plan = Plan::new(gpu, &s, k, options).unwrap();
    let whole = |mode| Resident::with_mode(gpu, &plan, 0..s.nrows, 0..s.ncols, 2, mode);
    let (staged, overlapped) = (
        whole(WriteMode::Staged).unwrap(),
        whole(WriteMode::Overlapped).unwrap(),
    );
    let (mut want, mut got) = (vec![f32::NAN; s.nnz()], vec![f32::NAN; s.nnz()]);
    for seed in [60, 61] {
        let (a, b) = operands(&s, k, seed);
        staged.iterate(gpu, &plan, &a, &b, Some(&mut want)).unwrap();
        overlapped.poison(gpu).unwrap();
        overlapped
            .iterate(gpu, &plan, &a, &b, Some(&mut got))
            .unwrap();
        assert_same_bits(&got, &want, &format!("one device, seed {seed}"));
        let (m, n) = (
            overlapped.a().read(gpu).unwrap(),
            overlapped.b().read(gpu).unwrap(),
        );
        assert!(m == a && n == b, "one device, seed {seed}: the operands");
        let mut bad = b.clone();
        bad.data[3] = f32::NEG_INFINITY;
        assert!(overlapped.iterate(gpu, &plan, &a, &bad, None).is_err());
        overlapped.poison(gpu).unwrap();
        overlapped.submit(gpu, &plan).unwrap();
        let kept = overlapped.output().read(gpu).unwrap();
        assert_same_bits(&kept, &want, &format!("one device, seed {seed}, refused B"));
    }
    for r in [&staged, &overlapped] {
        let (a, b) = operands(&s, k, 70);
        let b = r.breakdown(gpu, &plan, &a, &b, 3).unwrap();
        assert_parts_add_up(&b, "one device");
    }
}

#[test]
fn pieced_read_backs_give_the_whole_read_backs_p_bit_for_bit() {
    // P read back in pieces of rows far smaller than a part (8 and 64 bytes: many pieces,
    // rows longer than a piece, empty rows inside pieces) through two buffers in rotation:
    // every iteration's P equals the whole read-back's bit for bit, on two devices under the
    // row cut (both write modes) and on one device, and with a part left empty; a refused
    // write leaves the caller's P as it was; the column cut refuses pieces.
    let s = gen::power_law_skewed(300, 280, 4_000, 0.8, 1.3, 21).unwrap();
    let devs = &devices()[..2];
    let options = pinned().remove(4);
    let k = 12;
    let tiny = |piece_bytes| ReadMode::Pieced { piece_bytes };
    let multi = MultiPlan::new(devs, &s, k, &options, Cut::Rows, false).unwrap();
    let (a0, b0) = operands(&s, k, 40);
    let whole = multi.upload(&a0, &b0).unwrap();
    assert_eq!(whole.read_mode(), ReadMode::Whole);
    let (mut want, mut got) = (vec![f32::NAN; s.nnz()], vec![f32::NAN; s.nnz()]);
    for (write, read) in [
        (WriteMode::Staged, tiny(64)),
        (WriteMode::Overlapped, tiny(8)),
    ] {
        let ops = multi.upload_modes(&a0, &b0, write, read).unwrap();
        assert_eq!(ops.read_mode(), read);
        for it in 0..2u64 {
            let what = format!("{write:?}, {read:?}, iteration {it}");
            let (a, b) = operands(&s, k, 50 + 10 * it);
            multi.iterate(&whole, &a, &b, Some(&mut want)).unwrap();
            multi.poison(&ops).unwrap();
            got.fill(f32::NAN);
            multi.iterate(&ops, &a, &b, Some(&mut got)).unwrap();
            assert_same_bits(&got, &want, &what);
        }
        let mut bad = a0.clone();
        bad.data[7] = f32::NAN;
        assert!(multi.iterate(&ops, &bad, &b0, Some(&mut got)).is_err());
        assert_same_bits(&got, &want, &format!("{write:?}, {read:?}, refused write"));
        assert_parts_add_up(
            &multi.breakdown(&ops, &a0, &b0, 2).unwrap(),
            &format!("{read:?}"),
        );
    }
    let columns = MultiPlan::new(devs, &s, k, &options, Cut::Columns, false).unwrap();
    let e = columns.upload_modes(&a0, &b0, WriteMode::Staged, tiny(64));
    assert!(e.err().expect("refused").to_string().contains("row cut"));

    // One row holding most nonzeros, cut by rows over three devices: a part is empty.
    let row_ptr = vec![0u32, 3, 103, 103, 105];
    let mut col_idx: Vec<u32> = vec![1, 7, 90];
    col_idx.extend(0..100u32);
    col_idx.extend([5, 99]);
    let values = vec![1.0; col_idx.len()];
    let heavy = Csr::new(4, 100, row_ptr, col_idx, values).unwrap();
    let multi = MultiPlan::new(devices(), &heavy, 8, &options, Cut::Rows, false).unwrap();
    assert!(multi.shards().iter().any(|p| p.nnz == 0), "an empty part");
    let (a, b) = operands(&heavy, 8, 3);
    let want = Plan::new(&devs[0], &heavy, 8, options.clone())
        .unwrap()
        .run_host(&devs[0], &a, &b)
        .unwrap();
    let ops = multi
        .upload_modes(&a, &b, WriteMode::Staged, tiny(8))
        .unwrap();
    multi.poison(&ops).unwrap();
    let mut p = vec![f32::NAN; heavy.nnz()];
    multi.iterate(&ops, &a, &b, Some(&mut p)).unwrap();
    assert_same_bits(&p, &want, "heavy row, an empty part");

    // One device on the whole of S, as the CLI's baseline.
    let gpu = &devs[0];
    let plan = Plan::new(gpu, &s, k, options).unwrap();
    let one = |read| {
        Resident::with_modes(
            gpu,
            &plan,
            0..s.nrows,
            0..s.ncols,
            2,
            WriteMode::Staged,
            read,
        )
        .unwrap()
    };
    let whole = one(ReadMode::Whole);
    for read in [tiny(4), tiny(256), ReadMode::PIECED] {
        let pieced = one(read);
        assert_eq!(pieced.read_mode(), read);
        for seed in [60, 61] {
            let (a, b) = operands(&s, k, seed);
            let mut want = vec![f32::NAN; s.nnz()];
            whole.iterate(gpu, &plan, &a, &b, Some(&mut want)).unwrap();
            pieced.poison(gpu).unwrap();
            got.fill(f32::NAN);
            pieced.iterate(gpu, &plan, &a, &b, Some(&mut got)).unwrap();
            assert_same_bits(&got, &want, &format!("one device, {read:?}, seed {seed}"));
        }
        let b = pieced.breakdown(gpu, &plan, &a0, &b0, 2).unwrap();
        assert_parts_add_up(&b, &format!("one device, {read:?}"));
    }
}

#[test]
fn one_device_iteration_copies_over_threads_and_equals_the_plan() {
    // The one-device iteration (the CLI's baseline) on the whole of S: A is 5 MB, so its
    // copy is cut over threads; read back on request or left on the device.
    let s = gen::power_law(82_000, 64, 6_000, 1.1, 4).unwrap();
    let gpu = &devices()[0];
    let options = pinned().remove(0);
    for k in [16, 12] {
        let plan = Plan::new(gpu, &s, k, options.clone()).unwrap();
        let whole = Resident::new(gpu, &plan, 0..s.nrows, 0..s.ncols, 4).unwrap();
        let mut p = vec![f32::NAN; s.nnz()];
        for seed in [1, 2] {
            let (a, b) = operands(&s, k, seed);
            let want = plan.run_host(gpu, &a, &b).unwrap();
            whole.poison(gpu).unwrap();
            whole.iterate(gpu, &plan, &a, &b, Some(&mut p)).unwrap();
            assert_same_bits(&p, &want, &format!("K={k}, read back"));
            whole.poison(gpu).unwrap();
            whole.iterate(gpu, &plan, &a, &b, None).unwrap();
            let kept = whole.output().read(gpu).unwrap();
            assert_same_bits(&kept, &want, &format!("K={k}, kept on the device"));
            let (m, n) = (whole.a().read(gpu).unwrap(), whole.b().read(gpu).unwrap());
            assert!(m == a && n == b, "K={k}: the staged operands");
        }
        let wrong = gen::dense_uniform(s.nrows, k + 1, 1);
        let b = gen::dense_uniform(s.ncols, k, 1);
        assert!(whole.iterate(gpu, &plan, &wrong, &b, None).is_err());
    }
}
