//! GraphChallenge TSV: one 1-based `row<TAB>col<TAB>value` line per entry.
//!
//! The files carry no dimensions: give them, or let them be inferred as the largest row and
//! column index. Spaces are accepted as separators too; blank lines and lines starting with
//! `#` or `%` are skipped. Duplicate entries are summed.

use std::io::{BufRead, Write};
use std::path::Path;

use super::atomic::{io_err, write_atomically};
use super::text::{count_fields, fields, open, parse_f32, parse_u64, show, write_f32, Lines};
use crate::sparse::{Coo, Csr};
use crate::{Error, Result};

/// Reads a GraphChallenge TSV file as an `nrows × ncols` CSR matrix; an index of 0 or beyond
/// the dimension is an error naming its line.
pub fn read_graphchallenge_tsv(path: impl AsRef<Path>, nrows: usize, ncols: usize) -> Result<Csr> {
    let path = path.as_ref();
    let (reader, size) = open(path)?;
    parse(reader, path, Some((nrows, ncols)), size)?.try_to_csr()
}

/// Reads a GraphChallenge TSV file whose dimensions are the largest row and column index
/// found (1-based, so a largest row index of 5 gives 5 rows).
pub fn read_graphchallenge_tsv_infer(path: impl AsRef<Path>) -> Result<Csr> {
    let path = path.as_ref();
    let (reader, size) = open(path)?;
    parse(reader, path, None, size)?.try_to_csr()
}

/// Writes `m` as 1-based `row<TAB>col<TAB>value` lines, replacing `path` atomically. The
/// dimensions are not stored: empty trailing rows or columns are lost unless the reader is
/// given them.
pub fn write_graphchallenge_tsv(path: impl AsRef<Path>, m: &Csr) -> Result<()> {
    let path = path.as_ref();
    write_atomically(path, |w| write_to(w, m).map_err(io_err(path)))
}

fn write_to<W: Write>(w: &mut W, m: &Csr) -> std::io::Result<()> {
    for i in 0..m.nrows {
        for e in m.row_range(i) {
            write!(w, "{}\t{}\t", i + 1, m.col_idx[e] as u64 + 1)?;
            write_f32(w, m.values[e])?;
            w.write_all(b"\n")?;
        }
    }
    Ok(())
}

fn parse<R: BufRead>(
    reader: R,
    path: &Path,
    dims: Option<(usize, usize)>,
    size: u64,
) -> Result<Coo> {
    let mut lines = Lines::new(reader, path);
    let max = u64::from(u32::MAX);
    let (lim_r, lim_c) = dims.map_or((max, max), |(r, c)| {
        ((r as u64).min(max), (c as u64).min(max))
    });
    let cap = (size / 6).min(1 << 26) as usize;
    let mut rows: Vec<u32> = Vec::with_capacity(cap);
    let mut cols: Vec<u32> = Vec::with_capacity(cap);
    let mut values: Vec<f32> = Vec::with_capacity(cap);
    let (mut max_r, mut max_c) = (0u32, 0u32);
    while let Some((ln, line)) = lines.next_line()? {
        let mut it = fields(line);
        let Some(fr) = it.next() else { continue };
        if fr[0] == b'#' || fr[0] == b'%' {
            continue;
        }
        let (Some(fc), Some(fv), None) = (it.next(), it.next(), it.next()) else {
            return Err(Error::parse(
                path,
                ln,
                format!(
                    "expected 3 fields (row col value), found {}",
                    count_fields(line)
                ),
            ));
        };
        let r = index(path, ln, fr, "row", lim_r, dims.is_some())?;
        let c = index(path, ln, fc, "column", lim_c, dims.is_some())?;
        let v = parse_f32(fv, "value").map_err(|m| Error::parse(path, ln, m))?;
        if rows.len() == u32::MAX as usize {
            return Err(Error::parse(path, ln, "more than 2^32 - 1 entries"));
        }
        max_r = max_r.max(r + 1);
        max_c = max_c.max(c + 1);
        rows.push(r);
        cols.push(c);
        values.push(v);
    }
    if rows.is_empty() {
        return Err(Error::parse(
            path,
            lines.line() + 1,
            "no entries: expected lines `row<TAB>col<TAB>value`",
        ));
    }
    let (nrows, ncols) = dims.unwrap_or((max_r as usize, max_c as usize));
    Coo::new(nrows, ncols, rows, cols, values)
}

/// A 1-based index in `1..=dim`, returned 0-based.
fn index(path: &Path, ln: u64, f: &[u8], what: &str, dim: u64, given: bool) -> Result<u32> {
    match parse_u64(f) {
        Some(i) if i >= 1 && i <= dim => Ok((i - 1) as u32),
        Some(i) => Err(Error::parse(
            path,
            ln,
            if given || i == 0 {
                format!("{what} index {i} is out of range 1..={dim} (indices are 1-based)")
            } else {
                format!("{what} index {i} exceeds the u32 index range")
            },
        )),
        None => Err(Error::parse(
            path,
            ln,
            format!("{what} index {} is not a non-negative integer", show(f)),
        )),
    }
}
