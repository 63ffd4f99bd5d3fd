//! Reliability of the `wgsparse` binary: oversized inputs are refused before anything large
//! is allocated, failures exit non-zero, and a headless machine hears no complaints.

mod common;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Held by the tests that load both cores, so the timing test does not run beside them.
static HEAVY: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn wgsparse(args: &[&str], cache: &Path) -> Output {
    Command::new(common::binary())
        .args(args)
        .env("WGSPARSE_CACHE_DIR", cache)
        .output()
        .expect("the binary runs")
}

fn mtx(dir: &Path, name: &str, size_line: &str) -> String {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!("%%MatrixMarket matrix coordinate real general\n{size_line}\n1 1 1.0\n"),
    )
    .unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn oversized_size_lines_fail_fast_with_an_error() {
    let dir = tempfile::tempdir().unwrap();
    for size in [
        "4000000000 4000000000 1",
        "1 4294967295 1",
        "100000000 10 1",
        "2000000000 1 1",
        "50000000 50000000 1",
        "4294967295 4294967295 4294967295",
    ] {
        let path = mtx(dir.path(), "big.mtx", size);
        let t0 = Instant::now();
        let out = wgsparse(&["sddmm", "--matrix", &path, "--k", "8"], dir.path());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{size}: {stderr}");
        assert!(stderr.starts_with("error: "), "{size}: {stderr}");
        assert!(
            stderr.contains("needs") || stderr.contains("exceeds"),
            "{size}: {stderr}"
        );
        // Refused from the size line: no large allocation, so well under the time it would
        // take to fill gigabytes.
        assert!(t0.elapsed() < Duration::from_secs(20), "{size}: too slow");
    }
}

#[test]
fn a_failed_k_exits_non_zero_after_the_table() {
    let dir = tempfile::tempdir().unwrap();
    // K = 8 fits; K = 4096 makes A 300×4096 floats, beyond nothing on the device but
    // beyond a 1 MiB host budget.
    let path = mtx(dir.path(), "s.mtx", "300 200 1");
    let out = Command::new(common::binary())
        .args(["sddmm", "--matrix", &path, "--k", "8,4096", "--no-tune"])
        .env("WGSPARSE_CACHE_DIR", dir.path())
        .env("WGSPARSE_HOST_MEMORY_MIB", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("sddmm.naive") || stdout.contains("auto"),
        "{stdout}"
    );
    assert!(stderr.contains("error: K=4096"), "{stderr}");
    assert!(stderr.contains("host memory"), "{stderr}");
}

#[test]
fn lying_raw_csr_meta_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let raw = dir.path().join("raw");
    let s = wgsparse::gen::power_law(30, 20, 100, 1.1, 3).unwrap();
    wgsparse::io::write_csr_binary(&raw, &s).unwrap();
    for meta in [
        r#"{"nrows": 4000000000, "ncols": 20, "nnz": 100}"#,
        r#"{"nrows": 18446744073709551615, "ncols": 20, "nnz": 100}"#,
        r#"{"nrows": 30, "ncols": 20, "nnz": 4000000000}"#,
        r#"{"format": "wgsparse-raw-csr", "version": 2, "nrows": 30, "ncols": 20, "nnz": 100}"#,
        r#"{"nrows": 30, "ncols": 20, "nnz": 1"#,
    ] {
        std::fs::write(raw.join("meta.json"), meta).unwrap();
        let e = wgsparse::io::read_csr_binary(&raw).unwrap_err().to_string();
        assert!(
            e.contains("meta.json") || e.contains("bytes"),
            "{meta}: {e}"
        );
    }
}

#[test]
fn help_documents_the_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let out = wgsparse(&["--help"], dir.path());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("Exit status: 0"), "{stdout}");
}

#[test]
fn info_is_quiet_without_a_display() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(common::binary())
        .arg("info")
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("WAYLAND_DISPLAY")
        .env_remove("DISPLAY")
        .env("WGSPARSE_CACHE_DIR", dir.path())
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("adapter"));
}

/// Tunings per tuner-honesty test: a pick made while other processes load the machine may
/// be beaten by a candidate; a systematically wrong pick (a bad model or final round) loses
/// in every tuning (two tunings both lost once while two compile jobs shared the 2 cores).
const TUNINGS: usize = 3;

/// The pick's time over the best candidate's, pass after pass (up to five, stopping once
/// within 10%): each plan timed in turn, its fastest pass counting, since load from other
/// processes only slows a timing down.
fn pick_against_best<P>(pick: &P, plans: &[P], time: impl Fn(&P) -> f64) -> Vec<f64> {
    let mut picked = f64::INFINITY;
    let mut fastest = vec![f64::INFINITY; plans.len()];
    let mut ratios = Vec::new();
    for _ in 0..5 {
        picked = picked.min(time(pick));
        for (f, p) in fastest.iter_mut().zip(plans) {
            *f = f.min(time(p));
        }
        let best = fastest.iter().copied().fold(f64::INFINITY, f64::min);
        ratios.push(picked / best);
        if picked <= 1.10 * best {
            break;
        }
    }
    ratios
}

