//! The thesis's approaches to sparse DNN inference (CSR·ELL, CSR·CSR, CSC·CSC, each 1D and
//! 2D, through a dense batch buffer of several sizes) against the f64 CPU twin layer by
//! layer: categories exactly, values to f32 tolerance, Y's values poisoned with NaN before
//! every layer; plus inputs with no non-empty row, a row killed exactly by the bias, values
//! saturating at 32, and tiles straddling batch boundaries.

mod common;

use wgsparse::sparse::Csr;
use wgsparse::spdnn::thesis::{BufferSize, Format, ThesisOptions, ThesisPlan, Tiling};
use wgsparse::spdnn::{cpu, data, Network};
use wgsparse::Gpu;

/// Twin rows after one more layer.
fn twin_step(net: &Network, l: usize, y: &[f64]) -> Vec<f64> {
    let n = net.n;
    y.chunks(n)
        .flat_map(|r| cpu::layer(r, &net.layers[l], f64::from(net.bias)))
        .collect()
}

/// Runs every layer of `net` on `y0` with `opts`, checking categories and values against the
/// twin after each layer; returns the final categories.
fn check_on(gpu: &Gpu, net: &Network, y0: &Csr, opts: &ThesisOptions) -> Vec<u32> {
    let n = net.n;
    let mut plan = ThesisPlan::new(gpu, net, y0, opts).unwrap();
    plan.set_poison(true);
    plan.start(gpu).unwrap();
    let mut want = vec![0f64; y0.nrows * n];
    for r in 0..y0.nrows {
        for e in y0.row_range(r) {
            want[r * n + y0.col_idx[e] as usize] = f64::from(y0.values[e]);
        }
    }
    let mut cats = Vec::new();
    for l in 0..net.layers.len() {
        plan.layer(gpu, l).unwrap();
        want = twin_step(net, l, &want);
        let got = plan.output(gpu).unwrap();
        cats = plan.categories(gpu).unwrap();
        let ctx = format!("{opts:?} layer {}", l + 1);
        assert_eq!(cats, cpu::categories(&want, n), "categories, {ctx}");
        for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let tol = 1e-5 * (l + 1) as f64 * (1.0 + w.abs());
            assert!(
                (f64::from(g) - w).abs() <= tol,
                "row {} neuron {}: GPU {g} twin {w}, {ctx}",
                e / n,
                e % n
            );
        }
    }
    cats
}

fn check(net: &Network, y0: &Csr, opts: &ThesisOptions) -> Vec<u32> {
    check_on(common::gpu(), net, y0, opts)
}

/// Every format × tiling (1D both ways) with the given buffer and a small tile (so tiles
/// straddle rows, columns and batch ends).
fn every(buffer: BufferSize) -> Vec<ThesisOptions> {
    let mut out = Vec::new();
    for format in Format::ALL {
        // 1D with the row's sums in workgroup memory and in the buffer (f32 atomics), 2D.
        for (tiling, row_in_workgroup) in [
            (Tiling::OneD, Some(true)),
            (Tiling::OneD, Some(false)),
            (Tiling::TwoD, None),
        ] {
            out.push(ThesisOptions {
                format,
                tiling,
                buffer,
                workgroup: 64,
                tile_rows: 3,
                tile_cols: 40,
                row_in_workgroup,
                band_rows: None,
            });
        }
    }
    out
}

#[test]
fn every_approach_tiling_and_buffer_matches_the_twin_layer_by_layer() {
    let n = 100;
    let net = data::generated_network(n, 6, -0.3, 21).unwrap();
    let y0 = data::random_inputs(90, n, 0.3, 22).unwrap();
    for buffer in [0.1, 0.25, 0.5].map(BufferSize::Fraction) {
        for opts in every(buffer) {
            let cats = check(&net, &y0, &opts);
            assert!(
                !cats.is_empty() && cats.len() < y0.nrows,
                "{} of {} rows survive: the test could not fail",
                cats.len(),
                y0.nrows
            );
        }
    }
}

