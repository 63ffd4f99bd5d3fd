//! Sparse DNN, sliced ELL with scalar rows: a constant row whose next layers' column sums
//! are each one value s is carried as one scalar c ← f(c·s) per layer, outside the tiles,
//! and rejoins the active list before a layer that is not uniform (and after the last).
//! Against the f64 CPU twin with the activations poisoned, after every layer (networks cut
//! after each): categories exactly, activations to f32 tolerance, and the rows carried
//! through each layer exactly as the twin predicts. Networks whose rows saturate, with a
//! non-uniform layer in the middle, rows killed by the bias while scalar, several chunks and
//! blocks, chunks of several scan blocks, a long run of uniform layers, scalar rows on and
//! off.

mod common;

use common::spdnn::{by_columns, power_law_inputs};
use rand::{Rng, SeedableRng};
use wgsparse::sparse::Csr;
use wgsparse::spdnn::{cpu, data, Approach, Network, Options, Plan};

/// Sliced ELL, constant and scalar rows on.
fn sliced(wg: u32, t: u32, rv: u32) -> Options {
    Options {
        approach: Approach::SlicedEll,
        workgroup: Some(wg),
        outputs_per_invocation: t,
        row_vecs: rv,
        constant_rows: true,
        scalar_rows: true,
        ..Options::default()
    }
}

/// Whether every column of `w` sums to one value (in f64).
fn uniform(w: &Csr) -> bool {
    let mut sums = vec![0f64; w.ncols];
    for (&j, &v) in w.col_idx.iter().zip(&w.values) {
        sums[j as usize] += f64::from(v);
    }
    sums.iter().all(|&s| s == sums[0])
}

/// The twin's prediction of the rows carried through each layer: a row is carried after
/// layer m (m ≥ 1) when layer m + 1 exists and is uniform and the row is one nonzero value
/// both after m − 1 and after m; it is counted at layer m + 1, which it crosses as a
/// scalar. (The tests' weights are positive, so every layer allows unwritten rows.)
fn predicted_carried(net: &Network, y0: &Csr) -> Vec<u64> {
    let n = net.n;
    let bias = f64::from(net.bias);
    let flat: Vec<bool> = net.layers.iter().map(uniform).collect();
    let constant = |y: &[f64]| y[0] != 0.0 && y.iter().all(|&v| v == y[0]);
    let mut carried = vec![0u64; net.layers.len()];
    for i in 0..y0.nrows {
        let mut y = vec![0.0; n];
        for e in y0.row_range(i) {
            y[y0.col_idx[e] as usize] = f64::from(y0.values[e]);
        }
        for (m, w) in net.layers.iter().enumerate() {
            let next = cpu::layer(&y, w, bias);
            if m >= 1 && m + 1 < flat.len() && flat[m + 1] && constant(&y) && constant(&next) {
                carried[m + 1] += 1;
            }
            y = next;
        }
    }
    carried
}

/// Runs `net` cut after every layer (the first k layers, k = 1..=L) with `options`,
/// activations poisoned, against the twin: categories exactly, final activations to f32
/// tolerance; on the whole network, the rows carried per layer against the prediction.
/// Returns the rows carried per layer of the whole network.
fn check(net: &Network, y0: &Csr, options: &Options) -> Vec<u64> {
    check_cuts(net, y0, options, 1..=net.layers.len())
}

