//! Host sparse formats: exact round trips through every format and rejection of invalid input.

use wgsparse::gen::power_law;
use wgsparse::sparse::{Coo, Csc, Csr, CsrEll, Dcsr, Dense, Ell, ELL_PAD};
use wgsparse::Error;

/// Converts `m` through every format and back, checking each intermediate is valid and each
/// round trip is exact.
fn round_trip_all(m: &Csr) {
    m.validate().expect("input is valid");

    let csc = m.to_csc();
    csc.validate().expect("CSC valid");
    assert_eq!(csc.nnz(), m.nnz());
    assert_eq!(&csc.to_csr(), m, "CSR → CSC → CSR");
    assert_eq!(Csr::from(&Csc::from(m)), *m);
    assert_eq!(
        csc.transpose(),
        m.transpose(),
        "CSC arrays are CSR of the transpose"
    );
    assert_eq!(csc.to_coo().to_csr(), *m, "CSC → COO → CSR");

    let ell = m.to_ell().expect("ELL fits");
    ell.validate().expect("ELL valid");
    assert_eq!(ell.width, m.max_row_len());
    assert_eq!(ell.nnz(), m.nnz());
    assert_eq!(&ell.to_csr(), m, "CSR → ELL → CSR");
    assert_eq!(Csr::from(&Ell::try_from(m).unwrap()), *m);
    let wide = m.to_ell_with_width(m.max_row_len() + 3).unwrap();
    wide.validate().expect("wide ELL valid");
    assert_eq!(&wide.to_csr(), m, "CSR → wide ELL → CSR");
    for (s, &c) in ell.col_idx.iter().enumerate() {
        if c == ELL_PAD {
            assert_eq!(ell.values[s], 0.0, "padding value is 0");
        }
    }
    assert_eq!(Coo::from(&ell).to_csr(), *m);

    let dcsr = m.to_dcsr();
    dcsr.validate().expect("DCSR valid");
    let nonempty = (0..m.nrows).filter(|&i| !m.row_range(i).is_empty()).count();
    assert_eq!(dcsr.stored_rows(), nonempty);
    assert_eq!(&dcsr.to_csr(), m, "CSR → DCSR → CSR");
    assert_eq!(Csr::from(&Dcsr::from(m)), *m);
    assert_eq!(dcsr.to_coo(), m.to_coo());
    assert_eq!(Dcsr::from(&m.to_coo()), dcsr);

    let mut widths = vec![0, 1, 2, m.max_row_len(), m.max_row_len() + 1];
    for q in [0.0, 0.5, 0.9, 0.99, 1.0] {
        widths.push(CsrEll::width_for_quantile(m, q).unwrap());
    }
    assert_eq!(
        CsrEll::width_for_quantile(m, 1.0).unwrap(),
        m.max_row_len(),
        "quantile 1 is the longest row"
    );
    for w in widths {
        let h = m.to_csr_ell(w).expect("hybrid fits");
        h.validate().expect("CSR+ELL valid");
        assert_eq!(h.width(), w);
        assert_eq!(h.nnz(), m.nnz());
        assert_eq!((h.nrows(), h.ncols()), (m.nrows, m.ncols));
        assert_eq!(&h.to_csr(), m, "CSR → CSR+ELL(width {w}) → CSR");
        if w >= m.max_row_len() {
            assert_eq!(h.overflow.nnz(), 0, "no overflow at width {w}");
        }
        assert_eq!(Coo::from(&h).to_csr(), *m);
    }

    assert_eq!(m.to_coo().to_csr(), *m, "CSR → COO → CSR");
    assert_eq!(Csc::from(&m.to_coo()), csc);
    assert_eq!(Coo::from(&csc).to_csr(), *m);

    if m.nrows * m.ncols <= 1 << 22 {
        let d = m.to_dense();
        d.validate().expect("dense valid");
        assert_eq!(&d.to_csr(), m, "CSR → dense → CSR (no stored zeros)");
        assert_eq!(Csr::from(&Dense::from(m)), *m);
        // Every stored entry lands at its place.
        for i in 0..m.nrows {
            for e in m.row_range(i) {
                assert_eq!(d.row(i)[m.col_idx[e] as usize], m.values[e]);
            }
        }
    }
}

