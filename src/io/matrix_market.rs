//! Matrix Market coordinate files (`.mtx`).
//!
//! Read: `%%MatrixMarket matrix coordinate {real|double|integer|pattern}
//! {general|symmetric|skew-symmetric}` (header words case-insensitive), `%` comment lines and
//! blank lines anywhere after the header, a `rows cols entries` size line, then one
//! 1-based `row col [value]` line per entry. Pattern entries get the value 1.0. Symmetric
//! files list one triangle; each off-diagonal entry is mirrored (negated for skew-symmetric).
//! The `array` format and the `complex` and `hermitian` qualifiers are rejected.
//!
//! Write: `real general`, 1-based, values in their shortest round-tripping form.

use std::io::{BufRead, Write};
use std::path::Path;

use super::atomic::{io_err, write_atomically};
use super::text::{count_fields, fields, open, parse_f32, parse_u64, show, write_f32, Lines};
use crate::sparse::{Coo, Csr};
use crate::{Error, Result};

/// Reads a Matrix Market coordinate file as CSR (entries sorted, duplicates summed).
///
/// Every malformed line is reported as an [`crate::Error::Parse`] with its 1-based line
/// number; a missing part at the end of the file is reported at the line after the last one.
pub fn read_matrix_market(path: impl AsRef<Path>) -> Result<Csr> {
    read_matrix_market_coo(path)?.try_to_csr()
}

/// Reads a Matrix Market coordinate file as COO, in file order (symmetric files: each
/// mirrored entry right after its original). Duplicates are kept.
pub fn read_matrix_market_coo(path: impl AsRef<Path>) -> Result<Coo> {
    let path = path.as_ref();
    let (reader, size) = open(path)?;
    parse(reader, path, Some(size))
}

/// Reads only the header and the size line of a Matrix Market coordinate file: its
/// `(rows, columns, entries)` as declared (symmetric files store up to twice the entries).
/// Lets a caller check what the matrix will need before reading it.
pub fn read_matrix_market_size(path: impl AsRef<Path>) -> Result<(usize, usize, usize)> {
    let path = path.as_ref();
    let (reader, _) = open(path)?;
    let mut lines = Lines::new(reader, path);
    let (_, symmetry) = parse_header(&mut lines)?;
    let (nrows, ncols, nnz) = parse_size(&mut lines, symmetry)?;
    Ok((nrows as usize, ncols as usize, nnz as usize))
}

/// Reads Matrix Market coordinate data from any buffered reader, as COO in file order;
/// `name` stands for the input in error messages. Call [`Coo::to_csr`] for CSR.
pub fn read_matrix_market_from<R: BufRead>(reader: R, name: impl AsRef<Path>) -> Result<Coo> {
    parse(reader, name.as_ref(), None)
}

/// Writes `m` as a `real general` Matrix Market coordinate file, 1-based, replacing `path`
/// atomically.
pub fn write_matrix_market(path: impl AsRef<Path>, m: &Csr) -> Result<()> {
    let path = path.as_ref();
    write_atomically(path, |w| write_to(w, m).map_err(io_err(path)))
}

fn write_to<W: Write>(w: &mut W, m: &Csr) -> std::io::Result<()> {
    writeln!(w, "%%MatrixMarket matrix coordinate real general")?;
    writeln!(w, "% written by wgsparse")?;
    writeln!(w, "{} {} {}", m.nrows, m.ncols, m.nnz())?;
    for i in 0..m.nrows {
        for e in m.row_range(i) {
            write!(w, "{} {} ", i + 1, m.col_idx[e] as u64 + 1)?;
            write_f32(w, m.values[e])?;
            w.write_all(b"\n")?;
        }
    }
    Ok(())
}

#[derive(Clone, Copy, PartialEq)]
enum Field {
    Real,
    Pattern,
}

#[derive(Clone, Copy, PartialEq)]
enum Symmetry {
    General,
    Symmetric,
    Skew,
}

const HEADER_FORM: &str = "%%MatrixMarket matrix coordinate <real|integer|pattern> \
                           <general|symmetric|skew-symmetric>";