#[test]
fn power_law_weights_match_without_native_f32_atomics() {
    // Random weights of mixed sign and rows of very different lengths, on the adapter with
    // no optional features (compare-exchange adds).
    use rand::{Rng, SeedableRng};
    let n = 70;
    let mut rng = rand::rngs::StdRng::seed_from_u64(31);
    let layers = (0..4)
        .map(|_| {
            let mut ptr = vec![0u32];
            let mut col = Vec::new();
            let mut val = Vec::new();
            for i in 0..n {
                // Row lengths 1..n, power-law: a few long rows, many short.
                let len = ((n as f64) / (1.0 + i as f64).powf(1.2)).ceil() as usize;
                let mut cols: Vec<u32> = (0..n as u32).collect();
                for k in 0..len {
                    let j = rng.random_range(k..n);
                    cols.swap(k, j);
                }
                cols[..len].sort_unstable();
                for &c in &cols[..len] {
                    col.push(c);
                    val.push(rng.random_range(-0.2f32..0.6));
                }
                ptr.push(col.len() as u32);
            }
            Csr::new(n, n, ptr, col, val).unwrap()
        })
        .collect();
    let net = Network::new(n, layers, -0.2).unwrap();
    let y0 = data::random_inputs(60, n, 0.2, 32).unwrap();
    for opts in every(BufferSize::Rows(7)) {
        let cats = check_on(common::gpu_plain(), &net, &y0, &opts);
        assert!(
            !cats.is_empty() && cats.len() < y0.nrows,
            "{} survive",
            cats.len()
        );
    }
}

#[test]
fn a_batch_with_no_nonempty_rows() {
    let n = 64;
    let net = data::generated_network(n, 3, -0.3, 5).unwrap();
    for opts in every(BufferSize::Rows(4)) {
        assert!(check(&net, &Csr::empty(30, n), &opts).is_empty());
    }
    // Inputs whose first rows are empty: with the empty rows kept in the list a batch
    // would hold none, with DCSR they are never dealt.
    let mut y0 = data::random_inputs(30, n, 0.4, 6).unwrap();
    let cut = y0.row_ptr[12];
    for p in y0.row_ptr.iter_mut().take(13) {
        *p = 0;
    }
    for p in y0.row_ptr.iter_mut().skip(13) {
        *p -= cut;
    }
    y0.col_idx.drain(..cut as usize);
    y0.values.drain(..cut as usize);
    for opts in every(BufferSize::Rows(4)) {
        check(&net, &y0, &opts);
    }
}

#[test]
fn a_row_killed_exactly_by_the_bias() {
    let n = 16;
    let w = Csr::new(
        n,
        n,
        (0..=n as u32).collect(),
        (0..n as u32).collect(),
        vec![1.0 / 16.0; n],
    )
    .unwrap();
    let net = Network::new(n, vec![w.clone(), w], -0.25).unwrap();
    // Row 0: 4 → 0.25 − 0.25 = 0 exactly; row 1: 8 → 0.25, then 1/64 − 0.25 < 0 at layer 2;
    // row 2: 80 → 4.75, then 0.047: survives both.
    let y0 = Csr::new(3, n, vec![0, 1, 2, 3], vec![3, 5, 7], vec![4.0, 8.0, 80.0]).unwrap();
    for opts in every(BufferSize::Rows(2)) {
        let gpu = common::gpu();
        let mut plan = ThesisPlan::new(gpu, &net, &y0, &opts).unwrap();
        plan.start(gpu).unwrap();
        plan.layer(gpu, 0).unwrap();
        assert_eq!(plan.categories(gpu).unwrap(), vec![1, 2], "{opts:?}");
        let out = plan.output(gpu).unwrap();
        assert_eq!(out[n + 5], 0.25);
        assert!(out[..n].iter().all(|&v| v == 0.0));
        check(&net, &y0, &opts);
    }
}

