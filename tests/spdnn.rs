//! Sparse DNN inference: the GPU fast path against the f64 CPU twin (categories exactly,
//! values to f32 tolerance), activations poisoned with NaN before each run, plus the edge
//! cases: inputs with no non-empty row, a row killed exactly by the bias, values saturating
//! at 32, chunks of rows, and malformed files.

mod common;

use std::io::Write;

use wgsparse::sparse::Csr;
use wgsparse::spdnn::{cpu, data, Approach, Network, Options, Plan};
use wgsparse::Error;

/// Runs `net` on `y0` on the GPU and checks it against the twin; returns the categories.
fn check(net: &Network, y0: &Csr, options: &Options) -> Vec<u32> {
    checked_output(net, y0, options).0
}

/// [`check`], returning the categories and the final activations.
fn checked_output(net: &Network, y0: &Csr, options: &Options) -> (Vec<u32>, Vec<f32>) {
    let gpu = common::gpu();
    let plan = Plan::new(gpu, net, y0, options).unwrap();
    plan.poison(gpu).unwrap();
    plan.run(gpu).unwrap();
    let got_cat = plan.categories(gpu).unwrap();
    let got = plan.output(gpu).unwrap();
    let want = cpu::infer(net, y0);
    let want_cat = cpu::categories(&want, net.n);
    assert_eq!(got_cat, want_cat, "categories differ");
    let layers = net.layers.len() as f64;
    for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let tol = 1e-5 * layers * (1.0 + w.abs());
        assert!(
            (f64::from(g) - w).abs() <= tol,
            "row {} neuron {}: GPU {g} twin {w}",
            e / net.n,
            e % net.n
        );
    }
    (got_cat, got)
}

#[test]
fn generated_networks_match_the_twin() {
    for (n, layers, density, seed) in [
        (64usize, 6usize, 0.3, 1u64),
        (256, 12, 0.3, 2),
        (100, 9, 0.3, 3),
    ] {
        let net = data::generated_network(n, layers, -0.3, seed).unwrap();
        let y0 = data::random_inputs(300, n, density, seed + 10).unwrap();
        for options in every_approach() {
            let cats = check(&net, &y0, &options);
            // The inputs must make the test able to fail: some rows live, some die.
            assert!(
                !cats.is_empty() && cats.len() < y0.nrows,
                "n={n}: {} of 300 survive",
                cats.len()
            );
        }
    }
}

#[test]
fn random_weights_and_chunks_match_the_twin() {
    // Random positive weights (not all equal), rows split into uneven chunks, a small workgroup.
    let n = 128;
    let mut net = data::generated_network(n, 8, -0.35, 9).unwrap();
    for (l, w) in net.layers.iter_mut().enumerate() {
        for (e, v) in w.values.iter_mut().enumerate() {
            *v = 0.02 + ((e * 37 + l * 11) % 17) as f32 / 160.0;
        }
    }
    let y0 = data::random_inputs(250, n, 0.2, 4).unwrap();
    let gpu = common::gpu();
    for approach in [Approach::DenseRows, Approach::SlicedEll] {
        let options = Options {
            approach,
            workgroup: Some(64),
            rows_per_workgroup: 3,
            stage: Some(false),
            slice: Some(50),
            chunk_rows: Some(97),
            ..Options::default()
        };
        assert_eq!(Plan::new(gpu, &net, &y0, &options).unwrap().chunks(), 3);
        let cats = check(&net, &y0, &options);
        assert!(!cats.is_empty() && cats.len() < y0.nrows);
    }
}

#[test]
fn rows_per_workgroup_and_staging_agree() {
    // Every tiling, staged and not, on 203 rows (a partial last workgroup for most).
    let n = 128;
    let net = data::generated_network(n, 7, -0.3, 21).unwrap();
    let y0 = data::random_inputs(203, n, 0.3, 22).unwrap();
    let gpu = common::gpu();
    for rows_per_workgroup in [1u32, 2, 5, 8] {
        for stage in [false, true] {
            let options = Options {
                approach: Approach::DenseRows,
                rows_per_workgroup,
                stage: Some(stage),
                ..Options::default()
            };
            assert_eq!(Plan::new(gpu, &net, &y0, &options).unwrap().staged(), stage);
            let cats = check(&net, &y0, &options);
            assert!(!cats.is_empty() && cats.len() < y0.nrows);
        }
    }
    let bad = Options {
        approach: Approach::DenseRows,
        rows_per_workgroup: 9,
        ..Options::default()
    };
    assert!(matches!(
        Plan::new(gpu, &net, &y0, &bad),
        Err(Error::Option(_))
    ));
}