fn csr(nrows: usize, ncols: usize, entries: &[(u32, u32, f32)]) -> Csr {
    let rows = entries.iter().map(|e| e.0).collect();
    let cols = entries.iter().map(|e| e.1).collect();
    let vals = entries.iter().map(|e| e.2).collect();
    let m = Coo::new(nrows, ncols, rows, cols, vals).unwrap().to_csr();
    m.validate().unwrap();
    m
}

fn assert_invalid<T: std::fmt::Debug>(r: wgsparse::Result<T>, needle: &str) {
    match r {
        Err(Error::Invalid { what, message }) => assert!(
            message.contains(needle),
            "{what}: message {message:?} should mention {needle:?}"
        ),
        other => panic!("expected Error::Invalid mentioning {needle:?}, got {other:?}"),
    }
}

#[test]
fn power_law_matrices_round_trip() {
    for (nrows, ncols, nnz, alpha, seed) in [
        (300, 200, 4_000, 1.1, 1),
        (1000, 50, 10_000, 1.2, 2),
        (64, 4000, 9_000, 1.0, 3),
        (500, 700, 600, 1.1, 4), // sparse: many empty rows and columns
        (40, 30, 1200, 1.1, 5),  // full
        (200, 200, 20_000, 0.0, 6),
        (300, 300, 5_000, 2.5, 7),
    ] {
        let m = power_law(nrows, ncols, nnz, alpha, seed).unwrap();
        round_trip_all(&m);
    }
}

#[test]
fn empty_rows_and_columns() {
    let m = csr(
        6,
        7,
        &[
            (0, 6, 1.0),
            (2, 0, -2.0),
            (2, 3, 3.5),
            (2, 6, 0.25),
            (5, 3, 4.0),
        ],
    );
    round_trip_all(&m);
    let d = m.to_dcsr();
    assert_eq!(d.row_ids, vec![0, 2, 5]);
    assert_eq!(d.row_ptr, vec![0, 1, 4, 5]);
    let c = m.to_csc();
    assert_eq!(c.col_ptr, vec![0, 1, 1, 1, 3, 3, 3, 5]);
    assert_eq!(c.row_idx, vec![2, 2, 5, 0, 2]);
    let e = m.to_ell().unwrap();
    assert_eq!(e.width, 3);
    assert_eq!(
        &e.col_idx[..6],
        &[6, ELL_PAD, ELL_PAD, ELL_PAD, ELL_PAD, ELL_PAD]
    );
    assert_eq!(&e.col_idx[6..9], &[0, 3, 6]);
    let h = m.to_csr_ell(1).unwrap();
    assert_eq!(h.overflow.row_ptr, vec![0, 0, 0, 2, 2, 2, 2]);
    assert_eq!(h.overflow.col_idx, vec![3, 6]);
}

#[test]
fn degenerate_shapes() {
    for (r, c) in [(0, 0), (1, 1), (0, 5), (5, 0), (3, 4), (1, 1000)] {
        round_trip_all(&Csr::empty(r, c));
        assert_eq!(Csc::empty(r, c).to_csr(), Csr::empty(r, c));
        assert_eq!(Dcsr::empty(r, c).to_csr(), Csr::empty(r, c));
        assert_eq!(Ell::empty(r, c).to_csr(), Csr::empty(r, c));
        Csc::empty(r, c).validate().unwrap();
        Dcsr::empty(r, c).validate().unwrap();
        Ell::empty(r, c).validate().unwrap();
    }
    round_trip_all(&csr(1, 1, &[(0, 0, 2.0)]));
    round_trip_all(&csr(1, 1, &[(0, 0, -0.5)]));
    let zero_rows = Csr::empty(4, 3).to_dcsr();
    assert!(zero_rows.row_ids.is_empty());
    assert_eq!(zero_rows.row_ptr, vec![0]);
}

#[test]
fn dense_conversion_drops_zeros() {
    let d = Dense::new(2, 3, vec![0.0, 1.5, -0.0, 2.0, 0.0, -3.0]).unwrap();
    let m = d.to_csr();
    m.validate().unwrap();
    assert_eq!(m.row_ptr, vec![0, 1, 3]);
    assert_eq!(m.col_idx, vec![1, 0, 2]);
    assert_eq!(m.values, vec![1.5, 2.0, -3.0]);
    assert_eq!(
        m.to_dense(),
        Dense::new(2, 3, vec![0.0, 1.5, 0.0, 2.0, 0.0, -3.0]).unwrap()
    );
    // A stored zero survives sparse round trips but not the dense one.
    let with_zero = Csr::new(1, 3, vec![0, 2], vec![0, 2], vec![0.0, 1.0]).unwrap();
    assert_eq!(with_zero.to_csc().to_csr(), with_zero);
    assert_eq!(with_zero.to_ell().unwrap().to_csr(), with_zero);
    assert_eq!(with_zero.to_dense().to_csr().nnz(), 1);
}