#[test]
fn values_saturate_at_32() {
    let n = 48;
    let mut net = data::generated_network(n, 4, -0.3, 6).unwrap();
    for w in &mut net.layers {
        w.values.iter_mut().for_each(|v| *v = 2.0);
    }
    let y0 = data::random_inputs(20, n, 0.5, 7).unwrap();
    for opts in every(BufferSize::Fraction(0.25)) {
        check(&net, &y0, &opts);
        let gpu = common::gpu();
        let mut plan = ThesisPlan::new(gpu, &net, &y0, &opts).unwrap();
        plan.run(gpu).unwrap();
        let out = plan.output(gpu).unwrap();
        assert!(out.contains(&32.0) && out.iter().all(|&v| v <= 32.0));
    }
}

#[test]
fn run_reports_memory_and_repeats() {
    let n = 64;
    let net = data::generated_network(n, 5, -0.3, 8).unwrap();
    let y0 = data::random_inputs(80, n, 0.3, 9).unwrap();
    let want = cpu::categories(&cpu::infer(&net, &y0), n);
    for opts in every(BufferSize::Fraction(0.1)) {
        let gpu = common::gpu();
        let mut plan = ThesisPlan::new(gpu, &net, &y0, &opts).unwrap();
        let mut grown = Vec::new();
        for _ in 0..2 {
            let run = plan.run(gpu).unwrap();
            assert_eq!(plan.categories(gpu).unwrap(), want, "{opts:?}");
            assert!(run.batches >= net.layers.len());
            // Y_in + Y_out + buffer: at least the buffer and the largest Y.
            assert!(run.peak_feature_bytes >= plan.buffer_bytes() + 8 * run.max_nnz as u64);
            grown.push(run.expansions);
        }
        // The first run grows Y_out batch by batch (the expand path); the second finds the
        // ping-pong arrays sized by the first and grows them at most where it needs more.
        assert!(grown[0] >= 2 && grown[1] < grown[0], "{grown:?} {opts:?}");
        // The multiply timed alone: the same result, a time within the run's.
        plan.set_time_multiply(true);
        let run = plan.run(gpu).unwrap();
        assert_eq!(plan.categories(gpu).unwrap(), want, "{opts:?}");
        let spmm = run.multiply_seconds.expect("multiply timed");
        assert!(
            spmm > 0.0 && spmm <= run.seconds,
            "{spmm} of {}",
            run.seconds
        );
    }
}

#[test]
fn bad_options_are_errors() {
    let net = data::generated_network(32, 2, -0.3, 1).unwrap();
    let y0 = data::random_inputs(10, 32, 0.3, 2).unwrap();
    let gpu = common::gpu();
    for (opts, what) in [
        (
            ThesisOptions {
                buffer: BufferSize::Fraction(0.0),
                ..Default::default()
            },
            "buffer fraction",
        ),
        (
            ThesisOptions {
                workgroup: 100,
                ..Default::default()
            },
            "power of two",
        ),
        (
            ThesisOptions {
                tile_rows: 64,
                tile_cols: 4096,
                ..Default::default()
            },
            "workgroup memory",
        ),
    ] {
        let e = ThesisPlan::new(gpu, &net, &y0, &opts).err().expect(what);
        assert!(e.to_string().contains(what), "{e}");
    }
    // CSC·CSC rows span every input row: 20,000 sums do not fit workgroup memory.
    let y0 = data::random_inputs(20_000, 32, 0.3, 3).unwrap();
    let opts = ThesisOptions {
        format: Format::CscCsc,
        tiling: Tiling::OneD,
        row_in_workgroup: Some(true),
        ..Default::default()
    };
    let e = ThesisPlan::new(gpu, &net, &y0, &opts)
        .err()
        .expect("too wide");
    let what = "a row of 20000 sums in workgroup memory";
    assert!(e.to_string().contains(what), "{e}");
}

fn cli(args: &[&str]) -> (i32, String, String) {
    common::wgsparse_exit(args)
}