/// The default options of every concrete path.
fn every_approach() -> Vec<Options> {
    [Approach::SlicedEll, Approach::DenseRows]
        .into_iter()
        .map(|approach| Options {
            approach,
            ..Options::default()
        })
        .collect()
}

#[test]
fn sliced_tilings_match_the_twin() {
    // Slices that straddle blocks and end short (N = 300 in slices of 64, 37, 300), one to
    // eight outputs per invocation (blocks of 64..512 outputs, a partial last block),
    // 4..16 rows per workgroup over 203 rows (a partial last row group), small workgroups,
    // ELL groups of 1..64 lanes, random weights, and a two-chunk split.
    let n = 300;
    let mut net = data::generated_network(n, 6, -0.3, 31).unwrap();
    for (l, w) in net.layers.iter_mut().enumerate() {
        for (e, v) in w.values.iter_mut().enumerate() {
            *v = 0.03 + ((e * 13 + l * 7) % 23) as f32 / 300.0;
        }
    }
    let y0 = data::random_inputs(203, n, 0.3, 32).unwrap();
    let gpu = common::gpu();
    for (wg, t, rv, slice, chunk, ell_lanes) in [
        (64u32, 1u32, 1u32, Some(64u32), None, 8u32),
        (64, 2, 2, Some(37), Some(150usize), 32),
        (16, 8, 2, Some(300), None, 4),
        (32, 4, 4, None, None, 1),
        (128, 3, 1, Some(100), Some(60), 64),
        // A workgroup smaller than its 16 rows: each invocation flags several.
        (8, 2, 4, Some(37), None, 8),
    ] {
        let options = Options {
            approach: Approach::SlicedEll,
            workgroup: Some(wg),
            outputs_per_invocation: t,
            row_vecs: rv,
            slice,
            chunk_rows: chunk,
            ell_lanes,
            ..Options::default()
        };
        let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
        assert!(!plan.packed(), "random weights cannot drop their values");
        let tiling = plan.tiling().unwrap();
        assert_eq!((tiling.t, tiling.rv), (t, rv));
        if let Some(s) = slice {
            assert_eq!(tiling.slice, s);
        }
        let cats = check(&net, &y0, &options);
        assert!(!cats.is_empty() && cats.len() < y0.nrows, "{options:?}");
    }
    // Layers of one value each (1/16 and a value that is not a power of two), packed and not,
    // over the same tilings' extremes (odd ELL widths pad to even when packed).
    let mut uniform = data::generated_network(n, 5, -0.3, 33).unwrap();
    uniform.layers[2].values.iter_mut().for_each(|v| *v = 0.07);
    for pack_uniform in [true, false] {
        for (wg, t, rv, slice) in [(64u32, 1u32, 1u32, Some(37u32)), (32, 8, 2, Some(300))] {
            let options = Options {
                approach: Approach::SlicedEll,
                workgroup: Some(wg),
                outputs_per_invocation: t,
                row_vecs: rv,
                slice,
                pack_uniform,
                ..Options::default()
            };
            let plan = Plan::new(gpu, &uniform, &y0, &options).unwrap();
            assert_eq!(plan.packed(), pack_uniform);
            let cats = check(&uniform, &y0, &options);
            assert!(!cats.is_empty() && cats.len() < y0.nrows, "{options:?}");
        }
    }
    // A block wider than N lowers T: 8 outputs × 64 invocations over N = 300 → T = 5.
    let wide = Options {
        approach: Approach::SlicedEll,
        workgroup: Some(64),
        outputs_per_invocation: 8,
        row_vecs: 1,
        ..Options::default()
    };
    assert_eq!(
        Plan::new(gpu, &net, &y0, &wide)
            .unwrap()
            .tiling()
            .unwrap()
            .t,
        5
    );
    // Tilings the kernel cannot hold are errors, not launches.
    for (t, rv, slice, ell_lanes) in [
        (9u32, 1u32, None, 8u32),
        (1, 5, None, 8),
        (8, 4, None, 8),
        (1, 1, Some(1 << 20), 8),
        (1, 1, None, 0),
        (1, 1, None, 24),
    ] {
        let bad = Options {
            approach: Approach::SlicedEll,
            outputs_per_invocation: t,
            row_vecs: rv,
            slice,
            ell_lanes,
            ..Options::default()
        };
        assert!(Plan::new(gpu, &net, &y0, &bad).is_err(), "{bad:?}");
    }
}

