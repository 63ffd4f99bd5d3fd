//! `wgsparse fused`, `linreg` and `logreg`: one JSON object with `--json`, checks that pass,
//! exports the peer script can read, and bad input rejected with a non-zero exit.

mod common;

use common::{wgsparse, wgsparse_json as json};

#[test]
fn fused_checks_every_variant_and_exports() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x");
    let j = json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--variant",
        "all",
        "--pattern",
        "xty,xtxy,xtvxy,xtxy-bz,full",
        "--check",
        "--reps",
        "2",
        "--json",
        "--export",
        out.to_str().unwrap(),
    ]);
    assert_eq!(j["ok"], true);
    let results = j["results"].as_array().unwrap();
    // 5 patterns × 7 variants (fused, sorted, split, stream, transpose, two-pass, unfused).
    assert_eq!(results.len(), 35);
    let mut counted = 0;
    let mut split_counted = 0;
    let mut transpose_counted = 0;
    for r in results {
        assert!(
            r["measurement"]["max_rel_error"].as_f64().unwrap() < 1e-3,
            "{r}"
        );
        // The sorted scatter's work, counted at plan time: at most one add per entry.
        let adds = &r["sorted_adds"];
        if r["variant"] == "sorted" && r["measurement"]["config"]["segmented"] == true {
            let (e, a) = (
                adds["entries"].as_u64().unwrap(),
                adds["adds"].as_u64().unwrap(),
            );
            assert!(e > 0 && a <= e, "{r}");
            counted += 1;
        } else {
            assert!(adds.is_null(), "{r}");
        }
        // The split scatter's work: every entry in a chunk, at most one add per entry.
        let split = &r["split_adds"];
        if r["variant"] == "split" {
            let (e, a) = (
                split["entries"].as_u64().unwrap(),
                split["adds"].as_u64().unwrap(),
            );
            assert!(
                e > 0 && a <= e && split["chunks"].as_u64().unwrap() > 0,
                "{r}"
            );
            assert_eq!(r["dispatches"], 2, "{r}");
            split_counted += 1;
        } else {
            assert!(split.is_null(), "{r}");
        }
        // Xᵀ's pass: its lanes per row and long-row threshold, reported beside X's.
        let pass = &r["transpose_pass"];
        if r["variant"] == "transpose" {
            assert!(pass["vs"].as_u64().unwrap() >= 1, "{r}");
            assert!(pass["long_row"].as_u64().unwrap() >= 1024, "{r}");
            transpose_counted += 1;
        } else {
            assert!(pass.is_null(), "{r}");
        }
    }
    assert_eq!(transpose_counted, 5);
    assert_eq!(counted, 5, "every pattern's sorted result counts its adds");
    assert_eq!(
        split_counted, 5,
        "every pattern's split result counts its adds"
    );
    for f in [
        "row_ptr.u32",
        "col_idx.u32",
        "values.f32",
        "y.f32",
        "v.f32",
        "z.f32",
        "w_wgsparse.f32",
        "operands.json",
    ] {
        assert!(out.join(f).exists(), "{f} missing");
    }
    // Dense inputs and the sweep.
    let j = json(&[
        "fused",
        "--gen",
        "dense-32",
        "--scale",
        "0.002",
        "--variant",
        "all",
        "--check",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(j["ok"], true);
    assert_eq!(j["input"]["dense"], true);
    // A variant that cannot run is a failure of the command.
    let (ok, _, stderr) = wgsparse(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.01",
        "--variant",
        "two-pass",
        "--global-w",
    ]);
    assert!(!ok, "{stderr}");
}