#[test]
fn cli_all_runs_every_approach_and_tiling_and_fails_on_a_mismatch() {
    let base = [
        "spdnn",
        "--neurons",
        "64",
        "--layers",
        "3",
        "--rows",
        "80",
        "--density",
        "0.3",
        "--reps",
        "1",
        "--json",
        "--buffer",
        "0.1,0.5",
        "--tile-cols",
        "24",
    ];
    let (code, out, err) = cli(&[&base[..], &["--approach", "all", "--check"]].concat());
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The two fast paths, then 3 formats × 2 tilings × 2 buffers.
    assert_eq!(lines.len(), 2 + 12, "{out}");
    for v in &lines[2..] {
        assert_eq!(v["ok"], true, "{v}");
        assert!(v["check"].as_str().unwrap().contains("categories match"));
        assert!(v["edges_per_second"].as_f64().unwrap() > 0.0);
        assert!(v["peak_feature_bytes"].as_u64().unwrap() > 0);
        assert_eq!(v["active_rows"], lines[0]["active_rows"]);
    }
    let names: std::collections::BTreeSet<String> = lines[2..]
        .iter()
        .map(|v| format!("{} {} {}", v["approach"], v["tiling"], v["buffer"]))
        .collect();
    assert_eq!(names.len(), 12, "{names:?}");
    // Without a truth, every run is checked against the first one.
    let (code, out, err) = cli(&[&base[..], &["--approach", "thesis", "--tiling", "1d"]].concat());
    assert_eq!(code, 0, "{out}{err}");
    let checks: Vec<String> = out
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["check"].to_string())
        .collect();
    assert_eq!(checks.len(), 6, "{out}");
    assert!(checks[0].contains("not checked"), "{checks:?}");
    for c in &checks[1..] {
        assert!(
            c.contains("categories match (the csr-ell 1d 10% run)"),
            "{checks:?}"
        );
    }
    // One row too few in the truth: a mismatch report and exit status 1.
    let net = data::generated_network(64, 3, -0.3, 1).unwrap();
    let y0 = data::random_inputs(80, 64, 0.3, 2).unwrap();
    let mut want = cpu::categories(&cpu::infer(&net, &y0), 64);
    assert!(!want.is_empty());
    want.pop();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cat.tsv");
    data::write_categories(&p, &want).unwrap();
    let (code, out, err) = cli(&[
        &base[..],
        &["--approach", "csc-csc", "--tiling", "1d"],
        &["--categories", p.to_str().unwrap()],
    ]
    .concat());
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("MISMATCH") && out.contains("1 extra"), "{out}");
}

#[test]
fn tiles_straddle_batch_boundaries() {
    // Tiles of 5 rows × 7 columns over batches of 6 rows and 50 columns: every batch ends
    // inside a tile, every row of tiles ends inside a column tile.
    let n = 50;
    let net = data::generated_network(n, 4, -0.3, 41).unwrap();
    let y0 = data::random_inputs(47, n, 0.3, 42).unwrap();
    for format in Format::ALL {
        let opts = ThesisOptions {
            format,
            tiling: Tiling::TwoD,
            buffer: BufferSize::Rows(6),
            workgroup: 32,
            tile_rows: 5,
            tile_cols: 7,
            row_in_workgroup: None,
            band_rows: None,
        };
        let cats = check(&net, &y0, &opts);
        assert!(!cats.is_empty() && cats.len() < y0.nrows, "{}", cats.len());
    }
}

#[test]
fn a_sparse_y_beyond_one_binding_is_an_error() {
    // Bindings of 8 KiB hold 2,048 entries: the inputs fit, the denser Y after layer 1
    // (150 rows of up to 32 entries) does not, when asked for one band of all rows.
    let n = 32;
    let net = data::generated_network(n, 3, -0.3, 51).unwrap();
    let y0 = data::random_inputs(150, n, 0.3, 52).unwrap();
    assert!(y0.nnz() < 2048);
    let gpu = common::gpu_small_bindings();
    for opts in every(BufferSize::Rows(8)).into_iter().step_by(3) {
        let opts = ThesisOptions {
            band_rows: Some(150),
            ..opts
        };
        let mut plan = ThesisPlan::new(gpu, &net, &y0, &opts).unwrap();
        let e = plan.run(gpu).expect_err("Y beyond a binding");
        assert!(e.to_string().contains("sparse Y after layer 1"), "{e}");
    }
}