/// The networks of the sliced-ELL switch tests (N = 200, 4 layers): random weights
/// `0.03 + ((e·a + l·b) mod m) / d` and one of generated weights with a layer of one value
/// (packed), with 130 input rows; seeds `seed`, `seed + 1` and `seed + 2`.
fn switch_networks(seed: u64, (a, b, m, d): (usize, usize, usize, f32)) -> (Network, Network, Csr) {
    let n = 200;
    let mut random = data::generated_network(n, 4, -0.3, seed).unwrap();
    for (l, w) in random.layers.iter_mut().enumerate() {
        for (e, v) in w.values.iter_mut().enumerate() {
            *v = 0.03 + ((e * a + l * b) % m) as f32 / d;
        }
    }
    let mut uniform = data::generated_network(n, 4, -0.3, seed + 1).unwrap();
    uniform.layers[1].values.iter_mut().for_each(|v| *v = 0.07);
    let y0 = data::random_inputs(130, n, 0.3, seed + 2).unwrap();
    (random, uniform, y0)
}

/// `switched` (a sliced-ELL switch on) at each (workgroup, T, RV, slice) of `tilings`
/// equals the twin on both networks of [`switch_networks`], the network cut after every
/// layer; the uniform one packed, the random one not.
fn switch_matches_twin(
    (random, uniform, y0): (&Network, &Network, &Csr),
    tilings: &[(u32, u32, u32, Option<u32>)],
    switched: Options,
) {
    let gpu = common::gpu();
    for (net, packed) in [(random, false), (uniform, true)] {
        for &(wg, t, rv, slice) in tilings {
            let options = Options {
                approach: Approach::SlicedEll,
                workgroup: Some(wg),
                outputs_per_invocation: t,
                row_vecs: rv,
                slice,
                ..switched.clone()
            };
            for k in 1..=net.layers.len() {
                let cut = Network::new(net.n, net.layers[..k].to_vec(), net.bias).unwrap();
                let plan = Plan::new(gpu, &cut, y0, &options).unwrap();
                assert_eq!(plan.packed(), packed, "{options:?}");
                let cats = check(&cut, y0, &options);
                assert!(!cats.is_empty(), "{k} layers, {options:?}");
            }
        }
    }
}

#[test]
fn slice_sums_match_the_twin_after_every_layer() {
    // Each slice's gathers summed in registers (`slice_sums`) at 1..4 row vectors, random
    // weights and layers of one value (packed, 1/16 and 0.07), short slices and a partial
    // last block; the network cut after every layer.
    let (random, uniform, y0) = switch_networks(41, (11, 5, 19, 250.0));
    let tilings = [
        (64u32, 1u32, 1u32, Some(37u32)),
        (32, 4, 2, Some(64)),
        (16, 2, 3, None),
        (32, 3, 4, Some(90)),
    ];
    let switched = Options {
        slice_sums: true,
        segments_together: false,
        ..Options::default()
    };
    switch_matches_twin((&random, &uniform, &y0), &tilings, switched);
}

#[test]
fn segments_one_after_another_match_the_twin_after_every_layer() {
    // A slice's T output segments each in a loop of its own (`segments_together` off; the
    // default runs them in one loop) at 1..4 row vectors
    // and 1..8 outputs per invocation, random weights and layers of one value (packed),
    // short slices and a partial last block; the network cut after every layer.
    let (random, uniform, y0) = switch_networks(51, (13, 7, 23, 300.0));
    let tilings = [
        (64u32, 1u32, 1u32, Some(37u32)),
        (32, 4, 2, Some(64)),
        (16, 8, 1, Some(50)),
        (32, 3, 4, None),
    ];
    let switched = Options {
        segments_together: false,
        ..Options::default()
    };
    switch_matches_twin((&random, &uniform, &y0), &tilings, switched);
    let gpu = common::gpu();
    // Slice sums keep per-output registers of their own: the two are refused together.
    let both = Options {
        approach: Approach::SlicedEll,
        slice_sums: true,
        segments_together: true,
        ..Options::default()
    };
    let err = Plan::new(gpu, &random, &y0, &both).err().expect("refused");
    assert!(err.to_string().contains("segments together"), "{err}");
}