/// [`check`] on the cuts after the layer counts `cuts` only.
fn check_cuts(
    net: &Network,
    y0: &Csr,
    options: &Options,
    cuts: impl IntoIterator<Item = usize>,
) -> Vec<u64> {
    let gpu = common::gpu();
    let mut carried = Vec::new();
    for k in cuts {
        let cut = Network::new(net.n, net.layers[..k].to_vec(), net.bias).unwrap();
        let plan = Plan::new(gpu, &cut, y0, options).unwrap();
        plan.poison(gpu).unwrap();
        plan.run(gpu).unwrap();
        let want = cpu::infer(&cut, y0);
        assert_eq!(
            plan.categories(gpu).unwrap(),
            cpu::categories(&want, net.n),
            "categories after layer {k} ({options:?})"
        );
        let got = plan.output(gpu).unwrap();
        for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
            let tol = 1e-5 * k as f64 * (1.0 + w.abs());
            assert!(
                (f64::from(g) - w).abs() <= tol,
                "after layer {k}, row {} neuron {}: GPU {g} twin {w} ({options:?})",
                e / net.n,
                e % net.n
            );
        }
        carried = plan.carried_rows(gpu).unwrap().expect("constant rows on");
        // Scalar rows off: none carried, no layer crossed as scalars.
        let on = options.scalar_rows;
        let want = predicted_carried(&cut, y0);
        assert_eq!(
            carried,
            want.iter()
                .map(|&c| if on { c } else { 0 })
                .collect::<Vec<_>>(),
            "rows carried per layer, {k} layers ({options:?})"
        );
        let flat: Vec<bool> = cut.layers.iter().map(|w| on && uniform(w)).collect();
        assert_eq!(plan.scalar_layers(), flat, "uniform layers");
    }
    carried
}

/// A layer whose every column has 32 entries of `w` (column sums 32·w).
fn even(n: usize, seed: u64, w: f32) -> Csr {
    by_columns(n, seed, |_| 32, |_, _| w)
}

/// Ten layers: generated (sums 2) at 0, 1, 3, 5, 7, 8; 32 × 1/128 (sums 1/4) at 2, 4, 9,
/// which kill the constant rows whose value is small; at 6 a layer whose columns have
/// 8..32 entries of 1/32 (sums vary: every scalar row rejoins before it, and the constant
/// rows stop being constant).
fn killing(n: usize, seed: u64) -> Network {
    let gen = data::generated_network(n, 6, -0.3, seed).unwrap().layers;
    let mut layers = vec![gen[0].clone(), gen[1].clone()];
    layers.push(even(n, seed + 1, 1.0 / 128.0));
    layers.push(gen[2].clone());
    layers.push(even(n, seed + 2, 1.0 / 128.0));
    layers.push(gen[3].clone());
    layers.push(by_columns(
        n,
        seed + 3,
        |j| 8 + (j * 7) % 25,
        |_, _| 1.0 / 32.0,
    ));
    layers.push(gen[4].clone());
    layers.push(gen[5].clone());
    layers.push(even(n, seed + 4, 1.0 / 128.0));
    Network::new(n, layers, -0.3).unwrap()
}

/// Inputs mixing dense constant rows c·1 (c in 0.375..3.375) and power-law binary rows;
/// a row whose survival through `net` is within 10⁻³ of flipping (the twin's margin: f32
/// could go either way) is left empty.
fn mixed_inputs(net: &Network, rows: usize, seed: u64) -> Csr {
    let n = net.n;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let binary = power_law_inputs(rows, n, seed + 1);
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    for i in 0..rows {
        if rng.random_bool(0.5) {
            // Quarter steps from 0.375: exact in f32 and never on a threshold.
            let c = 0.375 + 0.25 * rng.random_range(0..13) as f32;
            col_idx.extend(0..n as u32);
            values.extend(std::iter::repeat_n(c, n));
        } else {
            for e in binary.row_range(i) {
                col_idx.push(binary.col_idx[e]);
                values.push(1.0);
            }
        }
        row_ptr.push(col_idx.len() as u32);
    }
    let y0 = Csr::new(rows, n, row_ptr, col_idx, values).unwrap();
    let (_, margins) = cpu::infer_with_margins(net, &y0);
    let mut row_ptr = vec![0u32];
    let (mut col_idx, mut values) = (Vec::new(), Vec::new());
    for (i, &m) in margins.iter().enumerate() {
        if m >= 1e-3 {
            col_idx.extend(y0.row_range(i).map(|e| y0.col_idx[e]));
            values.extend(y0.row_range(i).map(|e| y0.values[e]));
        }
        row_ptr.push(col_idx.len() as u32);
    }
    Csr::new(rows, n, row_ptr, col_idx, values).unwrap()
}

