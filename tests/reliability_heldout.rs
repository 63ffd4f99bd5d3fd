//! The held-out reliability cases (RELIABILITY.md): hostile sizes and options on the
//! subcommands that landed after the first audit. Each must end with an `error:` line and
//! exit 2 within seconds, its peak memory well under 2 GB; before their fixes they took
//! 3–11 GB, aborted, panicked or ran for minutes.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of the binary left: exit code, stderr, seconds and peak resident KiB.
struct Run {
    code: Option<i32>,
    stderr: String,
    seconds: f64,
    peak_kib: u64,
}

/// Peak resident set (`VmHWM`) of a running process, in KiB.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Runs the binary with `args` in `dir`, polling its peak memory; kills it after `limit`.
fn run(dir: &Path, args: &[&str], limit: Duration) -> Run {
    let mut child = Command::new(common::binary())
        .args(args)
        .current_dir(dir)
        .env("WGSPARSE_CACHE_DIR", dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let t0 = Instant::now();
    let mut peak = 0;
    let status = loop {
        if let Some(kib) = peak_kib(child.id()) {
            peak = peak.max(kib);
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if t0.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!("{args:?}: still running after {limit:?} ({peak} KiB)");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    Run {
        code: status.code(),
        stderr,
        seconds: t0.elapsed().as_secs_f64(),
        peak_kib: peak,
    }
}

/// Asserts that `args` fail cleanly: exit 2, an `error:` line naming `needle`, fast and small.
fn refused(dir: &Path, args: &[&str], needle: &str) {
    let r = run(dir, args, Duration::from_secs(60));
    assert_eq!(r.code, Some(2), "{args:?}: {}", r.stderr);
    assert!(r.stderr.starts_with("error: "), "{args:?}: {}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{args:?}: {}", r.stderr);
    assert!(
        r.stderr.contains(needle),
        "{args:?}: {needle:?} in {}",
        r.stderr
    );
    // Generous for a loaded debug build; the release figures are in RELIABILITY.md.
    assert!(r.seconds < 30.0, "{args:?}: {:.1} s", r.seconds);
    assert!(r.peak_kib < 1 << 20, "{args:?}: {} KiB", r.peak_kib);
}

/// Writes small valid inputs (ratings, LIBSVM) and the hostile LIBSVM file.
fn inputs(dir: &Path) {
    let gen = |args: &[&str]| {
        let r = run(dir, args, Duration::from_secs(60));
        assert_eq!(r.code, Some(0), "{args:?}: {}", r.stderr);
    };
    gen(&[
        "gen",
        "ratings",
        "--users",
        "60",
        "--items",
        "40",
        "--ratings",
        "600",
        "--train",
        "tr.txt",
        "--test",
        "te.txt",
    ]);
    gen(&[
        "gen",
        "ctr",
        "--samples",
        "120",
        "--features",
        "50",
        "--nnz-per-sample",
        "5",
        "--out",
        "c.svm",
    ]);
    // One feature index near u32::MAX: every dense per-feature vector would take 16 GB.
    std::fs::write(dir.join("huge.svm"), "1 4000000000:1\n0 3:1 7:0.5\n").unwrap();
}

#[test]
fn huge_feature_indices_are_refused_before_per_feature_vectors() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    refused(
        d,
        &["wide", "train", "--train", "huge.svm"],
        "wide parameters",
    );
    refused(
        d,
        &["wide", "train", "--train", "c.svm", "--valid", "huge.svm"],
        "wide parameters",
    );
    refused(
        d,
        &["fused", "--libsvm", "huge.svm", "--variant", "sorted"],
        "columns",
    );
    refused(d, &["linreg", "--libsvm", "huge.svm"], "columns");
    refused(d, &["logreg", "--libsvm", "huge.svm"], "columns");
}

#[test]
fn huge_counts_on_the_command_line_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    for rows in ["4000000000", "100000000"] {
        refused(
            d,
            &[
                "spdnn",
                "--neurons",
                "1024",
                "--layers",
                "1",
                "--rows",
                rows,
                "--approach",
                "csr-ell",
            ],
            "nonzeros",
        );
    }
    refused(
        d,
        &[
            "mf",
            "train",
            "--train",
            "tr.txt",
            "--test",
            "te.txt",
            "--k",
            "32",
            "--workers",
            "4294967295",
        ],
        "workers",
    );
}

#[test]
fn a_generated_shape_too_large_for_the_device_is_refused_before_it_is_built() {
    // Yahoo!Music's P at k = 256 in f16: 1,000,990 rows × 512 bytes. Where a binding holds it
    // the run would build 257M ratings, so it is only tried where it cannot fit (lavapipe).
    let p_bytes = 1_000_990u64 * 256 * 2;
    if common::gpu().caps.max_storage_binding_bytes >= p_bytes {
        eprintln!("skipped: this device's bindings hold Yahoo!Music's P at k = 256");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // It took 15 s and 2.3 GB (netflix) when the ratings were generated first.
    refused(
        dir.path(),
        &[
            "mf", "train", "--gen", "yahoo", "--k", "256", "--epochs", "1",
        ],
        "P (1000990 rows",
    );
}

#[test]
fn out_of_range_values_are_errors_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    refused(
        d,
        &[
            "gen",
            "ratings",
            "--users",
            "10",
            "--items",
            "10",
            "--ratings",
            "50",
            "--noise",
            "1e300",
            "--train",
            "a.txt",
            "--test",
            "b.txt",
        ],
        "noise",
    );
    refused(d, &["roofline", "--mib", "1", "--reps", "0"], "repetition");
    for scale in ["NaN", "5", "0"] {
        refused(
            d,
            &["sddmm", "--gen", "demo", "--k", "8", "--scale", scale],
            "scale",
        );
    }
    refused(d, &["logreg", "--libsvm", "c.svm", "--eps", "NaN"], "eps");
    // Ran as C = 1 where the other variants refuse it (a per-run row, so exit 1).
    let r = run(
        d,
        &[
            "fused",
            "--libsvm",
            "c.svm",
            "--variant",
            "sorted",
            "--c",
            "0",
            "--reps",
            "1",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(1), "{}", r.stderr);
    assert!(
        r.stderr.contains("rows per vector must be at least 1"),
        "{}",
        r.stderr
    );
    refused(d, &["linreg", "--libsvm", "c.svm", "--tol", "NaN"], "tol");
    refused(
        d,
        &[
            "mf",
            "train",
            "--train",
            "tr.txt",
            "--k",
            "32",
            "--epochs",
            "1",
            "--noise-floor",
            "NaN",
        ],
        "noise-floor",
    );
}

#[test]
fn csc_csc_on_no_input_rows_is_one_batch() {
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        &[
            "spdnn",
            "--neurons",
            "1024",
            "--layers",
            "2",
            "--rows",
            "0",
            "--approach",
            "csc-csc",
            "--tiling",
            "both",
        ],
        Duration::from_secs(60),
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    // It took 14 s (release) when each of the 1,024 columns was a batch of its own.
    assert!(r.seconds < 10.0, "{:.1} s", r.seconds);
}

#[test]
fn a_wide_batch_beyond_the_data_trains_full_batch() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    let r = run(
        d,
        &[
            "wide",
            "train",
            "--train",
            "c.svm",
            "--epochs",
            "2",
            "--holdout",
            "0.2",
            "--check",
            "--batch",
            "4294967295",
        ],
        Duration::from_secs(60),
    );
    // It was refused after building a 1 GB schedule entry for 2.5·10⁸ chunks.
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.peak_kib < 512 << 10, "{} KiB", r.peak_kib);
}

#[test]
fn options_that_do_not_apply_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    inputs(d);
    refused(
        d,
        &["sddmm", "--gen", "demo", "--k", "8,0"],
        "K must be at least 1",
    );
    let mf = |extra: &[&str]| {
        let mut a = vec![
            "mf", "train", "--train", "tr.txt", "--test", "te.txt", "--k", "32", "--epochs", "1",
        ];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    for (extra, needle) in [
        (&["--streams", "4"][..], "wavefront scheme only"),
        (&["--split", "3"][..], "--split applies with --gpus"),
    ] {
        let args = mf(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(d, &args, needle);
    }
}