/// The staging and bounds switches as (stage_unroll, segments_together, prefetch_bounds):
/// unrolled staging with segments together and apart, bounds prefetched (the default) and
/// not, and the prefetch asked for with segments apart (where it has no effect).
const STAGING_SWITCHES: [(u32, bool, bool); 6] = [
    (2, true, false),
    (4, true, false),
    (1, true, false),
    (4, true, true),
    (3, false, false),
    (1, false, true),
];

#[test]
fn staging_and_bounds_switches_match_the_twin_bit_for_bit() {
    // Each switch of STAGING_SWITCHES equals the twin and gives the default's activations
    // bit for bit (the same staged values, the same words in the same order), at 1, 2 and
    // 4 row vectors (a partial last tile), columns past the slice within an unrolled turn
    // (slices of 50 and 37 over 16 and 32 invocations, one slice of 200 over 64), random
    // weights and layers of one value (packed), 4 layers.
    let (random, uniform, y0) = switch_networks(61, (7, 3, 29, 350.0));
    let gpu = common::gpu();
    for (net, packed) in [(&random, false), (&uniform, true)] {
        for (wg, t, rv, slice) in [
            (16u32, 8u32, 1u32, Some(50u32)),
            (32, 3, 4, Some(37)),
            (64, 2, 2, None),
        ] {
            let default = Options {
                approach: Approach::SlicedEll,
                workgroup: Some(wg),
                outputs_per_invocation: t,
                row_vecs: rv,
                slice,
                ..Options::default()
            };
            let plan = Plan::new(gpu, net, &y0, &default).unwrap();
            assert_eq!(plan.packed(), packed, "{default:?}");
            drop(plan);
            let (cats, want) = checked_output(net, &y0, &default);
            assert!(!cats.is_empty(), "{default:?}");
            let want: Vec<u32> = want.iter().map(|v| v.to_bits()).collect();
            for (unroll, together, prefetch) in STAGING_SWITCHES {
                let options = Options {
                    stage_unroll: unroll,
                    segments_together: together,
                    prefetch_bounds: prefetch,
                    ..default.clone()
                };
                let (_, got) = checked_output(net, &y0, &options);
                let got: Vec<u32> = got.iter().map(|v| v.to_bits()).collect();
                assert!(got == want, "not the default's bits ({options:?})");
            }
        }
    }
}

#[test]
fn staging_and_bounds_switches_are_checked() {
    // Unrolls outside 1..=4 are refused.
    let (random, _, y0) = switch_networks(61, (7, 3, 29, 350.0));
    let gpu = common::gpu();
    for (unroll, together, prefetch, says) in [
        (0, true, false, "staging unroll"),
        (5, true, false, "staging unroll"),
    ] {
        let options = Options {
            approach: Approach::SlicedEll,
            stage_unroll: unroll,
            segments_together: together,
            prefetch_bounds: prefetch,
            ..Options::default()
        };
        let err = Plan::new(gpu, &random, &y0, &options)
            .err()
            .expect("refused");
        assert!(err.to_string().contains(says), "{err}");
    }
}

#[test]
fn layers_recorded_in_groups_match_one_batch() {
    let n = 96;
    let net = data::generated_network(n, 7, -0.3, 41).unwrap();
    let y0 = data::random_inputs(90, n, 0.3, 42).unwrap();
    let want = cpu::categories(&cpu::infer(&net, &y0), n);
    let gpu = common::gpu();
    for options in every_approach() {
        let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
        plan.poison(gpu).unwrap();
        let mut done = vec![];
        plan.run_grouped(gpu, 3, |l| done.push(l)).unwrap();
        assert_eq!(done, vec![3, 6, 7]);
        assert_eq!(plan.categories(gpu).unwrap(), want, "{options:?}");
    }
}

#[test]
fn inputs_with_no_nonempty_row() {
    let net = data::generated_network(64, 4, -0.3, 5).unwrap();
    let y0 = Csr::empty(40, 64);
    for options in every_approach() {
        assert!(check(&net, &y0, &options).is_empty());
    }
}

