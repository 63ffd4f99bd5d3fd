//! Malformed input for every reader of `wgsparse::io`: each must fail with `Error::Parse`
//! whose message names the file and the right line (`file:line:`), never panic.

use std::fmt::Debug;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use wgsparse::io::*;
use wgsparse::Error;

struct Dir(tempfile::TempDir);

impl Dir {
    fn new() -> Self {
        Dir(tempfile::tempdir().expect("temp dir"))
    }

    fn file(&self, name: &str, contents: &[u8]) -> PathBuf {
        let p = self.0.path().join(name);
        std::fs::write(&p, contents).expect("write test file");
        p
    }
}

/// Asserts a parse error at `path:line:` whose message contains `needle` (case-insensitive).
#[track_caller]
fn expect_parse<T: Debug>(r: wgsparse::Result<T>, path: &Path, line: u64, needle: &str) {
    let e = r.expect_err("malformed input must fail");
    assert!(matches!(e, Error::Parse { .. }), "not a parse error: {e:?}");
    let text = e.to_string();
    let at = format!("{}:{line}:", path.display());
    assert!(text.starts_with(&at), "expected {at} in: {text}");
    assert!(
        text.to_lowercase().contains(&needle.to_lowercase()),
        "expected {needle:?} in: {text}"
    );
}

const MM: &str = "%%MatrixMarket matrix coordinate real general\n";

#[test]
fn matrix_market() {
    let d = Dir::new();
    let cases: &[(&str, u64, &str)] = &[
        ("", 1, "empty"),
        ("3 3 1\n1 1 1\n", 1, "missing header"),
        ("% just a comment\n", 1, "missing header"),
        ("%%MatrixMarket matrix coordinate real\n1 1 0\n", 1, "5"),
        (
            "%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n",
            1,
            "array",
        ),
        (
            "%%MatrixMarket matrix coordinate complex general\n1 1 0\n",
            1,
            "complex",
        ),
        (
            "%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n",
            1,
            "hermitian",
        ),
        (
            "%%MatrixMarket vector coordinate real general\n1 1 0\n",
            1,
            "matrix",
        ),
        (
            "%%MatrixMarket matrix coordinate float general\n1 1 0\n",
            1,
            "field",
        ),
        (
            "%%MatrixMarket matrix coordinate real upper\n1 1 0\n",
            1,
            "symmetry",
        ),
        (&format!("{MM}% c\n"), 3, "size line"),
        (&format!("{MM}% c\n3 3\n"), 3, "size line"),
        (&format!("{MM}3 3 1 1\n"), 2, "size line"),
        (&format!("{MM}3 x 1\n"), 2, "\"x\""),
        (&format!("{MM}3 3 -1\n"), 2, "\"-1\""),
        (&format!("{MM}99999999999 3 1\n"), 2, "u32"),
        (&format!("{MM}3 3 2\n1 1 1\n2 2\n"), 4, "expected 3 fields"),
        (&format!("{MM}3 3 2\n1 1 1\n2 2 2 2\n"), 4, "found 4"),
        (&format!("{MM}3 3 1\n1 2 abc\n"), 3, "not a number"),
        (&format!("{MM}3 3 1\na 2 1\n"), 3, "row index \"a\""),
        (&format!("{MM}3 3 1\n1 2.0 1\n"), 3, "column index"),
        (
            &format!("{MM}3 3 1\n0 2 1\n"),
            3,
            "row index 0 is out of range",
        ),
        (&format!("{MM}3 3 1\n1 0 1\n"), 3, "column index 0"),
        (
            &format!("{MM}3 3 1\n4 1 1\n"),
            3,
            "row index 4 is out of range 1..=3",
        ),
        (&format!("{MM}3 2 1\n1 3 1\n"), 3, "column index 3"),
        (&format!("{MM}3 3 2\n1 1 1\n2 2 nan\n"), 4, "not finite"),
        (&format!("{MM}3 3 1\n1 1 Inf\n"), 3, "not finite"),
        (&format!("{MM}3 3 1\n1 1 1e39\n"), 3, "not finite"),
        (&format!("{MM}3 3 3\n1 1 1\n% c\n2 2 2\n"), 6, "2 of the 3"),
        (&format!("{MM}3 3 1\n"), 3, "0 of the 1"),
        (&format!("{MM}3 3 1\n1 1 1\n\n2 2 2\n"), 5, "more entries"),
        (
            "%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n",
            2,
            "square",
        ),
        (
            "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 1\n",
            3,
            "diagonal",
        ),
        (
            "%%MatrixMarket matrix coordinate pattern general\n2 2 1\n1 1 1\n",
            3,
            "expected 2 fields",
        ),
    ];
    for (k, &(text, line, needle)) in cases.iter().enumerate() {
        let p = d.file(&format!("case{k}.mtx"), text.as_bytes());
        expect_parse(read_matrix_market(&p), &p, line, needle);
        expect_parse(read_matrix_market_coo(&p), &p, line, needle);
        let name = Path::new("stream.mtx");
        let r = read_matrix_market_from(Cursor::new(text.as_bytes()), name);
        expect_parse(r, name, line, needle);
    }
    // Invalid UTF-8 in a field is reported, not a panic.
    let p = d.file(
        "utf8.mtx",
        b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 \xff\n",
    );
    expect_parse(read_matrix_market(&p), &p, 3, "not a number");
}

