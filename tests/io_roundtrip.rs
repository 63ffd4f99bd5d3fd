//! Round-trips for every format of `wgsparse::io` on seeded random data, plus the format
//! features (symmetric and pattern Matrix Market, 0-based LIBSVM, rating headers, comma
//! separators, a shared id map) and an ignored parse-speed measurement.

use std::io::Cursor;
use std::path::Path;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wgsparse::io::*;
use wgsparse::sparse::{Coo, Csr};

fn random_csr(seed: u64, nrows: usize, ncols: usize, nnz: usize) -> Csr {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut rows = Vec::with_capacity(nnz);
    let mut cols = Vec::with_capacity(nnz);
    let mut values = Vec::with_capacity(nnz);
    for k in 0..nnz {
        rows.push(rng.random_range(0..nrows as u32));
        cols.push(rng.random_range(0..ncols as u32));
        // Mix magnitudes so both plain and scientific formatting are exercised.
        let scale = [1.0f32, 1e-7, 3e12, 0.5][k % 4];
        values.push(rng.random_range(-100.0f32..100.0) * scale);
    }
    let csr = Coo::new(nrows, ncols, rows, cols, values)
        .expect("valid random COO")
        .to_csr();
    assert!(nnz == 0 || csr.values.iter().any(|&v| v != 0.0));
    csr
}

fn write(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write test file");
}

#[test]
fn matrix_market_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.mtx");
    for (seed, (r, c, n)) in [(10, 7, 30), (1, 1, 1), (200, 3, 500), (5, 9, 0)]
        .into_iter()
        .enumerate()
    {
        let m = random_csr(seed as u64, r, c, n);
        write_matrix_market(&path, &m).unwrap();
        assert_eq!(read_matrix_market(&path).unwrap(), m);
        assert_eq!(read_matrix_market_coo(&path).unwrap().to_csr(), m);
        let bytes = std::fs::read(&path).unwrap();
        let coo = read_matrix_market_from(Cursor::new(bytes), "mem.mtx").unwrap();
        assert_eq!(coo.to_csr(), m);
    }
}

#[test]
fn matrix_market_symmetric_pattern_and_friends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.mtx");
    write(
        &path,
        "%%MatrixMarket matrix coordinate real symmetric\n% lower triangle\n3 3 3\n\
         1 1 2.0\n3 1 -1.5\n\n% a comment among entries\n3 2 4\n",
    );
    let m = read_matrix_market(&path).unwrap();
    let dense = |m: &Csr| {
        let mut d = vec![0.0f32; m.nrows * m.ncols];
        for i in 0..m.nrows {
            for e in m.row_range(i) {
                d[i * m.ncols + m.col_idx[e] as usize] = m.values[e];
            }
        }
        d
    };
    assert_eq!(
        dense(&m),
        vec![2.0, 0.0, -1.5, 0.0, 0.0, 4.0, -1.5, 4.0, 0.0]
    );
    assert_eq!(m.nnz(), 5);

    write(
        &path,
        "%%matrixmarket MATRIX Coordinate Pattern General\r\n2 4 3\r\n1 4\r\n2 1\r\n2 2\r\n",
    );
    let m = read_matrix_market(&path).unwrap();
    assert_eq!((m.nrows, m.ncols), (2, 4));
    assert_eq!(m.row_ptr, vec![0, 1, 3]);
    assert_eq!(m.col_idx, vec![3, 0, 1]);
    assert_eq!(m.values, vec![1.0; 3]);

    write(
        &path,
        "%%MatrixMarket matrix coordinate pattern symmetric\n2 2 2\n2 1\n2 2\n",
    );
    let m = read_matrix_market(&path).unwrap();
    assert_eq!(dense(&m), vec![0.0, 1.0, 1.0, 1.0]);

    write(
        &path,
        "%%MatrixMarket matrix coordinate integer skew-symmetric\n2 2 1\n2 1 7\n",
    );
    let m = read_matrix_market(&path).unwrap();
    assert_eq!(dense(&m), vec![0.0, -7.0, 7.0, 0.0]);

    // Duplicates are kept in COO and summed in CSR.
    write(
        &path,
        "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 2 1.5\n1 2 2.5\n",
    );
    assert_eq!(read_matrix_market_coo(&path).unwrap().nnz(), 2);
    assert_eq!(read_matrix_market(&path).unwrap().values, vec![4.0]);
}