fn parse<R: BufRead>(reader: R, path: &Path, size_hint: Option<u64>) -> Result<Coo> {
    let mut lines = Lines::new(reader, path);
    let (field, symmetry) = parse_header(&mut lines)?;
    let (nrows, ncols, nnz) = parse_size(&mut lines, symmetry)?;

    let mirror = symmetry != Symmetry::General;
    let want = if mirror { nnz.saturating_mul(2) } else { nnz };
    // Bound the reservation by what the file can hold (an entry line takes ≥ 4 bytes), so a
    // lying size line cannot trigger a huge allocation.
    let cap = want.min(size_hint.map_or(1 << 16, |s| s / 4)) as usize;
    let mut rows: Vec<u32> = Vec::with_capacity(cap);
    let mut cols: Vec<u32> = Vec::with_capacity(cap);
    let mut values: Vec<f32> = Vec::with_capacity(cap);
    let expected_fields = if field == Field::Pattern { 2 } else { 3 };
    let mut seen: u64 = 0;

    while let Some((ln, line)) = lines.next_line()? {
        let mut it = fields(line);
        let Some(fr) = it.next() else { continue };
        if fr[0] == b'%' {
            continue;
        }
        if seen == nnz {
            return Err(Error::parse(
                path,
                ln,
                format!("more entries than the {nnz} declared in the size line"),
            ));
        }
        let wrong_count = || {
            format!(
                "expected {expected_fields} fields ({}), found {}",
                if field == Field::Pattern {
                    "row col"
                } else {
                    "row col value"
                },
                count_fields(line)
            )
        };
        let Some(fc) = it.next() else {
            return Err(Error::parse(path, ln, wrong_count()));
        };
        let v = match field {
            Field::Pattern => 1.0,
            Field::Real => match it.next() {
                Some(fv) => parse_f32(fv, "value").map_err(|m| Error::parse(path, ln, m))?,
                None => return Err(Error::parse(path, ln, wrong_count())),
            },
        };
        if it.next().is_some() {
            return Err(Error::parse(path, ln, wrong_count()));
        }
        let r = index(path, ln, fr, "row", nrows)?;
        let c = index(path, ln, fc, "column", ncols)?;
        rows.push(r);
        cols.push(c);
        values.push(v);
        if mirror && r != c {
            rows.push(c);
            cols.push(r);
            values.push(if symmetry == Symmetry::Skew { -v } else { v });
        } else if symmetry == Symmetry::Skew && r == c && v != 0.0 {
            return Err(Error::parse(
                path,
                ln,
                format!(
                    "skew-symmetric matrix has a nonzero diagonal entry at ({}, {})",
                    r + 1,
                    c + 1
                ),
            ));
        }
        seen += 1;
    }
    if seen < nnz {
        return Err(Error::parse(
            path,
            lines.line() + 1,
            format!("file ends after {seen} of the {nnz} entries declared in the size line"),
        ));
    }
    Coo::new(nrows as usize, ncols as usize, rows, cols, values)
}

/// A 1-based index in `1..=dim`, returned 0-based.
fn index(path: &Path, ln: u64, f: &[u8], what: &str, dim: u64) -> Result<u32> {
    match parse_u64(f) {
        Some(i) if i >= 1 && i <= dim => Ok((i - 1) as u32),
        Some(i) => Err(Error::parse(
            path,
            ln,
            format!("{what} index {i} is out of range 1..={dim} (indices are 1-based)"),
        )),
        None => Err(Error::parse(
            path,
            ln,
            format!("{what} index {} is not a non-negative integer", show(f)),
        )),
    }
}