#[test]
fn matrix_market_missing_file_is_io() {
    let d = Dir::new();
    let e = read_matrix_market(d.0.path().join("nope.mtx")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("nope.mtx"));
}

#[test]
fn libsvm() {
    let d = Dir::new();
    let cases: &[(&str, u64, &str)] = &[
        ("", 1, "no samples"),
        ("# only a comment\n\n", 3, "no samples"),
        ("1 1:1\nabc 2:1\n", 2, "label \"abc\""),
        ("1 1:1\nnan 2:1\n", 2, "not finite"),
        ("1 1:1\n1 2\n", 2, "index:value"),
        ("1 1:1\n1 x:1\n", 2, "feature index \"x\""),
        ("1 1:1\n1 -3:1\n", 2, "feature index \"-3\""),
        ("1 1:1\n1 2:inf\n", 2, "not finite"),
        ("1 1:1\n1 2:\n", 2, "not a number"),
        ("1 1:1\n1 2:zz\n", 2, "not a number"),
        ("1 1:1\n\n1 3:1 1:1 3:2\n", 3, "duplicate feature index 3"),
        ("1 1:1 1:2\n", 1, "duplicate"),
        ("1 99999999999:1\n", 1, "u32"),
    ];
    for (k, &(text, line, needle)) in cases.iter().enumerate() {
        let p = d.file(&format!("case{k}.svm"), text.as_bytes());
        expect_parse(read_libsvm(&p), &p, line, needle);
    }
    // Explicit feature count: an index beyond it names its line.
    let p = d.file("n.svm", b"1 1:1 4:1\n-1 5:1\n");
    expect_parse(
        read_libsvm_with(&p, Some(4)),
        &p,
        2,
        "out of range for 4 features",
    );
    assert_eq!(read_libsvm_with(&p, Some(5)).unwrap().features.ncols, 5);
    // 0-based (index 0 on line 3): index 4 on line 2 no longer fits 4 features.
    let p = d.file("z.svm", b"1 1:1\n-1 4:1\n1 0:1\n");
    expect_parse(read_libsvm_with(&p, Some(4)), &p, 2, "0-based");
    assert_eq!(read_libsvm_with(&p, Some(5)).unwrap().features.ncols, 5);
}

#[test]
fn ratings_text() {
    let d = Dir::new();
    let cases: &[(&str, u64, &str)] = &[
        ("", 1, "no ratings"),
        ("user item rating\n", 2, "no ratings"),
        ("u1 i1\n", 1, "expected 3 or 4 fields"),
        ("u1 i1 1\nu2 i2\n", 2, "found 2"),
        ("u1,i1,1,5,extra\n", 1, "found 5"),
        ("u1 i1 1\nu2 i2 x\n", 2, "rating \"x\""),
        ("user item rating\nu2 i2 rating\n", 2, "not a number"),
        ("u1 i1 1\nu2 i2 NaN\n", 2, "not finite"),
        ("u1 i1 nan\n", 1, "not finite"),
        ("u1 i1 1\n\n# c\nu2 i2 -inf 7\n", 4, "not finite"),
    ];
    for (k, &(text, line, needle)) in cases.iter().enumerate() {
        let p = d.file(&format!("case{k}.csv"), text.as_bytes());
        let mut ids = IdMap::new();
        expect_parse(read_ratings(&p, &mut ids), &p, line, needle);
    }
    let p = d.file("utf8.tsv", b"u1\ti1\t1\n\xffu\ti\t2\n");
    expect_parse(read_ratings(&p, &mut IdMap::new()), &p, 2, "UTF-8");
}

fn record(u: i32, i: i32, r: f32) -> Vec<u8> {
    [u.to_le_bytes(), i.to_le_bytes(), r.to_le_bytes()].concat()
}