#[test]
fn libsvm_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("d.svm");
    let mut rng = StdRng::seed_from_u64(42);
    let features = random_csr(3, 50, 20, 300);
    let labels: Vec<f32> = (0..50)
        .map(|_| if rng.random::<bool>() { 1.0 } else { -1.0 })
        .collect();
    let data = LibSvm { labels, features };
    write_libsvm(&path, &data).unwrap();
    assert_eq!(read_libsvm_with(&path, Some(20)).unwrap(), data);
    let inferred = read_libsvm(&path).unwrap();
    let max_col = *data.features.col_idx.iter().max().unwrap() as usize;
    assert_eq!(inferred.features.ncols, max_col + 1);
    assert_eq!(inferred.features.values, data.features.values);
    let l01 = inferred.labels01();
    assert!(l01.iter().all(|&l| l == 0.0 || l == 1.0));
    assert_eq!(
        l01.iter().filter(|&&l| l == 1.0).count(),
        data.labels.iter().filter(|&&l| l == 1.0).count()
    );
}

#[test]
fn libsvm_formats() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.svm");
    // 1-based, unsorted indices, qid, comments, blank lines, an empty row.
    write(
        &path,
        "# header comment\n+1 qid:3 3:0.5 1:2 # trailing\n\n0\n0 2:-1e-3\n",
    );
    let d = read_libsvm(&path).unwrap();
    assert_eq!(d.labels, vec![1.0, 0.0, 0.0]);
    assert_eq!(d.labels01(), vec![1.0, 0.0, 0.0]);
    assert_eq!(d.features.ncols, 3);
    assert_eq!(d.features.row_ptr, vec![0, 2, 2, 3]);
    assert_eq!(d.features.col_idx, vec![0, 2, 1]);
    assert_eq!(d.features.values, vec![2.0, 0.5, -1e-3]);

    // One index 0 anywhere makes the whole file 0-based.
    write(&path, "-1 1:1 4:2\n1 0:3\n");
    let d = read_libsvm(&path).unwrap();
    assert_eq!(d.features.ncols, 5);
    assert_eq!(d.features.col_idx, vec![1, 4, 0]);
    assert_eq!(d.labels01(), vec![0.0, 1.0]);
    let d = read_libsvm_with(&path, Some(8)).unwrap();
    assert_eq!(d.features.ncols, 8);
}

fn random_ratings(seed: u64, n: usize, n_users: u32, n_items: u32) -> Ratings {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut r = Ratings {
        n_users: n_users as usize,
        n_items: n_items as usize,
        ..Ratings::default()
    };
    for _ in 0..n {
        r.users.push(rng.random_range(0..n_users));
        r.items.push(rng.random_range(0..n_items));
        r.values.push(rng.random_range(1..=10) as f32 * 0.5);
    }
    r
}

#[test]
fn ratings_binary_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.bin");
    let mut r = random_ratings(5, 1000, 40, 30);
    // Make sure the largest ids occur, so the inferred sizes match.
    r.users.push(39);
    r.items.push(29);
    r.values.push(3.25);
    write_ratings_binary(&path, &r).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 12 * 1001);
    assert_eq!(read_ratings_binary(&path).unwrap(), r);
}

#[test]
fn ratings_text_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.tsv");
    let r = random_ratings(6, 500, 25, 60);
    write_ratings(&path, &r).unwrap();
    let mut ids = IdMap::new();
    let back = read_ratings(&path, &mut ids).unwrap();
    assert_eq!(back.values, r.values);
    for k in 0..r.len() {
        assert_eq!(ids.user_id(back.users[k]).unwrap(), r.users[k].to_string());
        assert_eq!(ids.item_id(back.items[k]).unwrap(), r.items[k].to_string());
    }
    // With the original string ids, a fresh map reproduces the same indices.
    let path2 = dir.path().join("r2.tsv");
    write_ratings_with_ids(&path2, &back, &ids).unwrap();
    let mut ids2 = IdMap::new();
    let again = read_ratings(&path2, &mut ids2).unwrap();
    assert_eq!(again, back);
    assert_eq!(ids2.user_ids(), ids.user_ids());
    assert_eq!(ids2.item_ids(), ids.item_ids());
    assert_eq!(again.to_coo().unwrap().nnz(), 500);
}

