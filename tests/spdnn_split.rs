//! `wgsparse spdnn --first-row`: a run over input rows S .. S + R is one piece of the whole
//! run. Every path's categories of a piece equal the slice of the whole run's (no row's
//! result depends on which other rows share its batch, band or tile), the saved categories
//! are numbered in the whole input, and a range past an IDX file is refused before the
//! network is built.

mod common;

use std::path::{Path, PathBuf};

use wgsparse::spdnn::data;

fn cli(args: &[&str]) -> (i32, String, String) {
    common::wgsparse_exit(args)
}

fn json_lines(out: &str) -> Vec<serde_json::Value> {
    out.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// `count` 28×28 images with heavy-tailed pixels, each its own brightness (some too dark
/// to survive).
fn write_images(dir: &Path, count: usize) -> PathBuf {
    let pixels: Vec<u8> = (0..count * 28 * 28)
        .map(|i| {
            let h = wgsparse::gpu::shaders::pcg_hash(i as u32 ^ 0x2c9e);
            let brightness = ((i / (28 * 28)) * 7 % 10) as f64 / 9.0;
            (255.0 * brightness * ((h % 1000) as f64 / 1000.0).powi(3)) as u8
        })
        .collect();
    let idx = dir.join("images.idx");
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
    idx
}

const BASE: [&str; 14] = [
    "spdnn",
    "--neurons",
    "64",
    "--layers",
    "4",
    "--density",
    "0.3",
    "--reps",
    "0",
    "--thesis-reps",
    "0",
    "--json",
    "--tile-cols",
    "24",
];

#[test]
fn split_runs_equal_the_slice_of_the_whole_run_on_every_path() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.tsv");
    let whole_s = whole.to_str().unwrap();
    // The whole run, checked against the twin; its categories are the truth of the pieces.
    let (code, out, err) = cli(&[
        &BASE[..],
        &["--rows", "150", "--approach", "auto", "--check"],
        &["--save-categories", whole_s],
    ]
    .concat());
    assert_eq!(code, 0, "{out}{err}");
    let v = &json_lines(&out)[0];
    assert_eq!(v["first_row"], 0, "{v}");
    let active = v["active_rows"].as_u64().unwrap();
    assert!(active > 10 && active < 140, "{v}");
    // Pieces at cuts aligned to nothing (batches of 10% of a piece, 2D tiles of 4 rows,
    // DCSR lists and fast-path chunks all fall differently than in the whole run): both
    // fast paths and the thesis's three approaches at both tilings, each judged on the
    // truth's rows in its range.
    let mut saved = String::new();
    let mut piece_active = 0;
    for (first, rows) in [(0, 57), (57, 50), (107, 43)] {
        let (f, r) = (first.to_string(), rows.to_string());
        let piece = dir.path().join(format!("piece-{first}.tsv"));
        let (code, out, err) = cli(&[
            &BASE[..],
            &["--first-row", &f, "--rows", &r, "--approach", "all"],
            &["--categories", whole_s, "--save-categories"],
            &[piece.to_str().unwrap()],
        ]
        .concat());
        assert_eq!(code, 0, "{out}{err}");
        let lines = json_lines(&out);
        assert_eq!(lines.len(), 2 + 6, "{out}");
        for v in &lines {
            assert_eq!(v["ok"], true, "{v}");
            assert_eq!(v["first_row"], first, "{v}");
            assert_eq!(v["rows"], rows, "{v}");
            let check = v["check"].as_str().unwrap();
            assert!(check.starts_with("categories match (file)"), "{v}");
            assert_eq!(v["active_rows"], lines[0]["active_rows"], "{v}");
        }
        piece_active += lines[0]["active_rows"].as_u64().unwrap();
        saved += &std::fs::read_to_string(&piece).unwrap();
    }
    // The pieces' saved categories, numbered in the whole input, are the whole run's file.
    assert_eq!(piece_active, active);
    assert_eq!(saved, std::fs::read_to_string(&whole).unwrap());
    // A truth missing one active row of the middle piece: the mismatch names that row in
    // the whole input's numbering, and the pieces around it are not affected.
    let cats = data::read_categories(&whole, 150).unwrap();
    let gone = *cats.iter().find(|&&r| (57..107).contains(&r)).unwrap();
    let cut: Vec<u32> = cats.iter().copied().filter(|&r| r != gone).collect();
    let less = dir.path().join("less.tsv");
    data::write_categories(&less, &cut).unwrap();
    for (first, rows, ok) in [("57", "50", false), ("107", "43", true)] {
        let (code, out, err) = cli(&[
            &BASE[..],
            &[
                "--first-row",
                first,
                "--rows",
                rows,
                "--approach",
                "csr-csr",
            ],
            &["--tiling", "1d", "--categories", less.to_str().unwrap()],
        ]
        .concat());
        let v = &json_lines(&out)[0];
        assert_eq!(v["ok"], ok, "{out}{err}");
        assert_eq!(code, if ok { 0 } else { 1 }, "{out}{err}");
        if !ok {
            let want = format!("1 extra (first [{}])", gone + 1);
            assert!(v["check"].as_str().unwrap().contains(&want), "{v}");
        }
    }
}