#[test]
fn the_tuners_pick_is_not_beaten_by_a_candidate_it_timed() {
    // Right after tuning, the pick and every candidate are timed the same way (Plan::time:
    // warm-up, then the median of 5), in turn, up to five passes; each plan's fastest pass
    // counts, since load from other processes only slows timings down. A wrong pick (the
    // demo once reported the model's SM-L2 at 3.7× the time of the naive kernel it had
    // timed) stays beyond 10% in every pass.
    use wgsparse::sddmm::{suite, tune, Options, Plan};
    let _alone = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu();
    let s = suite::find("demo").unwrap().generate(1.0, 2026).unwrap();
    let options = Options::default();
    let k = 32;
    let ops = tune::Operands::random(gpu, &s, k, 7 + k as u64).unwrap();
    let plans: Vec<Plan> = tune::candidate_options(gpu, &s, k, &options)
        .unwrap()
        .into_iter()
        .filter_map(|o| Plan::new(gpu, &s, k, o).ok())
        .collect();
    let time = |p: &Plan| p.time(gpu, &ops.a, &ops.b, &ops.out, 5).unwrap().seconds;
    let mut seen = Vec::new();
    for _ in 0..TUNINGS {
        let (_, pick) = tune::tune(gpu, &s, k, &options, &ops).unwrap();
        let ratios = pick_against_best(&pick, &plans, time);
        eprintln!(
            "K={k}: pick {:?}: {ratios:?}× the best",
            pick.config.variant
        );
        if ratios.iter().any(|&r| r <= 1.10) {
            return;
        }
        seen.push((pick.config, ratios));
    }
    panic!("K={k}: every tuning's pick was beyond 10% of the best candidate: {seen:?}");
}

#[test]
fn the_fused_tuners_pick_is_not_beaten_by_a_candidate_it_timed() {
    // As for SDDMM: right after tuning, the pick and every configuration the fused tuner
    // timed are timed again the same way (`pick_against_best`). Sparse (fused vs sorted
    // tiles, VS, workgroup, long-row threshold) and dense (VS, TL, workgroup).
    use wgsparse::fused::bench::Operands;
    use wgsparse::fused::{tune, Matrix, Options, Pattern, Plan};
    let _alone = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let gpu = common::gpu();
    let sparse = common::fused::sparse_x(40_000, 700, 400_000, 11);
    let dense = wgsparse::gen::dense_uniform(20_000, 48, 12);
    for x in [Matrix::Sparse(&sparse), Matrix::Dense(&dense)] {
        let (m, n) = x.shape();
        let ops = Operands::random(gpu, m, n, Pattern::Full, 5).unwrap();
        let op = ops.op();
        // As the tuner times them: on a GPU and a small X, runs back to back.
        let time = |p: &Plan| {
            p.time_runs(gpu, &op, &ops.w, 5, tune::busy_runs(gpu, p))
                .unwrap()
                .seconds
        };
        let mut seen = Vec::new();
        let honest = (0..TUNINGS).any(|_| {
            let (pick, timed) = tune::tune(gpu, x, &Options::default()).unwrap();
            let plans: Vec<Plan> = timed
                .iter()
                .filter_map(|o: &Options| Plan::new(gpu, x, o).ok())
                .collect();
            assert!(
                plans.len() >= 2,
                "the tuner timed {} candidates",
                plans.len()
            );
            let ratios = pick_against_best(&pick, &plans, time);
            eprintln!(
                "{:?}: pick {}: {ratios:?}× the best of {}",
                x.shape(),
                pick.config.describe(),
                plans.len()
            );
            let ok = ratios.iter().any(|&r| r <= 1.10);
            seen.push((pick.config.describe(), ratios));
            ok
        });
        assert!(
            honest,
            "{:?}: every tuning's pick was beyond 10% of the best candidate: {seen:?}",
            x.shape()
        );
    }
}

#[test]
fn two_processes_tuning_at_once_leave_a_valid_cache() {
    let _alone = HEAVY.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let run = |k: &str| {
        Command::new(common::binary())
            .args([
                "sddmm", "--gen", "demo", "--scale", "0.3", "--k", k, "--json",
            ])
            .env("WGSPARSE_CACHE_DIR", dir.path())
            .spawn()
            .unwrap()
    };
    let (a, b) = (run("8"), run("16"));
    for child in [a, b] {
        assert!(child.wait_with_output().unwrap().status.success());
    }
    let cache = wgsparse::tune::TuneCache::at(dir.path().join("sddmm-tune.json"));
    let entries = cache.read().unwrap();
    assert!(!entries.is_empty());
    assert!(
        entries.keys().all(|k| k.contains("sddmm.auto")),
        "{entries:?}"
    );
}

#[test]
fn generators_refuse_sizes_beyond_the_host_budget() {
    // The budget the issue sets (2 GB), not half of this host's memory: a host with 128 GiB
    // would rightly start generating a 4·10⁹-row matrix.
    std::env::set_var(wgsparse::limits::HOST_BUDGET_ENV, "2048");
    let e = wgsparse::gen::power_law(4_000_000_000, 10, 10, 1.1, 1).unwrap_err();
    assert!(matches!(e, wgsparse::Error::HostMemory { .. }), "{e}");
    assert!(e.to_string().contains("4000000000×10"), "{e}");
    use wgsparse::gen;
    let e = gen::radix_net_layer(4_000_000_000, 1, 1.0, 1).unwrap_err();
    assert!(matches!(e, wgsparse::Error::HostMemory { .. }), "{e}");
    let e = gen::planted_ratings(10, 10, 10, usize::MAX / 2, 0.1, 1).unwrap_err();
    assert!(matches!(e, wgsparse::Error::HostMemory { .. }), "{e}");
    let e = gen::zipf_ctr(4_000_000_000, 100, 1, gen::CtrModel::Lr, 1).unwrap_err();
    assert!(matches!(e, wgsparse::Error::HostMemory { .. }), "{e}");
}

#[test]
fn a_closed_stdout_ends_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(common::binary())
        .arg("info")
        .env("WGSPARSE_CACHE_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Close the reading end before the binary has found its adapter and printed.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(out.status.code(), Some(141), "{stderr}");
}