#[test]
fn ratings_header_commas_and_shared_map() {
    let dir = tempfile::tempdir().unwrap();
    let train = dir.path().join("train.csv");
    let test = dir.path().join("test.csv");
    write(
        &train,
        "userId,movieId,rating,timestamp\nalice,m1,4.5,100\nbob,m2,3,101\nalice, m2, 5\n",
    );
    write(&test, "# test split\ncarol\tm1\t2\nbob m3 1.5 7\n");
    let mut ids = IdMap::new();
    let a = read_ratings(&train, &mut ids).unwrap();
    assert_eq!(a.users, vec![0, 1, 0]);
    assert_eq!(a.items, vec![0, 1, 1]);
    assert_eq!(a.values, vec![4.5, 3.0, 5.0]);
    assert_eq!((a.n_users, a.n_items), (2, 2));
    let b = read_ratings(&test, &mut ids).unwrap();
    assert_eq!(b.users, vec![2, 1]);
    assert_eq!(b.items, vec![0, 2]);
    assert_eq!((b.n_users, b.n_items), (3, 3));
    assert_eq!(ids.user("carol"), Some(2));
    assert_eq!(ids.item_id(2), Some("m3"));
    assert_eq!(ids.user("dave"), None);
}

#[test]
fn graphchallenge_tsv_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("g.tsv");
    let mut m = random_csr(7, 40, 35, 200);
    write_graphchallenge_tsv(&path, &m).unwrap();
    assert_eq!(read_graphchallenge_tsv(&path, 40, 35).unwrap(), m);
    let inferred = read_graphchallenge_tsv_infer(&path).unwrap();
    let max_row = (0..m.nrows).filter(|&i| !m.row_range(i).is_empty()).max();
    assert_eq!(inferred.nrows, max_row.unwrap() + 1);
    assert_eq!(
        inferred.ncols,
        *m.col_idx.iter().max().unwrap() as usize + 1
    );
    m.nrows = inferred.nrows;
    m.ncols = inferred.ncols;
    m.row_ptr.truncate(inferred.nrows + 1);
    assert_eq!(inferred, m);
}

#[test]
fn idx_roundtrip() {
    let dir = tempfile::tempdir().unwrap();
    let mut rng = StdRng::seed_from_u64(9);
    let images = IdxImages {
        count: 5,
        rows: 4,
        cols: 3,
        pixels: (0..60).map(|_| rng.random::<u8>()).collect(),
    };
    assert!(images.pixels.iter().any(|&p| p != 0));
    let labels: Vec<u8> = (0..5).map(|_| rng.random_range(0..10)).collect();
    let ip = dir.path().join("images-idx3-ubyte");
    let lp = dir.path().join("labels-idx1-ubyte");
    write_idx_images(&ip, &images).unwrap();
    write_idx_labels(&lp, &labels).unwrap();
    assert_eq!(std::fs::metadata(&ip).unwrap().len(), 16 + 60);
    let back = read_idx_images(&ip).unwrap();
    assert_eq!(back, images);
    assert_eq!(back.image(1), &images.pixels[12..24]);
    assert_eq!(read_idx_labels(&lp).unwrap(), labels);
    let d = back.to_dense().unwrap();
    assert_eq!((d.nrows, d.ncols), (5, 12));
    assert_eq!(d.data[7], f32::from(images.pixels[7]) / 255.0);
}

#[test]
fn atomic_write_replaces_or_keeps() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.mtx");
    let m = random_csr(11, 6, 6, 10);
    write(&path, "old contents");
    write_matrix_market(&path, &m).unwrap();
    assert_eq!(read_matrix_market(&path).unwrap(), m);
    // A failing writer leaves the old file and no temporary behind.
    let r = write_atomically(&path, |w| {
        use std::io::Write;
        w.write_all(b"partial").unwrap();
        Err(wgsparse::Error::invalid("test", "stop"))
    });
    assert!(r.is_err());
    assert_eq!(read_matrix_market(&path).unwrap(), m);
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 1);
    // A missing directory is an I/O error.
    let e = write_matrix_market(dir.path().join("missing/x.mtx"), &m).unwrap_err();
    assert!(matches!(e, wgsparse::Error::Io { .. }), "{e}");
}