#[test]
fn idx_pieces_match_and_a_range_past_the_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let idx = write_images(dir.path(), 60);
    let idx = idx.to_str().unwrap();
    let whole = dir.path().join("whole.tsv");
    let (code, out, err) = cli(&[
        &BASE[..],
        &["--rows", "60", "--input", idx, "--approach", "auto"],
        &["--check", "--save-categories", whole.to_str().unwrap()],
    ]
    .concat());
    assert_eq!(code, 0, "{out}{err}");
    let whole_active = json_lines(&out)[0]["active_rows"].as_u64().unwrap();
    assert!(whole_active > 0 && whole_active < 60, "{out}");
    // The last 25 images: each approach against the whole run's slice.
    let (code, out, err) = cli(&[
        &BASE[..],
        &["--first-row", "35", "--rows", "25", "--input", idx],
        &[
            "--approach",
            "auto-thesis",
            "--thesis-runs",
            "csr-ell:1d,csc-csc:2d",
        ],
        &["--categories", whole.to_str().unwrap()],
    ]
    .concat());
    assert_eq!(code, 0, "{out}{err}");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 3, "{out}");
    for v in &lines {
        assert_eq!(
            (v["ok"].as_bool(), v["first_row"].as_u64()),
            (Some(true), Some(35))
        );
    }
    // Rows 50 .. 70 of 60 images: refused, naming the file's count, before the network
    // is built (at 16,384 neurons × 1,920 layers its building alone would take minutes
    // and gigabytes).
    let started = std::time::Instant::now();
    let (code, out, err) = cli(&[
        "spdnn",
        "--neurons",
        "16384",
        "--layers",
        "1920",
        "--first-row",
        "50",
        "--rows",
        "20",
        "--input",
        idx,
        "--json",
    ]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(
        err.contains("input rows 50 .. 50 + 20 pass the IDX file's 60 images"),
        "{err}"
    );
    assert!(started.elapsed().as_secs() < 30, "{:?}", started.elapsed());
}

#[test]
fn categories_of_a_row_range_are_read_from_the_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("cats.tsv");
    std::fs::write(&p, "2\n9\n5\n\n7\n").unwrap();
    // Rows 4 .. 8 (0-based): file rows 5 and 7, numbered from row 4.
    assert_eq!(
        data::read_categories_range(&p, 10, 4..8).unwrap(),
        vec![0, 2]
    );
    assert_eq!(
        data::read_categories_range(&p, 10, 0..10).unwrap(),
        data::read_categories(&p, 10).unwrap()
    );
    // A row past the whole input is an error naming the line, even outside the range.
    let e = data::read_categories_range(&p, 8, 0..4)
        .unwrap_err()
        .to_string();
    assert!(e.contains("cats.tsv:2") && e.contains("1..=8"), "{e}");
}