#[test]
fn ratings_binary() {
    let d = Dir::new();
    let good = [record(0, 1, 2.0), record(3, 2, 1.0)].concat();
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "empty"),
        (
            good[..23].to_vec(),
            "record 1 at byte offset 12 is truncated",
        ),
        (good[..5].to_vec(), "record 0 at byte offset 0 is truncated"),
        ([good.clone(), vec![0]].concat(), "multiple of 12"),
        (
            [good.clone(), record(-1, 0, 1.0)].concat(),
            "record 2 (byte offset 24): negative",
        ),
        ([good.clone(), record(0, -5, 1.0)].concat(), "negative"),
        (
            [record(0, 0, f32::NAN), good.clone()].concat(),
            "record 0 (byte offset 0): rating NaN",
        ),
        (
            [good.clone(), record(1, 1, f32::INFINITY)].concat(),
            "not finite",
        ),
    ];
    for (k, (bytes, needle)) in cases.iter().enumerate() {
        let p = d.file(&format!("case{k}.bin"), bytes);
        expect_parse(read_ratings_binary(&p), &p, 0, needle);
    }
    let p = d.file("good.bin", &good);
    let r = read_ratings_binary(&p).unwrap();
    assert_eq!((r.n_users, r.n_items, r.len()), (4, 3, 2));
}

#[test]
fn graphchallenge_tsv() {
    let d = Dir::new();
    let cases: &[(&str, u64, &str)] = &[
        ("", 1, "no entries"),
        ("# c\n", 2, "no entries"),
        ("1\t1\t1\n2\t2\n", 2, "expected 3 fields"),
        ("1\t1\t1\t1\n", 1, "found 4"),
        ("1\t1\t1\n0\t1\t1\n", 2, "row index 0"),
        ("1\t0\t1\n", 1, "column index 0"),
        ("1\t1\t1\n5\t1\t1\n", 2, "row index 5 is out of range 1..=4"),
        ("1\t6\t1\n", 1, "column index 6 is out of range 1..=5"),
        ("1\t1\tnan\n", 1, "not finite"),
        ("1\t1\t-Infinity\n", 1, "not finite"),
        ("1\t1\tone\n", 1, "not a number"),
        ("1\tb\t1\n", 1, "column index \"b\""),
    ];
    for (k, &(text, line, needle)) in cases.iter().enumerate() {
        let p = d.file(&format!("case{k}.tsv"), text.as_bytes());
        expect_parse(read_graphchallenge_tsv(&p, 4, 5), &p, line, needle);
        // Inference has no upper bound to break, only the other errors.
        if !needle.contains("out of range 1..=") {
            expect_parse(read_graphchallenge_tsv_infer(&p), &p, line, needle);
        }
    }
}

#[test]
fn idx() {
    let d = Dir::new();
    let mut images = 0x0803u32.to_be_bytes().to_vec();
    for dim in [2u32, 2, 3] {
        images.extend_from_slice(&dim.to_be_bytes());
    }
    images.extend(0..12u8);
    let mut labels = 0x0801u32.to_be_bytes().to_vec();
    labels.extend_from_slice(&3u32.to_be_bytes());
    labels.extend([1u8, 2, 3]);

    let image_cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "empty"),
        (vec![0, 0, 8], "truncated at byte offset 3"),
        (labels.clone(), "bad magic number 0x00000801"),
        ([&[0u8, 0, 0x0d, 3][..], &images[4..]].concat(), "bad magic"),
        (images[..10].to_vec(), "truncated header at byte offset 10"),
        (images[..20].to_vec(), "truncated at byte offset 20"),
        (
            [images.clone(), vec![9]].concat(),
            "unexpected data at byte offset 28",
        ),
    ];
    for (k, (bytes, needle)) in image_cases.iter().enumerate() {
        let p = d.file(&format!("img{k}-idx3-ubyte"), bytes);
        expect_parse(read_idx_images(&p), &p, 0, needle);
    }
    let label_cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "empty"),
        (images.clone(), "this file holds u8 images"),
        (labels[..6].to_vec(), "truncated header"),
        (labels[..9].to_vec(), "truncated at byte offset 9"),
        (
            [labels.clone(), vec![0]].concat(),
            "unexpected data at byte offset 11",
        ),
    ];
    for (k, (bytes, needle)) in label_cases.iter().enumerate() {
        let p = d.file(&format!("lab{k}-idx1-ubyte"), bytes);
        expect_parse(read_idx_labels(&p), &p, 0, needle);
    }
    let p = d.file("ok-idx3-ubyte", &images);
    let img = read_idx_images(&p).unwrap();
    assert_eq!((img.count, img.rows, img.cols), (2, 2, 3));
    // A huge declared size with little data is reported, not allocated.
    let mut huge = 0x0803u32.to_be_bytes().to_vec();
    for dim in [60_000u32, 60_000, 60_000] {
        huge.extend_from_slice(&dim.to_be_bytes());
    }
    let p = d.file("huge-idx3-ubyte", &huge);
    expect_parse(read_idx_images(&p), &p, 0, "truncated at byte offset 16");
}