#[test]
fn the_sweep_reports_every_point_and_the_models_gap() {
    // The launch model's configuration among the points, the best the fastest of them, and
    // the gap computed from the two (sparse and dense X); one plot per pattern, named by it
    // when several share --plot, the model's configuration in its legend.
    let dir = tempfile::tempdir().unwrap();
    for (input, patterns) in [("demo", "full,xty"), ("dense-32", "full")] {
        let plot = dir.path().join(format!("{input}.svg"));
        let j = json(&[
            "fused",
            "--gen",
            input,
            "--scale",
            "0.002",
            "--pattern",
            patterns,
            "--sweep",
            "--plot",
            plot.to_str().unwrap(),
            "--reps",
            "1",
            "--json",
        ]);
        assert_eq!(j["ok"], true, "{j}");
        let sweeps = j["sweeps"].as_array().unwrap();
        assert_eq!(sweeps.len(), patterns.split(',').count());
        for s in sweeps {
            let points = s["points"].as_array().unwrap();
            assert!(points.len() > 4, "{input}: {} points", points.len());
            let ms = |m: &serde_json::Value| m["ms"].as_f64().unwrap();
            let fastest = points.iter().map(ms).fold(f64::INFINITY, f64::min);
            assert_eq!(ms(&s["best"]), fastest, "{input}");
            assert!(points.iter().any(|p| p["config"] == s["model"]["config"]));
            let gap = (ms(&s["model"]) - fastest) / fastest;
            assert!(
                (s["model_gap"].as_f64().unwrap() - gap).abs() < 1e-9,
                "{input}"
            );
        }
        let files: Vec<_> = if patterns.contains(',') {
            assert!(!plot.exists(), "several patterns write suffixed plots");
            ["full", "xty"]
                .map(|p| dir.path().join(format!("{input}-{p}.svg")))
                .into()
        } else {
            vec![plot]
        };
        for f in files {
            let svg = std::fs::read_to_string(&f).unwrap();
            assert!(svg.starts_with("<svg"), "{}", f.display());
            assert!(svg.contains("model: ") && svg.contains("rows per vector C"));
        }
    }
    // --plot without --sweep is refused.
    let (ok, _, stderr) = wgsparse(&["fused", "--gen", "demo", "--plot", "p.svg"]);
    assert!(!ok && stderr.contains("--sweep"), "{stderr}");
}

#[test]
fn settle_waits_before_timing_and_refuses_bad_seconds() {
    let clock = std::time::Instant::now();
    let j = json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.01",
        "--variant",
        "stream",
        "--pattern",
        "xty,full",
        "--settle",
        "0.4",
        "--reps",
        "1",
        "--json",
    ]);
    assert_eq!(j["ok"], true, "{j}");
    // One settle per timed plan.
    assert!(clock.elapsed().as_secs_f64() >= 0.8);
    for bad in ["-1", "61", "nan", "soon"] {
        let flag = format!("--settle={bad}");
        let (ok, _, stderr) = wgsparse(&["fused", "--gen", "demo", &flag]);
        assert!(!ok && stderr.contains("--settle"), "{bad}: {stderr}");
    }
}

#[test]
fn solvers_print_their_keys() {
    let j = json(&[
        "linreg",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--intercept",
        "--check",
        "--json",
    ]);
    for k in ["iterations", "residuals", "rmse", "seconds"] {
        assert!(!j[k].is_null(), "linreg lacks {k}");
    }
    assert_eq!(j["ok"], true);
    assert!(j["breakdown"].is_null());
    // --breakdown: the host parts always, the GPU phases where the adapter has timestamps;
    // with --runs 2 the timed solves come after the warm-up.
    let j = json(&[
        "linreg",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--runs",
        "2",
        "--breakdown",
        "--json",
    ]);
    let bd = &j["breakdown"];
    for k in [
        "setup_ms",
        "record_ms",
        "wait_ms",
        "gpu_ms",
        "between_passes_ms",
    ] {
        assert!(bd[k].as_f64().is_some(), "breakdown lacks {k}: {bd}");
    }
    if bd["timed"] == true {
        let names: Vec<&str> = bd["phases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        for name in ["xtb", "start", "gate", "fused", "alpha", "update"] {
            assert!(names.contains(&name), "no {name} in {names:?}");
        }
    }
    let j = json(&[
        "logreg", "--gen", "demo", "--scale", "0.1", "--check", "--json",
    ]);
    for k in ["iterations", "losses", "logloss", "auc", "seconds"] {
        assert!(!j[k].is_null(), "logreg lacks {k}");
    }
    assert_eq!(j["ok"], true);
}

