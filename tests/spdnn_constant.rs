//! Sparse DNN, sliced ELL with constant rows: a tile whose input rows are each one value c
//! takes the fast path (c·colsum(W), no gather). Against the f64 CPU twin with the
//! activations poisoned: categories exactly, final activations to f32 tolerance, and the
//! number of fast tiles per layer exactly as the twin predicts (its rows in the active
//! list's order, tiles of R rows, every block of outputs). Networks that saturate (rows
//! reach 32·1), that do not, whose tiles mix constant and other rows, whose rows are
//! constant within each block of outputs but not across blocks, on and off.

mod common;

use common::spdnn::{by_columns, power_law_inputs};
use wgsparse::sparse::Csr;
use wgsparse::spdnn::{cpu, data, Approach, Network, Options, Plan};

/// A network that saturates and leaves it (13 layers): 7 generated layers (32 of 1/16 per
/// column) take dense rows to 32·1; layer 7 (32 × 1/64 per column) makes them 15.7·1;
/// layer 8, whose columns have 8..32 entries of one value (random values with `random`),
/// makes them vary; 3 generated layers saturate them again, and the last layer (as layer
/// 8) makes them vary, so the final activations depend on every column sum.
fn saturating(n: usize, random: bool, seed: u64) -> Network {
    let gen = data::generated_network(n, 10, -0.3, seed).unwrap().layers;
    let varied = |s: u64, w: f32| {
        by_columns(
            n,
            s,
            |j| 8 + (j * 7) % 25,
            |j, e| {
                if random {
                    w * (0.5 + ((j * 31 + e * 17) % 13) as f32 / 12.0)
                } else {
                    w
                }
            },
        )
    };
    let mut layers: Vec<Csr> = gen[..7].to_vec();
    layers.push(by_columns(n, seed + 100, |_| 32, |_, _| 1.0 / 64.0));
    layers.push(varied(seed + 101, 1.0 / 32.0));
    layers.extend_from_slice(&gen[7..10]);
    layers.push(varied(seed + 102, 1.0 / 64.0));
    Network::new(n, layers, -0.3).unwrap()
}

/// What the twin predicts for each layer: `[fast tiles, tiles run, unwritten tiles]` over
/// every chunk, a chunk's active rows in id order in tiles of `r` rows, each tile over
/// `blocks` blocks of outputs; a tile is fast when every row's input is one nonzero value
/// (never at layer 0), and writes nothing when every row's output is one value too (the
/// tests' weights are all positive, so every layer allows it).
fn predicted_tiles(net: &Network, y0: &Csr, r: usize, blocks: u64, chunk: usize) -> Vec<[u64; 3]> {
    let n = net.n;
    let bias = f64::from(net.bias);
    let mut rows: Vec<Vec<f64>> = (0..y0.nrows)
        .map(|i| {
            let mut y = vec![0.0; n];
            for e in y0.row_range(i) {
                y[y0.col_idx[e] as usize] = f64::from(y0.values[e]);
            }
            y
        })
        .collect();
    let mut out = Vec::new();
    let constant = |y: &[f64]| y.iter().all(|&v| v == y[0]);
    for (l, w) in net.layers.iter().enumerate() {
        let next: Vec<Vec<f64>> = rows
            .iter()
            .map(|y| {
                if y.iter().any(|&v| v != 0.0) {
                    cpu::layer(y, w, bias)
                } else {
                    y.clone()
                }
            })
            .collect();
        let (mut fast, mut run, mut unwritten) = (0u64, 0u64, 0u64);
        for start in (0..y0.nrows).step_by(chunk) {
            let end = (start + chunk).min(y0.nrows);
            // Layer 0 runs every row; later layers the rows still alive.
            let active: Vec<usize> = (start..end)
                .filter(|&i| l == 0 || rows[i].iter().any(|&v| v != 0.0))
                .collect();
            for tile in active.chunks(r) {
                run += blocks;
                if l > 0
                    && tile
                        .iter()
                        .all(|&i| rows[i][0] != 0.0 && constant(&rows[i]))
                {
                    fast += blocks;
                    if tile.iter().all(|&i| constant(&next[i])) {
                        unwritten += blocks;
                    }
                }
            }
        }
        out.push([fast, run, unwritten]);
        rows = next;
    }
    out
}