#[test]
fn a_row_killed_exactly_by_the_bias() {
    // Identity-like layer: output j gathers input j with weight 1/16 (width 1). A row with
    // value 4 at one neuron gives z = 0.25 there; bias −0.25 makes it exactly 0. A second row
    // with value 8 survives with 0.25.
    let n = 16;
    let w = Csr::new(
        n,
        n,
        (0..=n as u32).collect(),
        (0..n as u32).collect(),
        vec![1.0 / 16.0; n],
    )
    .unwrap();
    let net = Network::new(n, vec![w], -0.25).unwrap();
    let y0 = Csr::new(3, n, vec![0, 1, 2, 2], vec![3, 5], vec![4.0, 8.0]).unwrap();
    for options in every_approach() {
        let cats = check(&net, &y0, &options);
        assert_eq!(cats, vec![1]);
        let gpu = common::gpu();
        let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
        plan.run(gpu).unwrap();
        let out = plan.output(gpu).unwrap();
        assert_eq!(out[n + 5], 0.25);
        assert!(out[..n].iter().all(|&v| v == 0.0));
    }
}

#[test]
fn values_saturate_at_32() {
    let n = 64;
    let mut net = data::generated_network(n, 5, -0.3, 6).unwrap();
    for w in &mut net.layers {
        w.values.iter_mut().for_each(|v| *v = 2.0);
    }
    let y0 = data::random_inputs(50, n, 0.5, 7).unwrap();
    for options in every_approach() {
        check(&net, &y0, &options);
        let gpu = common::gpu();
        let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
        plan.run(gpu).unwrap();
        let out = plan.output(gpu).unwrap();
        assert!(out.contains(&32.0) && out.iter().all(|&v| v <= 32.0));
    }
}

#[test]
fn bad_inputs_are_errors() {
    let gpu = common::gpu();
    let net = data::generated_network(64, 2, -0.3, 1).unwrap();
    let y0 = data::random_inputs(4, 32, 0.5, 1).unwrap();
    assert!(matches!(
        Plan::new(gpu, &net, &y0, &Options::default()),
        Err(Error::Shape(_))
    ));
    let w = data::generated_network(32, 1, -0.3, 1)
        .unwrap()
        .layers
        .remove(0);
    assert!(matches!(
        Network::new(64, vec![w], -0.3),
        Err(Error::Shape(_))
    ));
    assert!(data::idx_inputs(
        &wgsparse::io::IdxImages {
            count: 1,
            rows: 2,
            cols: 2,
            pixels: vec![0; 4]
        },
        10,
        None,
        96
    )
    .is_err());
}

fn write(dir: &std::path::Path, name: &str, text: &str) -> std::path::PathBuf {
    let p = dir.join(name);
    std::fs::File::create(&p)
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    p
}

#[test]
fn graphchallenge_files_round_trip_and_malformed_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let net = data::generated_network(64, 3, -0.3, 8).unwrap();
    for (k, w) in net.layers.iter().enumerate() {
        wgsparse::io::write_graphchallenge_tsv(dir.path().join(format!("n64-l{}.tsv", k + 1)), w)
            .unwrap();
    }
    let back = data::read_network(dir.path(), 64, 3, -0.3).unwrap();
    assert_eq!(back.layers, net.layers);
    // Index out of range, named with file and line.
    write(dir.path(), "n64-l3.tsv", "1\t2\t0.0625\n65\t1\t0.0625\n");
    let e = data::read_network(dir.path(), 64, 3, -0.3)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("n64-l3.tsv:2") && e.contains("out of range"),
        "{e}"
    );
    // Wrong field count.
    let p = write(dir.path(), "in.tsv", "1\t2\t1\n3\t4\n");
    let e = data::read_inputs_tsv(&p, 10, 64).unwrap_err().to_string();
    assert!(e.contains("in.tsv:2") && e.contains("3 fields"), "{e}");
    // Categories: out of range and not a number.
    let p = write(dir.path(), "cat.tsv", "1\n7\n11\n");
    let e = data::read_categories(&p, 10).unwrap_err().to_string();
    assert!(e.contains("cat.tsv:3") && e.contains("out of range"), "{e}");
    let p = write(dir.path(), "cat2.tsv", "2\nx\n");
    let e = data::read_categories(&p, 10).unwrap_err().to_string();
    assert!(e.contains("cat2.tsv:2"), "{e}");
    let p = write(dir.path(), "cat3.tsv", "3\n1\n\n");
    assert_eq!(data::read_categories(&p, 10).unwrap(), vec![0, 2]);
}