#[test]
fn saturated_rows_are_carried_as_scalars_and_match_the_twin() {
    // Generated layers only (every column sum 2): dense rows reach 32·1 and are carried
    // to the end, rejoining after the last layer.
    let n = 64;
    let net = data::generated_network(n, 12, -0.3, 3).unwrap();
    let y0 = power_law_inputs(120, n, 4);
    for options in [sliced(64, 1, 1), sliced(32, 2, 2)] {
        let carried = check(&net, &y0, &options);
        assert!(carried[11] > 60, "{carried:?}");
        let gpu = common::gpu();
        let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
        plan.poison(gpu).unwrap();
        plan.run(gpu).unwrap();
        // Rows that never went through a tile after leaving read back as 32·1.
        let out = plan.output(gpu).unwrap();
        assert!(out.chunks(n).any(|r| r.iter().all(|&v| v == 32.0)));
        // The tiles run fall with the rows carried: fewer than with scalar rows off.
        let off = Plan::new(
            gpu,
            &net,
            &y0,
            &Options {
                scalar_rows: false,
                ..options.clone()
            },
        )
        .unwrap();
        off.run(gpu).unwrap();
        let run = |p: &Plan| -> u64 {
            p.fast_tiles(gpu)
                .unwrap()
                .unwrap()
                .iter()
                .map(|t| t[1])
                .sum()
        };
        assert!(run(&plan) < run(&off), "{} vs {}", run(&plan), run(&off));
        assert_eq!(off.carried_rows(gpu).unwrap().unwrap(), vec![0; 12]);
        assert_eq!(plan.categories(gpu).unwrap(), off.categories(gpu).unwrap());
    }
}

#[test]
fn rows_die_while_scalar_and_rejoin_before_a_layer_that_varies() {
    let n = 64;
    let net = killing(n, 7);
    let y0 = mixed_inputs(&net, 160, 8);
    for (options, pack) in [(sliced(64, 1, 1), true), (sliced(64, 1, 2), false)] {
        let options = Options {
            pack_uniform: pack,
            ..options
        };
        let carried = check(&net, &y0, &options);
        // Carried into layers 2..5, then rejoining before 6 (it varies); none into 6 or 7
        // (it follows 6).
        assert!(carried[2..6].iter().all(|&c| c > 0), "{carried:?}");
        assert_eq!(carried[6], 0, "{carried:?}");
        assert_eq!(carried[7], 0, "{carried:?}");
        // Rows died while scalar: fewer carried into layer 4 than into layer 3.
        assert!(carried[4] < carried[3], "{carried:?}");
        let want = cpu::categories(&cpu::infer(&net, &y0), n);
        assert!(!want.is_empty() && want.len() < y0.nrows);
    }
}

#[test]
fn several_chunks_and_blocks_carry_their_own_rows() {
    // N = 200 in blocks of 64 outputs (4 blocks): only block 0's tile appends a leaving
    // row; chunks of 37 rows each keep their own list.
    let n = 200;
    let net = killing(n, 11);
    let y0 = mixed_inputs(&net, 150, 12);
    let options = Options {
        chunk_rows: Some(37),
        ..sliced(32, 2, 1)
    };
    let plan = Plan::new(common::gpu(), &net, &y0, &options).unwrap();
    assert!(plan.chunks() > 1 && plan.tiling().unwrap().block() < n);
    let carried = check(&net, &y0, &options);
    assert!(carried[3] > 0 && carried[5] > 0, "{carried:?}");
}