/// Runs `net` on `y0` with `options` (activations poisoned first), checks the categories
/// exactly and the final activations to f32 tolerance against the twin, and the fast tiles
/// against the twin's prediction; returns the plan's fast tiles per layer.
fn check(net: &Network, y0: &Csr, options: &Options) -> Vec<[u64; 3]> {
    let gpu = common::gpu();
    let plan = Plan::new(gpu, net, y0, options).unwrap();
    plan.poison(gpu).unwrap();
    plan.run(gpu).unwrap();
    let want = cpu::infer(net, y0);
    assert_eq!(
        plan.categories(gpu).unwrap(),
        cpu::categories(&want, net.n),
        "categories differ ({options:?})"
    );
    let got = plan.output(gpu).unwrap();
    let layers = net.layers.len() as f64;
    for (e, (&g, &w)) in got.iter().zip(&want).enumerate() {
        let tol = 1e-5 * layers * (1.0 + w.abs());
        assert!(
            (f64::from(g) - w).abs() <= tol,
            "row {} neuron {}: GPU {g} twin {w} ({options:?})",
            e / net.n,
            e % net.n
        );
    }
    let tiles = plan.fast_tiles(gpu).unwrap().expect("constant rows are on");
    let t = plan.tiling().unwrap();
    let blocks = net.n.div_ceil(t.block()) as u64;
    let chunk = options
        .chunk_rows
        .unwrap_or(usize::MAX)
        .min(y0.nrows.max(1));
    assert_eq!(
        tiles,
        predicted_tiles(net, y0, t.rows(), blocks, chunk),
        "fast tiles per layer ({options:?})"
    );
    tiles
}

/// The constant-row path alone: scalar rows off, so every live row stays in the tiles the
/// prediction counts (tests/spdnn_scalar.rs covers scalar rows).
fn sliced(wg: u32, t: u32, rv: u32) -> Options {
    Options {
        approach: Approach::SlicedEll,
        workgroup: Some(wg),
        outputs_per_invocation: t,
        row_vecs: rv,
        scalar_rows: false,
        ..Options::default()
    }
}

/// Total fast tiles, tiles run and unwritten tiles.
fn total(tiles: &[[u64; 3]]) -> [u64; 3] {
    tiles
        .iter()
        .fold([0; 3], |a, l| [a[0] + l[0], a[1] + l[1], a[2] + l[2]])
}

#[test]
fn saturating_networks_take_the_fast_path_and_match_the_twin() {
    let n = 64;
    let y0 = power_law_inputs(200, n, 1);
    let gpu = common::gpu();
    for (random, pack_uniform) in [(false, true), (false, false), (true, true)] {
        let net = saturating(n, random, 2);
        let options = Options {
            pack_uniform,
            ..sliced(64, 1, 1)
        };
        let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
        assert_eq!(plan.packed(), pack_uniform && !random);
        let tiles = check(&net, &y0, &options);
        let [fast, run, unwritten] = total(&tiles);
        // The fast path was taken, including at the layers whose column sums vary (8, the
        // last), and not everywhere (mixed tiles and layer 0 gather); where the column sums
        // are all equal (the generated layers, layer 7) fast tiles wrote nothing.
        assert!(fast > 0 && fast < run, "{tiles:?}");
        assert!(
            unwritten > 0 && tiles[7][2] > 0 && tiles[8][2] == 0,
            "{tiles:?}"
        );
        assert!(tiles[8][0] > 0 && tiles[12][0] > 0, "{tiles:?}");
        // The final activations are not only 0 and 32: a wrong column sum shows.
        plan.run(gpu).unwrap();
        let out = plan.output(gpu).unwrap();
        assert!(out.iter().any(|&v| v > 0.0 && v < 32.0), "{random}");
        // Some rows die, some survive.
        let cats = plan.categories(gpu).unwrap();
        assert!(!cats.is_empty() && cats.len() < y0.nrows);
    }
}

#[test]
fn unwritten_rows_of_the_last_layer_are_read_back() {
    // Generated layers only (every column sum 2): saturated rows stay 32·1 unwritten to the
    // end, so the final activations of those rows come from their constancy words.
    let n = 64;
    let net = data::generated_network(n, 14, -0.3, 3).unwrap();
    let y0 = power_law_inputs(120, n, 4);
    let tiles = check(&net, &y0, &sliced(64, 1, 1));
    assert!(tiles[13][2] > 0, "{tiles:?}");
    let gpu = common::gpu();
    let plan = Plan::new(gpu, &net, &y0, &sliced(64, 1, 1)).unwrap();
    plan.poison(gpu).unwrap();
    plan.run(gpu).unwrap();
    let out = plan.output(gpu).unwrap();
    assert!(out.chunks(n).any(|r| r.iter().all(|&v| v == 32.0)));
}