/// (exit code, stdout followed by stderr).
fn cli(args: &[&str]) -> (i32, String) {
    let (code, stdout, stderr) = common::wgsparse_exit(args);
    (code, stdout + &stderr)
}

#[test]
fn cli_checks_categories_and_fails_on_a_mismatch() {
    let base = [
        "spdnn",
        "--neurons",
        "64",
        "--layers",
        "4",
        "--rows",
        "120",
        "--density",
        "0.3",
        "--reps",
        "1",
    ];
    let (code, out) = cli(&[&base[..], &["--check", "--json"]].concat());
    assert_eq!(code, 0, "{out}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(v["ok"], true, "{out}");
    assert!(v["check"].as_str().unwrap().contains("categories match"));
    let active = v["active_rows"].as_u64().unwrap();
    assert!(active > 0 && active < 120, "{out}");
    // A truth file with one row too few: a mismatch report and exit status 1.
    let dir = tempfile::tempdir().unwrap();
    let net = data::generated_network(64, 4, -0.3, 1).unwrap();
    let y0 = data::random_inputs(120, 64, 0.3, 2).unwrap();
    let mut want = cpu::categories(&cpu::infer(&net, &y0), 64);
    want.pop();
    let p = dir.path().join("cat.tsv");
    data::write_categories(&p, &want).unwrap();
    let (code, out) = cli(&[&base[..], &["--categories", p.to_str().unwrap()]].concat());
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("MISMATCH") && out.contains("1 extra"), "{out}");
    // A malformed truth file is an error naming file and line.
    std::fs::write(&p, "1\n0\n").unwrap();
    let (code, out) = cli(&[&base[..], &["--categories", p.to_str().unwrap()]].concat());
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("cat.tsv:2"), "{out}");
}

#[test]
fn cli_runs_idx_inputs_on_every_approach_and_exports_the_network() {
    // 28×28 images with heavy-tailed pixel intensities, each image its own brightness (some
    // too dark to survive), resized to 8×8 and thresholded at > 96.
    let dir = tempfile::tempdir().unwrap();
    let count = 60;
    let pixels: Vec<u8> = (0..count * 28 * 28)
        .map(|i| {
            let h = wgsparse::gpu::shaders::pcg_hash(i as u32 ^ 0x5bd1);
            let brightness = ((i / (28 * 28)) * 7 % 10) as f64 / 9.0;
            (255.0 * brightness * ((h % 1000) as f64 / 1000.0).powi(3)) as u8
        })
        .collect();
    let idx = dir.path().join("images.idx");
    wgsparse::io::write_idx_images(
        &idx,
        &wgsparse::io::IdxImages {
            count,
            rows: 28,
            cols: 28,
            pixels,
        },
    )
    .unwrap();
    let out = dir.path().join("net");
    let (code, text) = cli(&[
        "spdnn",
        "--neurons",
        "64",
        "--layers",
        "5",
        "--rows",
        "60",
        "--input",
        idx.to_str().unwrap(),
        "--approach",
        "all",
        "--check",
        "--reps",
        "1",
        "--json",
        "--export",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{text}");
    let lines: Vec<serde_json::Value> = text
        .lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    // The two fast paths, then the thesis's three approaches at both tilings.
    assert_eq!(lines.len(), 2 + 6, "{text}");
    for v in &lines {
        assert_eq!(v["ok"], true, "{text}");
        let active = v["active_rows"].as_u64().unwrap();
        assert!(active > 0 && active < 60, "{text}");
    }
    // The export: the layers and inputs read back as written, the categories as found.
    let net = data::generated_network(64, 5, -0.3, 1).unwrap();
    for (k, w) in net.layers.iter().enumerate() {
        let back = wgsparse::io::read_csr_binary(out.join(format!("l{}", k + 1))).unwrap();
        assert_eq!(&back, w);
    }
    let y0 = wgsparse::io::read_csr_binary(out.join("inputs")).unwrap();
    assert_eq!((y0.nrows, y0.ncols), (60, 64));
    let cats = data::read_categories(&out.join("categories.tsv"), 60).unwrap();
    assert_eq!(cats, cpu::categories(&cpu::infer(&net, &y0), 64));
    let meta: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("meta.json")).unwrap()).unwrap();
    assert_eq!(meta["edges"], 64 * 32 * 5);
}