#[test]
fn grouped_runs_and_reruns_carry_the_same_rows() {
    let n = 64;
    let net = killing(n, 21);
    let y0 = mixed_inputs(&net, 100, 22);
    let gpu = common::gpu();
    let options = Options {
        chunk_rows: Some(40),
        ..sliced(64, 1, 1)
    };
    let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
    plan.run(gpu).unwrap();
    let first = plan.carried_rows(gpu).unwrap().unwrap();
    let cats = plan.categories(gpu).unwrap();
    plan.run_grouped(gpu, 3, |_| {}).unwrap();
    assert_eq!(plan.carried_rows(gpu).unwrap().unwrap(), first);
    assert_eq!(plan.categories(gpu).unwrap(), cats);
    assert_eq!(first, predicted_carried(&net, &y0));
    // One rejoin after layer 5 (layer 6 varies) and one after the last, per chunk.
    let chunks = plan.chunks();
    let off = Plan::new(
        gpu,
        &net,
        &y0,
        &Options {
            scalar_rows: false,
            ..options
        },
    )
    .unwrap();
    assert_eq!(
        plan.dispatches(gpu).unwrap(),
        off.dispatches(gpu).unwrap() + 2 * chunks
    );
}

#[test]
fn cli_reports_scalar_rows_on_and_off() {
    let base = [
        "spdnn",
        "--neurons",
        "64",
        "--layers",
        "10",
        "--rows",
        "120",
        "--density",
        "0.6",
        "--reps",
        "1",
        "--check",
        "--json",
    ];
    let mut cats = Vec::new();
    for mode in ["on", "off"] {
        let (code, out, err) =
            common::wgsparse_exit(&[&base[..], &["--scalar-rows", mode]].concat());
        assert_eq!(code, 0, "{out}{err}");
        let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(v["ok"], true, "{out}");
        assert_eq!(v["scalar_rows"], mode == "on", "{out}");
        let carried: Vec<u64> =
            serde_json::from_value(v["carried_rows_per_layer"].clone()).unwrap();
        assert_eq!(carried.len(), 10);
        assert_eq!(carried.iter().sum::<u64>() > 0, mode == "on", "{out}");
        assert!(v["dispatches_per_layer"].as_f64().unwrap() >= 3.0, "{out}");
        cats.push(v["active_rows"].clone());
    }
    assert_eq!(cats[0], cats[1]);
    let (code, _, _) = common::wgsparse_exit(&[&base[..], &["--scalar-rows", "maybe"]].concat());
    assert_eq!(code, 2);
}

#[test]
fn chunks_of_several_scan_blocks_select_with_the_blocks_totals() {
    // 2,700 rows in chunks of 2,200 (three scan blocks: spdnn.select adds the totals of the
    // blocks before each slot itself) and 500 (one block), scalar rows on and off.
    let n = 64;
    let net = data::generated_network(n, 6, -0.3, 41).unwrap();
    let y0 = power_law_inputs(2700, n, 42);
    for scalar_rows in [true, false] {
        let options = Options {
            chunk_rows: Some(2200),
            scalar_rows,
            ..sliced(64, 1, 1)
        };
        let carried = check(&net, &y0, &options);
        assert_eq!(carried.iter().sum::<u64>() > 0, scalar_rows, "{carried:?}");
    }
}

#[test]
fn a_long_run_of_uniform_layers_carries_rows_to_the_end() {
    // 150 generated layers: rows are carried through ~140 layers, one spdnn.select each (no
    // kernel loops over layers, so no loop grows with the run; the totals loop of
    // spdnn.select is bounded by the scan blocks / 256). Checked after 20, 75 and 150.
    let n = 32;
    let net = data::generated_network(n, 150, -0.3, 51).unwrap();
    let y0 = power_law_inputs(90, n, 52);
    let carried = check_cuts(&net, &y0, &sliced(32, 1, 1), [20, 75, 150]);
    let alive = cpu::categories(&cpu::infer(&net, &y0), n).len() as u64;
    assert!(
        alive > 0 && carried[149] == alive,
        "{carried:?} ({alive} alive)"
    );
}