#[test]
fn bad_input_exits_non_zero_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.svm");
    std::fs::write(&p, "1 1:0.5 2:1\n-1 3:abc\n").unwrap();
    for cmd in ["fused", "linreg", "logreg"] {
        let (ok, _, stderr) = wgsparse(&[cmd, "--libsvm", p.to_str().unwrap()]);
        assert!(!ok, "{cmd} accepted a bad file");
        assert!(stderr.contains("bad.svm:2"), "{cmd}: {stderr}");
    }
    let (ok, _, stderr) = wgsparse(&["fused", "--gen", "nope"]);
    assert!(!ok && stderr.contains("unknown input"), "{stderr}");
    let (ok, _, _) = wgsparse(&["fused", "--gen", "demo", "--vs", "3"]);
    assert!(!ok);
}

#[test]
fn linreg_uses_the_tuned_configuration() {
    // `fused --variant auto` tunes and caches a configuration; the cached entry is then changed
    // to one the launch model would not pick, and linreg's CG must run with it.
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| common::wgsparse_json_in(dir.path(), args);
    let gen = ["--gen", "demo", "--scale", "0.1", "--json"];
    let tuned = run(&[&["fused", "--variant", "auto", "--reps", "1"], &gen[..]].concat());
    assert_eq!(tuned["ok"], true);
    let file = dir.path().join("fused-tune.json");
    let mut cache: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let mut entries = 0;
    fn retune(v: &mut serde_json::Value, entries: &mut usize) {
        match v {
            serde_json::Value::Object(o) if o.contains_key("vs") && o.contains_key("workgroup") => {
                o.insert("vs".into(), 2.into());
                o.insert("workgroup".into(), 64.into());
                o.insert("sorted".into(), false.into());
                *entries += 1;
            }
            serde_json::Value::Object(o) => o.values_mut().for_each(|v| retune(v, entries)),
            _ => {}
        }
    }
    retune(&mut cache, &mut entries);
    assert_eq!(entries, 1);
    std::fs::write(&file, serde_json::to_vec(&cache).unwrap()).unwrap();
    let model = run(&[&["fused", "--variant", "fused", "--reps", "1"], &gen[..]].concat());
    let c = &model["results"][0]["measurement"]["config"];
    assert!(
        c["vs"] != 2 || c["workgroup"] != 64,
        "the model picks the planted entry: {c}"
    );
    let j = run(&[&["linreg"], &gen[..]].concat());
    assert_eq!(j["ok"], true);
    assert_eq!(j["config"]["vs"], 2, "{}", j["config"]);
    assert_eq!(j["config"]["workgroup"], 64, "{}", j["config"]);
}

#[test]
fn fused_reports_its_row_bands() {
    // 16 KiB bindings: demo@0.1's 10,000 entries (40 KB per entry array) in 3 bands.
    let j = json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--variant",
        "fused,sorted,unfused",
        "--max-binding-bytes",
        "16384",
        "--check",
        "--reps",
        "2",
        "--json",
    ]);
    assert_eq!(j["ok"], true);
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 3);
    for r in results {
        assert!(r["bands"].as_u64().unwrap() >= 3, "{r}");
        assert!(
            r["measurement"]["max_rel_error"].as_f64().unwrap() < 1e-3,
            "{r}"
        );
    }
    // One binding: one band.
    let j = json(&[
        "fused", "--gen", "demo", "--scale", "0.1", "--reps", "2", "--json",
    ]);
    assert_eq!(j["results"][0]["bands"], 1);
}