#[test]
fn coo_duplicates_are_summed() {
    let coo = Coo::new(2, 2, vec![1, 0, 1], vec![1, 0, 1], vec![1.0, 2.0, 3.0]).unwrap();
    let c = Csc::from(&coo);
    c.validate().unwrap();
    assert_eq!(c.values, vec![2.0, 4.0]);
    assert_eq!(Dcsr::from(&coo).values, vec![2.0, 4.0]);
}

#[test]
fn invalid_csc_rejected() {
    let ok = || (vec![0u32, 2, 3], vec![0u32, 2, 1], vec![1.0f32, 2.0, 3.0]);
    let (p, i, v) = ok();
    Csc::new(3, 2, p, i, v).unwrap();

    let (p, _, v) = ok();
    assert_invalid(
        Csc::new(3, 2, p, vec![2, 0, 1], v),
        "unsorted row 0 after 2 in column 0",
    );
    let (p, _, v) = ok();
    assert_invalid(Csc::new(3, 2, p, vec![1, 1, 1], v), "duplicate row 1");
    let (p, _, v) = ok();
    assert_invalid(Csc::new(3, 2, p, vec![0, 3, 1], v), "row 3 of entry 1");
    let (p, i, _) = ok();
    assert_invalid(Csc::new(3, 2, p, i, vec![1.0, f32::NAN, 3.0]), "entry 1");
    let (p, i, _) = ok();
    assert_invalid(
        Csc::new(3, 2, p, i, vec![1.0, 2.0, f32::INFINITY]),
        "entry 2",
    );
    let (_, i, v) = ok();
    assert_invalid(Csc::new(3, 2, vec![0, 3], i, v), "col_ptr has 2 entries");
    let (p, i, _) = ok();
    assert_invalid(Csc::new(3, 2, p, i, vec![1.0, 2.0]), "values");
    let (_, i, v) = ok();
    assert_invalid(Csc::new(3, 2, vec![0, 2, 2], i, v), "nnz = 3");
    let (_, i, v) = ok();
    assert_invalid(Csc::new(3, 2, vec![1, 0, 3], i, v), "0 to nnz");
    let (_, i, v) = ok();
    assert_invalid(
        Csc::new(3, 3, vec![0, 2, 1, 3], i, v),
        "decreases at column 1",
    );
}

#[test]
fn invalid_ell_rejected() {
    let p = ELL_PAD;
    Ell::new(2, 4, 2, vec![1, 3, 0, p], vec![1.0, 2.0, 3.0, 0.0]).unwrap();

    assert_invalid(
        Ell::new(2, 4, 2, vec![3, 1, 0, p], vec![1.0, 2.0, 3.0, 0.0]),
        "unsorted column 1 after 3 in row 0",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, 2, 2], vec![1.0, 2.0, 3.0, 4.0]),
        "duplicate column 2",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, 4, p], vec![1.0, 2.0, 3.0, 0.0]),
        "column 4 at slot 2 (row 1) is out of range",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, 0, p], vec![1.0, f32::NAN, 3.0, 0.0]),
        "slot 1",
    );
    assert_invalid(
        Ell::new(
            2,
            4,
            2,
            vec![1, 3, 0, p],
            vec![1.0, 2.0, f32::NEG_INFINITY, 0.0],
        ),
        "slot 2",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, p, 0], vec![1.0, 2.0, 0.0, 3.0]),
        "follows padding",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, 0, p], vec![1.0, 2.0, 3.0, 5.0]),
        "padding slot 3",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, 0], vec![1.0, 2.0, 3.0]),
        "expected nrows × width",
    );
    assert_invalid(
        Ell::new(2, 4, 2, vec![1, 3, 0, p], vec![1.0, 2.0, 3.0]),
        "3 values",
    );
    let m = csr(2, 3, &[(0, 0, 1.0), (0, 1, 1.0), (1, 2, 1.0)]);
    assert!(matches!(m.to_ell_with_width(1), Err(Error::Option(_))));
}