#[test]
fn networks_that_do_not_saturate_match_the_twin() {
    // Random weights at a survival threshold: rows vary across columns, so the fast path is
    // rare or never taken; the result must not change.
    let n = 128;
    let mut net = data::generated_network(n, 8, -0.35, 9).unwrap();
    for (l, w) in net.layers.iter_mut().enumerate() {
        for (e, v) in w.values.iter_mut().enumerate() {
            *v = 0.02 + ((e * 37 + l * 11) % 17) as f32 / 160.0;
        }
    }
    let y0 = data::random_inputs(250, n, 0.2, 4).unwrap();
    let tiles = check(&net, &y0, &sliced(64, 2, 1));
    let [fast, run, _] = total(&tiles);
    assert!(fast * 10 <= run, "{tiles:?}");
    let want = cpu::categories(&cpu::infer(&net, &y0), n);
    assert!(!want.is_empty() && want.len() < y0.nrows);
}

#[test]
fn tiles_mixing_constant_and_other_rows_gather() {
    // Power-law inputs: in the layers where some rows are 32·1 and others not yet, a tile
    // with any non-constant row must gather (the prediction counts only all-constant tiles).
    // Its constant rows' activations may be unwritten: staged as c, also when the staging
    // is unrolled (a select, no branch per row) and with prefetched segment bounds.
    let n = 64;
    let net = saturating(n, true, 5);
    let y0 = power_law_inputs(203, n, 6);
    // The last: a workgroup of 8 invocations over 16 rows (each checks two rows' inputs).
    let tilings = [
        sliced(64, 1, 1),
        sliced(32, 2, 2),
        sliced(64, 1, 4),
        sliced(8, 2, 4),
    ];
    let switched = |o: &Options, unroll, together| Options {
        stage_unroll: unroll,
        segments_together: together,
        prefetch_bounds: together,
        ..o.clone()
    };
    let switches = tilings
        .iter()
        .flat_map(|o| [switched(o, 4, true), switched(o, 3, false)]);
    for options in tilings.iter().cloned().chain(switches) {
        let tiles = check(&net, &y0, &options);
        // Some layer has both fast and gathered tiles after layer 0.
        assert!(
            tiles[1..].iter().any(|&[f, r, _]| f > 0 && f < r),
            "{tiles:?} ({options:?})"
        );
    }
}

/// [`saturating`]'s 7 generated layers, then layer 7 whose columns in each block of 64
/// outputs sum to another value (32 × 1/64 or 2/64): 32·1 becomes 15.7 in even blocks and
/// 31.7 in odd ones, constant within every block but not across them; 2 generated layers
/// (32·1 again), then the rest of [`saturating`].
fn blockwise(n: usize, seed: u64) -> Network {
    let mut net = saturating(n, false, seed);
    let gen = data::generated_network(n, 2, -0.3, seed + 50)
        .unwrap()
        .layers;
    let split = by_columns(
        n,
        seed + 200,
        |_| 32,
        |j, _| (1 + (j / 64) % 2) as f32 / 64.0,
    );
    let tail = net.layers.split_off(7);
    net.layers.push(split);
    net.layers.extend(gen);
    net.layers.extend(tail);
    Network::new(n, net.layers, net.bias).unwrap()
}

#[test]
fn rows_spanning_several_blocks_combine_across_workgroups() {
    // N = 300 in blocks of 64 outputs (5 blocks, the last of 44): after the blockwise layer
    // each block of a row sees one value, so only the cross-workgroup min/max tells the
    // row is not constant; a wrong verdict takes the fast path with a wrong c.
    let n = 300;
    let net = blockwise(n, 11);
    let y0 = power_law_inputs(150, n, 12);
    for (options, chunk) in [
        (sliced(32, 2, 1), None),
        (sliced(32, 2, 2), Some(70usize)),
        (sliced(64, 1, 1), None),
    ] {
        let options = Options {
            chunk_rows: chunk,
            ..options
        };
        let plan = Plan::new(common::gpu(), &net, &y0, &options).unwrap();
        assert!(plan.tiling().unwrap().block() < n);
        let tiles = check(&net, &y0, &options);
        // The layer after the blockwise one (8) gathers everything; later layers have
        // constant rows again (the prediction holds the exact counts).
        assert_eq!(tiles[8][0], 0, "{tiles:?}");
        assert!(tiles[7][0] > 0 && total(&tiles[9..])[0] > 0, "{tiles:?}");
    }
}