#[test]
fn fused_times_one_plan_several_passes() {
    // `--passes 3` (the clocks spun up before each): each result carries three positive
    // medians, the first its own, which lies within its fastest and slowest timed runs,
    // after a warm-up of at least one run.
    let j = json(&[
        "fused",
        "--gen",
        "demo",
        "--scale",
        "0.1",
        "--variant",
        "stream,transpose",
        "--pattern",
        "xty",
        "--passes",
        "3",
        "--spin-first",
        "--reps",
        "2",
        "--json",
    ]);
    assert_eq!(j["ok"], true);
    for r in j["results"].as_array().unwrap() {
        let ms: Vec<f64> = r["passes_ms"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap())
            .collect();
        assert_eq!(ms.len(), 3, "{r}");
        assert!(ms.iter().all(|&t| t > 0.0), "{r}");
        let m = &r["measurement"];
        assert_eq!(ms[0], m["ms"].as_f64().unwrap(), "{r}");
        let (lo, hi) = (
            m["ms_range"][0].as_f64().unwrap(),
            m["ms_range"][1].as_f64().unwrap(),
        );
        assert!(lo <= ms[0] && ms[0] <= hi, "{r}");
        let w = &m["warm_up"];
        assert!(w["runs"].as_u64().unwrap() >= 1, "{r}");
        for k in ["first_s", "fastest_s", "last_s"] {
            assert!(w[k].as_f64().unwrap() > 0.0, "{k}: {r}");
        }
        assert!(w["fastest_s"].as_f64() <= w["first_s"].as_f64(), "{r}");
    }
    let (ok, _, err) = wgsparse(&["fused", "--gen", "demo", "--passes", "0"]);
    assert!(!ok);
    assert!(err.contains("--passes"), "{err}");
}

#[test]
fn runs_back_to_back_in_one_submission_stay_exact() {
    // `--runs-per-submit 4`: each timed submission holds four runs, so the one-dispatch
    // ending's accumulator and the long rows' state must leave every run exact (the check
    // compares the last timed run's w with the twin too); the measurement says how many.
    let args = "fused --gen demo --scale 0.1 --variant fused,stream,transpose \
                --runs-per-submit 4 --reps 2 --check --json";
    let j = json(&args.split_whitespace().collect::<Vec<_>>());
    assert_eq!(j["ok"], true, "{j}");
    let results = j["results"].as_array().unwrap();
    assert_eq!(results.len(), 3, "{j}");
    for r in results {
        let m = &r["measurement"];
        assert_eq!(m["runs_per_submit"], 4, "{r}");
        assert!(m["ms"].as_f64().unwrap() > 0.0, "{r}");
        assert!(m["max_rel_error"].as_f64().is_some(), "{r}");
    }
    let (ok, _, err) = wgsparse(&["fused", "--gen", "demo", "--runs-per-submit", "0"]);
    assert!(!ok);
    assert!(err.contains("--runs-per-submit"), "{err}");
}

#[test]
fn auto_reports_the_candidates_it_screened_once() {
    // Tuned afresh, `auto`'s result lists every candidate screened (its configuration, the
    // host seconds its plan took, its time); from the cache, none, and the same pick.
    let cache = tempfile::tempdir().unwrap();
    let args = "fused --gen demo --scale 0.1 --variant auto --pattern full --reps 2 --json";
    let args: Vec<_> = args.split_whitespace().collect();
    let tuned = common::wgsparse_json_in(cache.path(), &args);
    let r = &tuned["results"][0];
    let steps = r["tuning"]
        .as_array()
        .expect("tuned afresh: the candidates");
    assert!(steps.len() >= 3, "{r}");
    for s in steps {
        assert!(!s["config"].as_str().unwrap().is_empty(), "{s}");
        assert!(s["build_s"].as_f64().unwrap() >= 0.0, "{s}");
        assert!(s["ms"].as_f64().unwrap() > 0.0, "{s}");
    }
    assert!(r["build_s"].as_f64().unwrap() >= 0.0, "{r}");
    let cached = common::wgsparse_json_in(cache.path(), &args);
    let r = &cached["results"][0];
    assert!(r["tuning"].is_null(), "{r}");
    assert_eq!(
        r["measurement"]["config"], tuned["results"][0]["measurement"]["config"],
        "the cached pick is the tuned one"
    );
}