#[test]
fn invalid_dcsr_rejected() {
    let ok = || {
        (
            vec![1u32, 3],
            vec![0u32, 2, 3],
            vec![0u32, 4, 2],
            vec![1.0f32, 2.0, 3.0],
        )
    };
    let (r, p, c, v) = ok();
    Dcsr::new(5, 5, r, p, c, v).unwrap();

    let (_, p, c, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, vec![3, 1], p, c, v),
        "unsorted row id 1 after 3",
    );
    let (_, p, c, v) = ok();
    assert_invalid(Dcsr::new(5, 5, vec![3, 3], p, c, v), "duplicate row id 3");
    let (_, p, c, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, vec![1, 5], p, c, v),
        "row id 5 at stored row 1",
    );
    let (r, _, _, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, r, vec![0, 0, 3], vec![0, 2, 4], v),
        "stored row 0 (row 1) is empty",
    );
    let (r, p, _, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, r, p, vec![4, 0, 2], v),
        "unsorted column 0 after 4 in row 1",
    );
    let (r, p, _, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, r, p, vec![0, 0, 2], v),
        "duplicate column 0",
    );
    let (r, p, _, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, r, p, vec![0, 4, 5], v),
        "column 5 of entry 2 (row 3",
    );
    let (r, p, c, _) = ok();
    assert_invalid(
        Dcsr::new(5, 5, r, p, c, vec![1.0, 2.0, f32::NAN]),
        "entry 2",
    );
    let (r, _, c, v) = ok();
    assert_invalid(
        Dcsr::new(5, 5, r, vec![0, 3], c, v),
        "row_ptr has 2 entries",
    );
    let (r, p, c, _) = ok();
    assert_invalid(Dcsr::new(5, 5, r, p, c, vec![1.0]), "1 values");
}

#[test]
fn invalid_csr_ell_rejected() {
    let m = csr(3, 5, &[(0, 1, 1.0), (0, 3, 2.0), (0, 4, 3.0), (2, 0, 4.0)]);
    let h = m.to_csr_ell(2).unwrap();
    CsrEll::new(h.ell.clone(), h.overflow.clone()).unwrap();

    // Overflow in a row whose ELL part is not full.
    let mut overflow = h.overflow.clone();
    overflow.row_ptr = vec![0, 0, 0, 1];
    overflow.col_idx = vec![4];
    assert_invalid(
        CsrEll::new(h.ell.clone(), overflow),
        "row 2 has 1 overflow entries",
    );
    // Overflow columns must come after the ELL columns of the row.
    let mut overflow = h.overflow.clone();
    overflow.col_idx = vec![2];
    assert_invalid(
        CsrEll::new(h.ell.clone(), overflow),
        "does not follow the last ELL column 3",
    );
    // Shapes must agree.
    let mut overflow = h.overflow.clone();
    overflow.ncols = 6;
    assert_invalid(
        CsrEll::new(h.ell.clone(), overflow),
        "CSR overflow part is 3×6",
    );
    // Each part is validated.
    let mut ell = h.ell.clone();
    ell.values[0] = f32::INFINITY;
    assert_invalid(CsrEll::new(ell, h.overflow.clone()), "slot 0");
    let mut overflow = h.overflow.clone();
    overflow.values[0] = f32::NAN;
    assert_invalid(CsrEll::new(h.ell.clone(), overflow), "entry 0");

    assert!(matches!(
        CsrEll::width_for_quantile(&m, 1.5),
        Err(Error::Option(_))
    ));
    assert!(matches!(
        CsrEll::width_for_quantile(&m, f64::NAN),
        Err(Error::Option(_))
    ));
    assert_eq!(CsrEll::width_for_quantile(&m, 0.0).unwrap(), 0);
    assert_eq!(CsrEll::width_for_quantile(&m, 0.5).unwrap(), 1);
}

#[test]
fn parallel_transpose_matches_the_coordinate_transpose() {
    // Large enough for the multi-threaded path (≥ 65,536 nonzeros), power-law rows.
    let s = wgsparse::gen::power_law(3_000, 2_500, 200_000, 1.1, 12).unwrap();
    let (t, map) = s.transpose_with_map();
    t.validate().unwrap();
    assert_eq!(t, s.to_coo().transpose().to_csr());
    // map[e] is the index in s of entry e of t.
    let rows = s.row_indices();
    for (e, &src) in map.iter().enumerate() {
        let src = src as usize;
        assert_eq!(t.col_idx[e], rows[src]);
        assert_eq!(t.values[e], s.values[src]);
    }
    assert_eq!(t.transpose(), s);
}