#[test]
fn on_and_off_give_the_same_categories() {
    let gpu = common::gpu();
    for (net, y0, base) in [
        (
            saturating(64, true, 21),
            power_law_inputs(180, 64, 22),
            sliced(64, 1, 1),
        ),
        (
            blockwise(300, 23),
            power_law_inputs(120, 300, 24),
            sliced(32, 2, 2),
        ),
    ] {
        let mut outs = Vec::new();
        for constant_rows in [true, false] {
            let options = Options {
                constant_rows,
                ..base.clone()
            };
            let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
            assert_eq!(plan.constant_rows(), constant_rows);
            plan.poison(gpu).unwrap();
            plan.run(gpu).unwrap();
            let tiles = plan.fast_tiles(gpu).unwrap();
            assert_eq!(tiles.is_some(), constant_rows);
            if let Some(t) = tiles {
                assert!(total(&t)[0] > 0, "{t:?}");
            }
            outs.push((plan.categories(gpu).unwrap(), plan.output(gpu).unwrap()));
        }
        assert_eq!(outs[0].0, outs[1].0, "categories on / off");
        assert!(!outs[0].0.is_empty() && outs[0].0.len() < y0.nrows);
        let layers = net.layers.len() as f32;
        for (a, b) in outs[0].1.iter().zip(&outs[1].1) {
            assert!(
                (a - b).abs() <= 1e-5 * layers * (1.0 + b.abs()),
                "{a} vs {b}"
            );
        }
    }
}

#[test]
fn a_second_run_counts_afresh() {
    // The counters are cleared by each run (the first chunk's reset), not accumulated.
    let n = 64;
    let net = saturating(n, false, 31);
    let y0 = power_law_inputs(100, n, 32);
    let options = Options {
        chunk_rows: Some(40),
        ..sliced(64, 1, 1)
    };
    let gpu = common::gpu();
    let plan = Plan::new(gpu, &net, &y0, &options).unwrap();
    plan.run(gpu).unwrap();
    let first = plan.fast_tiles(gpu).unwrap().unwrap();
    plan.run_grouped(gpu, 4, |_| {}).unwrap();
    assert_eq!(plan.fast_tiles(gpu).unwrap().unwrap(), first);
    assert_eq!(first, predicted_tiles(&net, &y0, 4, 1, 40));
}

/// (exit code, stdout followed by stderr).
fn cli(args: &[&str]) -> (i32, String) {
    let (code, stdout, stderr) = common::wgsparse_exit(args);
    (code, stdout + &stderr)
}

#[test]
fn cli_reports_fast_tiles_and_turns_them_off() {
    // Dense random inputs through generated layers: rows saturate at 32·1 within a few
    // layers, so most tiles of the later layers take the fast path.
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
        "--scalar-rows",
        "off",
    ];
    let mut cats = Vec::new();
    for mode in ["on", "off"] {
        let (code, out) = cli(&[&base[..], &["--constant-rows", mode]].concat());
        assert_eq!(code, 0, "{out}");
        let v: serde_json::Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert_eq!(v["ok"], true, "{out}");
        if mode == "on" {
            let fast = v["fast_tiles"].as_u64().unwrap();
            let tiles = v["tiles"].as_u64().unwrap();
            assert!(fast > 0 && fast < tiles, "{out}");
            let per: Vec<u64> = serde_json::from_value(v["fast_tiles_per_layer"].clone()).unwrap();
            assert_eq!(per.len(), 10);
            assert_eq!(per.iter().sum::<u64>(), fast);
            assert_eq!(per[0], 0);
        } else {
            assert!(v["fast_tiles"].is_null(), "{out}");
        }
        cats.push(v["active_rows"].clone());
    }
    assert_eq!(cats[0], cats[1]);
    let (code, out) = cli(&[&base[..], &["--constant-rows", "maybe"]].concat());
    assert_eq!(code, 2, "{out}");
}