#[test]
fn slice_sums_carry_the_same_rows() {
    // Each slice's gathers summed in registers (`slice_sums`): the same twin, the same rows
    // carried, after every layer, at 1 and 4 row vectors.
    let n = 64;
    let net = killing(n, 51);
    let y0 = mixed_inputs(&net, 90, 52);
    for (t, rv) in [(1, 1), (2, 4)] {
        let options = Options {
            slice_sums: true,
            segments_together: false,
            chunk_rows: Some(50),
            ..sliced(32, t, rv)
        };
        let carried = check(&net, &y0, &options);
        assert!(carried.iter().sum::<u64>() > 0, "{carried:?}");
    }
}

#[test]
fn unrolled_staging_and_prefetched_bounds_carry_the_same_rows() {
    // Staging 4 columns a turn with the segment bounds prefetched, and 3 a turn with the
    // segments one after another: the same twin, the same rows carried, after every layer.
    let n = 64;
    let net = killing(n, 61);
    let y0 = mixed_inputs(&net, 90, 62);
    for (unroll, together, t, rv) in [(4, true, 2, 4), (3, false, 1, 1)] {
        let options = Options {
            stage_unroll: unroll,
            segments_together: together,
            prefetch_bounds: together,
            chunk_rows: Some(50),
            ..sliced(32, t, rv)
        };
        let carried = check(&net, &y0, &options);
        assert!(carried.iter().sum::<u64>() > 0, "{carried:?}");
    }
}

#[test]
fn layer_by_layer_runs_time_each_layer_and_match_the_twin() {
    // One submission per layer (the per-layer timing): every layer timed, and the run's
    // results those of a whole run (the twin's, rows carried as predicted), poisoned first.
    let n = 64;
    let net = killing(n, 31);
    let y0 = mixed_inputs(&net, 90, 32);
    let gpu = common::gpu();
    let options = Options {
        chunk_rows: Some(50),
        ..sliced(64, 1, 2)
    };
    let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
    plan.poison(gpu).unwrap();
    let times = plan.run_per_layer(gpu).unwrap();
    assert_eq!(times.len(), net.layers.len());
    assert!(
        times
            .iter()
            .all(|t| t.seconds.is_finite() && t.seconds > 0.0),
        "{times:?}"
    );
    let want = cpu::infer(&net, &y0);
    assert_eq!(plan.categories(gpu).unwrap(), cpu::categories(&want, n));
    let got = plan.output(gpu).unwrap();
    for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let tol = 1e-5 * net.layers.len() as f64 * (1.0 + w.abs());
        assert!(
            (f64::from(g) - w).abs() <= tol,
            "element {e}: GPU {g} twin {w}"
        );
    }
    assert_eq!(
        plan.carried_rows(gpu).unwrap().unwrap(),
        predicted_carried(&net, &y0)
    );
}

#[test]
fn cli_reports_layer_times_when_asked() {
    let base = [
        "spdnn",
        "--neurons",
        "64",
        "--layers",
        "7",
        "--rows",
        "80",
        "--density",
        "0.6",
        "--reps",
        "2",
        "--check",
        "--json",
    ];
    let (code, out, err) = common::wgsparse_exit(&[&base[..], &["--layer-times"]].concat());
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert_eq!(v["ok"], true, "{out}");
    let ms: Vec<f64> = serde_json::from_value(v["layer_ms"].clone()).unwrap();
    assert_eq!(ms.len(), 7, "{out}");
    assert!(ms.iter().all(|&m| m.is_finite() && m > 0.0), "{out}");
    assert!(v["layer_timing"].is_string(), "{out}");
    // Off by default.
    let (code, out, err) = common::wgsparse_exit(&base);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    assert!(v["layer_ms"].is_null(), "{out}");
}
