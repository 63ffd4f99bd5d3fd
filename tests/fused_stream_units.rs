//! The stream kernel's unit tiles (`Options::unit_tiles`): tiles cut for a unit of lanes
//! within a subgroup and taken with no barrier, each unit's row sums chained and their scales
//! broadcast by shuffles. Against the f64 twin (w poisoned) for every pattern: units of 2 and
//! 4 lanes (several a subgroup) and of the least subgroup size, 4 or 8 entries per lane, rows
//! spanning a unit's lanes, one-entry and empty rows, rows longer than a tile (taken whole by
//! the workgroup), copies of w with compare-exchange adds, 16-bit keys and y in workgroup
//! memory; without subgroups, with fixed-point sums, the next tile's loads or a cap on a
//! tile's rows, and with a bad count of lanes, it is refused by name (library and CLI). The
//! tuner times unit tiles on its stream finalists, and a caller's choice stands.

mod common;

use common::fused::{check, refused, rows_of, sparse_x, stream_cli_refuses, with_hot_columns};
use wgsparse::fused::{tune, Atomics, Matrix, Options, Pattern, UnitTiles, Variant};
use wgsparse::sparse::Csr;
use wgsparse::Gpu;

fn units(unit_tiles: UnitTiles, epl: u32) -> Options {
    Options {
        variant: Variant::Stream,
        workgroup: Some(64),
        epl: Some(epl),
        unit_tiles,
        ..Default::default()
    }
}

/// Every pattern against the twin; the plan's unit is `lanes` and its tile `lanes · epl`.
fn every_pattern(gpu: &Gpu, x: &Csr, o: &Options, lanes: u32, seed: u64) {
    for p in Pattern::ALL {
        let (_, plan) = check(gpu, Matrix::Sparse(x), o, p, seed);
        let c = plan.config;
        assert_eq!(c.variant, Variant::Stream, "{}", c.describe());
        assert_eq!(c.unit, lanes, "{}", c.describe());
        assert_eq!(c.tile, lanes * o.epl.unwrap(), "{}", c.describe());
        assert!(c.describe().contains(&format!("unit={lanes}")));
    }
}

#[test]
fn unit_tiles_equal_the_twin() {
    let gpu = common::gpu();
    assert!(
        gpu.caps.subgroups,
        "the test adapter has subgroup operations"
    );
    let sg = gpu.caps.subgroup_min_size;
    // Rows of 0 to 70 entries in turn: empty and one-entry rows, rows over many lanes of a
    // unit, and rows longer than the smaller tiles (long rows, taken by the workgroup).
    let lens = rows_of(700, 300, &[3, 0, 1, 9, 17, 2, 40, 0, 5, 70, 1, 12], 181);
    let power = with_hot_columns(&sparse_x(1_100, 260, 9_000, 182), &[4, 200], 183);
    for (unit_tiles, lanes) in [
        (UnitTiles::Lanes(2), 2),
        (UnitTiles::Lanes(4), 4),
        (UnitTiles::Subgroup, sg),
    ] {
        for epl in [4, 8] {
            let o = units(unit_tiles, epl);
            every_pattern(gpu, &lens, &o, lanes, 184);
            every_pattern(gpu, &power, &o, lanes, 185);
        }
    }
}

#[test]
fn unit_tiles_with_copies_cas_16_bit_keys_and_shared_y() {
    let gpu = common::gpu();
    let x = with_hot_columns(&sparse_x(900, 120, 7_000, 191), &[7, 90], 192);
    let variants = [
        Options {
            wg_copies: Some(4),
            wg_atomics: Atomics::Cas,
            ..units(UnitTiles::Lanes(4), 4)
        },
        Options {
            key16: Some(true),
            y_shared: Some(true),
            ..units(UnitTiles::Subgroup, 8)
        },
        Options {
            workgroup: Some(256),
            long_row: Some(6),
            ..units(UnitTiles::Lanes(2), 8)
        },
    ];
    for o in variants {
        let lanes = match o.unit_tiles {
            UnitTiles::Lanes(k) => k,
            _ => gpu.caps.subgroup_min_size,
        };
        every_pattern(gpu, &x, &o, lanes, 193);
    }
}

#[test]
fn unit_tiles_are_refused_where_they_do_not_apply() {
    let x = sparse_x(500, 80, 3_000, 201);
    let gpu = common::gpu();
    let sg = gpu.caps.subgroup_min_size;
    let on = units(UnitTiles::Subgroup, 4);
    refused(common::gpu_plain(), &x, &on, "need subgroup operations");
    for (o, says) in [
        (
            Options {
                wg_fixed: Some(true),
                ..on.clone()
            },
            "fixed-point sums",
        ),
        (
            Options {
                prefetch: true,
                ..on.clone()
            },
            "--prefetch",
        ),
        (
            Options {
                row_tile: Some(64),
                ..on.clone()
            },
            "--row-tile",
        ),
        (units(UnitTiles::Lanes(3), 4), "power of two"),
        (units(UnitTiles::Lanes(2 * sg), 4), "power of two"),
        (units(UnitTiles::Lanes(1), 4), "power of two"),
    ] {
        refused(gpu, &x, &o, says);
    }
    stream_cli_refuses("--unit-tiles", "3", "power of two");
    let (code, _, err) = common::wgsparse_exit(&["fused", "--gen", "demo", "--unit-tiles", "x"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("expected off, on or a count of lanes"),
        "{err}"
    );
}

/// Revision 20: where a stream finalist is left, the tuner times it with unit tiles of 4 and 8
/// entries a lane (also with 16-bit keys), and the fastest of those at five grids or more;
/// its pick equals the twin.
/// Unit tiles fixed by the caller stay in every candidate and in the pick.
#[test]
fn the_tuner_times_unit_tiles_and_keeps_the_callers() {
    let gpu = common::gpu();
    let x = sparse_x(3_000, 256, 24_000, 211);
    let auto = Options {
        variant: Variant::Auto,
        ..Default::default()
    };
    let (plan, timed) = tune::tune(gpu, Matrix::Sparse(&x), &auto).unwrap();
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &plan, 212);
    let unit: Vec<_> = timed
        .iter()
        .filter(|t| t.unit_tiles == UnitTiles::Subgroup)
        .collect();
    if timed.iter().any(|t| t.variant == Variant::Stream) {
        for epl in [4, 8] {
            assert!(
                unit.iter().any(|t| t.epl == Some(epl)),
                "unit tiles of {epl} entries a lane never timed"
            );
        }
        assert!(
            unit.iter().any(|t| t.key16 == Some(true)),
            "unit tiles never timed with 16-bit keys"
        );
        assert!(
            common::fused::timed_at_grids(unit.iter().copied(), 5),
            "unit tiles timed at fewer than five grids on any layout"
        );
    }
    let fixed = Options {
        unit_tiles: UnitTiles::Lanes(4),
        ..auto
    };
    let (plan, timed) = tune::tune(gpu, Matrix::Sparse(&x), &fixed).unwrap();
    common::fused::check_plan(gpu, Matrix::Sparse(&x), &plan, 213);
    assert!(timed.iter().all(|t| t.unit_tiles == UnitTiles::Lanes(4)));
    if plan.config.variant == Variant::Stream {
        assert_eq!(plan.config.unit, 4, "{}", plan.config.describe());
    }
}
