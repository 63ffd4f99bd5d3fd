//! The `wgsparse` binary: every subcommand answers `--json` with one JSON object, bad input
//! gives a clear error and a non-zero exit, and generated files read back.

mod common;

use common::{wgsparse, wgsparse_json as json};

#[test]
fn info_roofline_and_demo_print_json() {
    let info = json(&["info", "--json"]);
    assert!(info["caps"]["subgroup_min_size"].as_u64().unwrap() >= 1);
    let r = json(&[
        "roofline",
        "--json",
        "--mib",
        "8",
        "--reps",
        "2",
        "--scatter-ops",
        "100000",
    ]);
    assert!(r["roofline"]["copy_gbps"].as_f64().unwrap() > 0.0);
    assert!(r["roofline"]["read_gbps"].as_f64().unwrap() > 0.0);
    // Global adds (single words and runs) and loads, at 4 MiB and at --mib; workgroup f32
    // adds at 16 KiB and at 1 KiB (the loop, then native ones where the device has them),
    // then u32 adds and loads at 16 KiB.
    let native = info["caps"]["wg_f32_atomics"].as_bool().unwrap();
    let scatter = r["scatter"].as_array().unwrap();
    let f32_rows: &[(u64, bool)] = if native {
        &[
            (16 << 10, false),
            (16 << 10, true),
            (1 << 10, false),
            (1 << 10, true),
        ]
    } else {
        &[(16 << 10, false), (1 << 10, false)]
    };
    assert_eq!(scatter.len(), 8 + f32_rows.len());
    assert!(scatter.iter().all(|s| s["gops"].as_f64().unwrap() > 0.0));
    assert_eq!(scatter[3]["target_bytes"], 8 << 20);
    for (s, &(bytes, native)) in scatter[6..].iter().zip(f32_rows) {
        assert_eq!(
            (&s["memory"], &s["op"], &s["target_bytes"], &s["native"]),
            (
                &"workgroup".into(),
                &"add".into(),
                &bytes.into(),
                &native.into()
            ),
            "{s}"
        );
    }
    let last = &scatter[scatter.len() - 2..];
    assert_eq!(
        (&last[0]["op"], &last[1]["op"]),
        (&"add-u32".into(), &"load".into())
    );
    let demo = json(&["demo", "--json"]);
    assert_eq!(demo["ok"], true);
    assert!(demo["rows"].as_array().unwrap().len() >= 5);
}