fn parse_header<R: BufRead>(lines: &mut Lines<'_, R>) -> Result<(Field, Symmetry)> {
    let path = lines.path();
    let Some((ln, line)) = lines.next_line()? else {
        return Err(Error::parse(
            path,
            1,
            format!("empty file, expected the header {HEADER_FORM}"),
        ));
    };
    let words: Vec<&[u8]> = fields(line).collect();
    let is = |i: usize, w: &str| {
        words
            .get(i)
            .is_some_and(|x| x.eq_ignore_ascii_case(w.as_bytes()))
    };
    if !is(0, "%%MatrixMarket") {
        return Err(Error::parse(
            path,
            ln,
            format!(
                "missing header: expected {HEADER_FORM}, found {}",
                show(line)
            ),
        ));
    }
    if words.len() != 5 {
        return Err(Error::parse(
            path,
            ln,
            format!(
                "header has {} words, expected 5: {HEADER_FORM}",
                words.len()
            ),
        ));
    }
    if !is(1, "matrix") {
        return Err(Error::parse(
            path,
            ln,
            format!(
                "unsupported object {}: only `matrix` is supported",
                show(words[1])
            ),
        ));
    }
    if is(2, "array") {
        return Err(Error::parse(
            path,
            ln,
            "unsupported format `array` (dense): only `coordinate` is supported",
        ));
    }
    if !is(2, "coordinate") {
        return Err(Error::parse(
            path,
            ln,
            format!("unknown format {}: expected `coordinate`", show(words[2])),
        ));
    }
    let field = if is(3, "real") || is(3, "double") || is(3, "integer") {
        Field::Real
    } else if is(3, "pattern") {
        Field::Pattern
    } else if is(3, "complex") {
        return Err(Error::parse(
            path,
            ln,
            "unsupported field `complex`: only real, integer and pattern are supported",
        ));
    } else {
        return Err(Error::parse(
            path,
            ln,
            format!(
                "unknown field {}: expected real, integer or pattern",
                show(words[3])
            ),
        ));
    };
    let symmetry = if is(4, "general") {
        Symmetry::General
    } else if is(4, "symmetric") {
        Symmetry::Symmetric
    } else if is(4, "skew-symmetric") {
        Symmetry::Skew
    } else if is(4, "hermitian") {
        return Err(Error::parse(
            path,
            ln,
            "unsupported symmetry `hermitian` (complex matrices only)",
        ));
    } else {
        return Err(Error::parse(
            path,
            ln,
            format!(
                "unknown symmetry {}: expected general, symmetric or skew-symmetric",
                show(words[4])
            ),
        ));
    };
    Ok((field, symmetry))
}

fn parse_size<R: BufRead>(lines: &mut Lines<'_, R>, symmetry: Symmetry) -> Result<(u64, u64, u64)> {
    let path = lines.path();
    const FORM: &str = "expected the size line `rows columns entries`";
    loop {
        let Some((ln, line)) = lines.next_line()? else {
            let at = lines.line() + 1;
            return Err(Error::parse(
                path,
                at,
                format!("file ends before the size line: {FORM}"),
            ));
        };
        let words: Vec<&[u8]> = fields(line).take(4).collect();
        match words.first() {
            None => continue,
            Some(w) if w[0] == b'%' => continue,
            Some(_) => {}
        }
        if words.len() != 3 {
            return Err(Error::parse(
                path,
                ln,
                format!("{FORM}, found {} fields", count_fields(line)),
            ));
        }
        let mut dims = [0u64; 3];
        for (d, w) in dims.iter_mut().zip(&words) {
            *d = parse_u64(w).ok_or_else(|| {
                Error::parse(
                    path,
                    ln,
                    format!("{FORM}: {} is not a non-negative integer", show(w)),
                )
            })?;
        }
        let [nrows, ncols, nnz] = dims;
        let max = u64::from(u32::MAX);
        let stored = if symmetry == Symmetry::General {
            nnz
        } else {
            nnz.saturating_mul(2)
        };
        if nrows > max || ncols > max || stored > max {
            return Err(Error::parse(
                path,
                ln,
                format!("size {nrows}×{ncols} with {nnz} entries exceeds the u32 index range"),
            ));
        }
        if symmetry != Symmetry::General && nrows != ncols {
            return Err(Error::parse(
                path,
                ln,
                format!("a symmetric matrix must be square, found {nrows}×{ncols}"),
            ));
        }
        return Ok((nrows, ncols, nnz));
    }
}