/// The twin's categories of `net` on `y0`.
fn twin_categories(net: &Network, y0: &Csr) -> Vec<u32> {
    let n = net.n;
    let mut y = vec![0f64; y0.nrows * n];
    for r in 0..y0.nrows {
        for e in y0.row_range(r) {
            y[r * n + y0.col_idx[e] as usize] = f64::from(y0.values[e]);
        }
    }
    for l in 0..net.layers.len() {
        y = twin_step(net, l, &y);
    }
    cpu::categories(&y, n)
}

#[test]
fn bands_by_default_when_y_exceeds_one_binding_and_as_asked() {
    // The network above on 8 KiB bindings: by default bands of at most 2,048 / 32 = 64
    // rows (150 rows: 3 bands of 50), so every band's sparse Y fits; the categories of all
    // bands (global row ids) equal the twin's, twice (the bands' inputs are reused).
    let n = 32;
    let net = data::generated_network(n, 3, -0.3, 51).unwrap();
    let y0 = data::random_inputs(150, n, 0.3, 52).unwrap();
    let want = twin_categories(&net, &y0);
    assert!(!want.is_empty() && want.len() < 150 && *want.last().unwrap() >= 100);
    let gpu = common::gpu_small_bindings();
    for opts in every(BufferSize::Rows(8)).into_iter().step_by(3) {
        let mut plan = ThesisPlan::new(gpu, &net, &y0, &opts).unwrap();
        assert_eq!(plan.bands(), 3, "{opts:?}");
        for _ in 0..2 {
            let run = plan.run(gpu).unwrap();
            assert_eq!(run.bands, 3);
            assert_eq!(plan.categories(gpu).unwrap(), want, "{opts:?}");
        }
    }
    // Asked for bands of 37 rows (the last one of 2) on the ordinary device.
    let gpu = common::gpu();
    for opts in every(BufferSize::Rows(5)) {
        let opts = ThesisOptions {
            band_rows: Some(37),
            ..opts
        };
        let mut plan = ThesisPlan::new(gpu, &net, &y0, &opts).unwrap();
        assert_eq!(plan.bands(), 5);
        plan.run(gpu).unwrap();
        assert_eq!(plan.categories(gpu).unwrap(), want, "{opts:?}");
    }
}

#[test]
fn cli_auto_thesis_runs_the_pairs_asked_once_in_bands() {
    let base = [
        "spdnn",
        "--neurons",
        "64",
        "--layers",
        "3",
        "--rows",
        "80",
        "--density",
        "0.3",
        "--reps",
        "0",
        "--json",
        "--approach",
        "auto-thesis",
        "--thesis-reps",
        "0",
        "--buffer",
        "1",
        "--band-rows",
        "30",
    ];
    let runs = ["--thesis-runs", "csr-csr:1d,csc-csc:2d", "--check"];
    let (code, out, err) = cli(&[&base[..], &runs[..]].concat());
    assert_eq!(code, 0, "{out}{err}");
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{out}");
    assert!(lines[0]["approach"].as_str().unwrap().starts_with("auto"));
    for (v, (a, t)) in lines[1..]
        .iter()
        .zip([("csr-csr", "1d"), ("csc-csc", "2d")])
    {
        assert_eq!(
            (v["approach"].as_str(), v["tiling"].as_str()),
            (Some(a), Some(t))
        );
        assert_eq!(v["ok"], true, "{v}");
        assert!(v["check"].as_str().unwrap().contains("CPU twin"), "{v}");
        assert_eq!(v["bands"], 3, "{v}");
        assert_eq!(v["active_rows"], lines[0]["active_rows"]);
    }
    let (code, _, err) = cli(&[&base[..], &["--thesis-runs", "csr-csr:3d"]].concat());
    assert_ne!(code, 0);
    assert!(err.contains("csr-csr:3d"), "{err}");
}