#[test]
fn gen_writes_readable_files_and_sddmm_checks_them() {
    let dir = tempfile::tempdir().unwrap();
    let mtx = dir.path().join("s.mtx");
    let mtx_s = mtx.to_str().unwrap();
    json(&[
        "gen",
        "--json",
        "power-law",
        "--rows",
        "300",
        "--cols",
        "200",
        "--nnz",
        "3000",
        "--out",
        mtx_s,
    ]);
    let s = wgsparse::io::read_matrix_market(&mtx).unwrap();
    assert_eq!((s.nrows, s.ncols, s.nnz()), (300, 200, 3000));
    let run = json(&[
        "sddmm",
        "--matrix",
        mtx_s,
        "--k",
        "16,40",
        "--variant",
        "all",
        "--check",
        "--reps",
        "2",
        "--json",
    ]);
    assert_eq!(run["ok"], true);
    // auto and every concrete variant, at each of the two K.
    let per_k = 1 + wgsparse::sddmm::Variant::CONCRETE.len();
    assert_eq!(run["results"].as_array().unwrap().len(), 2 * per_k);
    // Tilings built on the device (lavapipe builds them on the host unless told).
    let run = json(&[
        "sddmm",
        "--matrix",
        mtx_s,
        "--k",
        "24",
        "--variant",
        "sm-l2,sm-sm",
        "--build-on",
        "device",
        "--check",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(run["ok"], true);
    for r in run["results"].as_array().unwrap() {
        assert_eq!(r["measurement"]["config"]["build_on_device"], true);
    }
    let raw = dir.path().join("raw");
    json(&[
        "gen",
        "--json",
        "suite",
        "demo",
        "--scale",
        "0.2",
        "--raw",
        "--out",
        raw.to_str().unwrap(),
    ]);
    let plot = dir.path().join("sweep.svg");
    let run = json(&[
        "sddmm",
        "--matrix-raw",
        raw.to_str().unwrap(),
        "--k",
        "8",
        "--variant",
        "sm-l2",
        "--sweep",
        "--plot",
        plot.to_str().unwrap(),
        "--reps",
        "1",
        "--json",
    ]);
    let svg = std::fs::read_to_string(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("model Tj"));
    assert!(
        run["sweeps"][0]["sweep"]["points"]
            .as_array()
            .unwrap()
            .len()
            > 4
    );
    for what in [
        vec!["radix", "--n", "256", "--per-row", "8", "--out"],
        vec!["ctr", "--samples", "200", "--features", "50", "--out"],
    ] {
        let f = dir.path().join("f.txt");
        let mut args = vec!["gen", "--json"];
        args.extend(what);
        args.push(f.to_str().unwrap());
        json(&args);
    }
    let (tr, te) = (dir.path().join("train.bin"), dir.path().join("test.bin"));
    json(&[
        "gen",
        "--json",
        "ratings",
        "--users",
        "100",
        "--items",
        "80",
        "--ratings",
        "2000",
        "--binary",
        "--train",
        tr.to_str().unwrap(),
        "--test",
        te.to_str().unwrap(),
    ]);
    assert!(wgsparse::io::read_ratings_binary(&tr).unwrap().len() > 1000);
}

#[test]
fn bad_input_is_an_error_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.mtx");
    std::fs::write(
        &bad,
        "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n",
    )
    .unwrap();
    let (ok, _, stderr) = wgsparse(&["sddmm", "--matrix", bad.to_str().unwrap(), "--k", "8"]);
    assert!(!ok);
    assert!(stderr.contains("bad.mtx:4:"), "{stderr}");
    let (ok, _, stderr) = wgsparse(&["sddmm", "--gen", "no-such-matrix"]);
    assert!(!ok && stderr.contains("no suite matrix"), "{stderr}");
    let (ok, stdout, _) = wgsparse(&[
        "sddmm",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--variant",
        "warp",
        "--vws",
        "3",
        "--k",
        "8",
        "--json",
    ]);
    assert!(!ok && stdout.contains("vws 3"), "{stdout}");
    let (ok, _, _) = wgsparse(&[
        "gen",
        "power-law",
        "--rows",
        "2",
        "--cols",
        "2",
        "--nnz",
        "5",
        "--out",
        "/dev/null",
    ]);
    assert!(!ok, "more nonzeros than cells must be refused");
}

#[test]
fn sddmm_exports_the_operands_and_p_the_peer_compares_with() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path().to_str().unwrap();
    let out = json(&[
        "sddmm",
        "--gen",
        "demo",
        "--scale",
        "0.2",
        "--k",
        "12",
        "--variant",
        "row-run",
        "--check",
        "--reps",
        "1",
        "--export",
        d,
        "--json",
    ]);
    assert_eq!(out["ok"], true, "{out}");
    let m = &out["matrix"];
    let (nrows, ncols, nnz) = (
        m["nrows"].as_u64().unwrap(),
        m["ncols"].as_u64().unwrap(),
        m["nnz"].as_u64().unwrap(),
    );
    let len = |f: &str| std::fs::metadata(dir.path().join(f)).unwrap().len();
    assert_eq!(len("a-k12.f32"), 4 * 12 * nrows);
    assert_eq!(len("b-k12.f32"), 4 * 12 * ncols);
    let meta: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("p-k12.json")).unwrap()).unwrap();
    let step = meta["step"].as_u64().unwrap();
    assert_eq!(len("p-k12.f32"), 4 * nnz.div_ceil(step));
    // P is the checked output: finite everywhere (the output was poisoned before the check).
    let p = std::fs::read(dir.path().join("p-k12.f32")).unwrap();
    assert!(p
        .chunks(4)
        .all(|b| f32::from_le_bytes(b.try_into().unwrap()).is_finite()));
}

#[test]
fn calibrate_stores_the_residency_that_info_and_the_models_then_use() {
    // A cache folder of its own: the stored calibration changes every launch model's grid.
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| common::wgsparse_json_in(dir.path(), args);
    assert_eq!(run(&["info", "--json"])["residency_source"], "default");
    let dry = run(&["calibrate", "--json"]);
    assert!(dry["saved"].is_null());
    assert_eq!(run(&["info", "--json"])["residency_source"], "default");
    let c = run(&["calibrate", "--save", "--json"]);
    let r = &c["calibration"]["residency"];
    assert!(r["units"].as_u64().unwrap() >= 1);
    // Every probe's peak is what the derived residency gives (derive refuses otherwise).
    for p in c["calibration"]["probes"].as_array().unwrap() {
        assert_eq!(
            p["peak"].as_u64().unwrap() % r["units"].as_u64().unwrap(),
            0
        );
    }
    assert!(dir.path().join("residency.json").exists());
    let info = run(&["info", "--json"]);
    assert_eq!(info["residency_source"], "calibrated");
    assert_eq!(&info["residency"], r);
}

#[test]
fn residency_overrides_from_the_environment_show_in_info() {
    // Workgroup memory a unit and what it sets aside per workgroup, over the defaults.
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(common::binary())
        .args(["info", "--json"])
        .env("WGSPARSE_CACHE_DIR", dir.path())
        .env("WGSPARSE_UNIT_SHARED_BYTES", "49152")
        .env("WGSPARSE_UNIT_SHARED_RESERVED", "1024")
        .output()
        .expect("the binary runs");
    assert!(out.status.success());
    let info: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(info["residency_source"], "environment");
    assert_eq!(info["residency"]["shared_per_unit"], 49152);
    assert_eq!(info["residency"]["shared_reserved"], 1024);
}
