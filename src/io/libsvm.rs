//! LIBSVM / SVMlight files: one sample per line, `label [qid:N] index:value ...`.
//!
//! Indices are 1-based unless an index 0 appears anywhere in the file, which makes the whole
//! file 0-based. Indices within a line may come in any order (they are sorted); a repeated
//! index is an error. `qid:` tokens are ignored, `#` starts a comment, blank lines are
//! skipped.

use std::io::{BufRead, Write};
use std::path::Path;

use memchr::memchr;

use super::atomic::{io_err, write_atomically};
use super::text::{fields, open, parse_f32, parse_u64, show, write_f32, Lines};
use crate::sparse::Csr;
use crate::{Error, Result};

/// A LIBSVM data set: one label and one sparse feature row per sample.
#[derive(Clone, Debug, PartialEq)]
pub struct LibSvm {
    /// The label of each sample, as written in the file (e.g. ±1, 0/1, or a regression target).
    pub labels: Vec<f32>,
    /// The features: one row per sample, 0-based columns.
    pub features: Csr,
}

impl LibSvm {
    /// Binary labels as 0/1: positive labels become 1, all others (0, −1, …) become 0.
    pub fn labels01(&self) -> Vec<f32> {
        self.labels
            .iter()
            .map(|&l| if l > 0.0 { 1.0 } else { 0.0 })
            .collect()
    }

    /// Number of samples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there are no samples.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }
}

/// Reads a LIBSVM file; the number of feature columns is the largest (0-based) index + 1.
pub fn read_libsvm(path: impl AsRef<Path>) -> Result<LibSvm> {
    read_libsvm_with(path, None)
}

/// Reads a LIBSVM file with `n_features` columns when given (an index beyond it is an error
/// naming its line), or the largest (0-based) index + 1 when `None`.
pub fn read_libsvm_with(path: impl AsRef<Path>, n_features: Option<usize>) -> Result<LibSvm> {
    let path = path.as_ref();
    let (reader, _) = open(path)?;
    parse(reader, path, n_features)
}

/// Writes `data` as a LIBSVM file with 1-based indices, replacing `path` atomically.
pub fn write_libsvm(path: impl AsRef<Path>, data: &LibSvm) -> Result<()> {
    let path = path.as_ref();
    if data.labels.len() != data.features.nrows {
        return Err(Error::Shape(format!(
            "{} labels for {} feature rows",
            data.labels.len(),
            data.features.nrows
        )));
    }
    write_atomically(path, |w| write_to(w, data).map_err(io_err(path)))
}

fn write_to<W: Write>(w: &mut W, data: &LibSvm) -> std::io::Result<()> {
    let m = &data.features;
    for (i, &label) in data.labels.iter().enumerate() {
        write_f32(w, label)?;
        for e in m.row_range(i) {
            write!(w, " {}:", m.col_idx[e] as u64 + 1)?;
            write_f32(w, m.values[e])?;
        }
        w.write_all(b"\n")?;
    }
    Ok(())
}

fn parse<R: BufRead>(reader: R, path: &Path, n_features: Option<usize>) -> Result<LibSvm> {
    let mut lines = Lines::new(reader, path);
    let mut labels: Vec<f32> = Vec::new();
    let mut row_ptr: Vec<u32> = vec![0];
    let mut col_idx: Vec<u32> = Vec::new();
    let mut values: Vec<f32> = Vec::new();
    let mut row: Vec<(u32, f32)> = Vec::new();
    // Raw indices must leave room for `max + 1` columns in u32 (and for `n_features`).
    let limit = n_features.map_or(u64::from(u32::MAX) - 1, |n| n as u64);
    let mut zero_line: Option<u64> = None;
    let mut max_raw: Option<(u32, u64)> = None;

    while let Some((ln, line)) = lines.next_line()? {
        let line = match memchr(b'#', line) {
            Some(p) => &line[..p],
            None => line,
        };
        let mut it = fields(line);
        let Some(fl) = it.next() else { continue };
        let label = parse_f32(fl, "label").map_err(|m| Error::parse(path, ln, m))?;
        row.clear();
        let mut sorted = true;
        for tok in it {
            if tok.starts_with(b"qid:") {
                continue;
            }
            let Some(colon) = memchr(b':', tok) else {
                return Err(Error::parse(
                    path,
                    ln,
                    format!("expected index:value, found {}", show(tok)),
                ));
            };
            let (fi, fv) = (&tok[..colon], &tok[colon + 1..]);
            let raw = parse_u64(fi).ok_or_else(|| {
                Error::parse(
                    path,
                    ln,
                    format!("feature index {} is not a non-negative integer", show(fi)),
                )
            })?;
            if raw > limit {
                let msg = match n_features {
                    Some(n) => format!("feature index {raw} is out of range for {n} features"),
                    None => format!("feature index {raw} exceeds the u32 index range"),
                };
                return Err(Error::parse(path, ln, msg));
            }
            let v = parse_f32(fv, "feature value").map_err(|m| Error::parse(path, ln, m))?;
            let raw = raw as u32;
            if raw == 0 && zero_line.is_none() {
                zero_line = Some(ln);
            }
            if max_raw.is_none_or(|(m, _)| raw > m) {
                max_raw = Some((raw, ln));
            }
            if row.last().is_some_and(|&(p, _)| p >= raw) {
                sorted = false;
            }
            row.push((raw, v));
        }
        if !sorted {
            row.sort_unstable_by_key(|&(c, _)| c);
            if let Some(w) = row.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(Error::parse(
                    path,
                    ln,
                    format!("duplicate feature index {}", w[0].0),
                ));
            }
        }
        if col_idx.len() + row.len() > u32::MAX as usize || labels.len() >= u32::MAX as usize {
            return Err(Error::parse(path, ln, "data exceeds the u32 index range"));
        }
        labels.push(label);
        col_idx.extend(row.iter().map(|&(c, _)| c));
        values.extend(row.iter().map(|&(_, v)| v));
        row_ptr.push(col_idx.len() as u32);
    }
    if labels.is_empty() {
        return Err(Error::parse(
            path,
            lines.line() + 1,
            "no samples: expected lines `label index:value ...`",
        ));
    }
    let zero_based = zero_line.is_some();
    if !zero_based {
        col_idx.iter_mut().for_each(|c| *c -= 1);
    }
    let ncols = match (n_features, max_raw) {
        (Some(n), Some((m, ln))) if zero_based && m as usize >= n => {
            return Err(Error::parse(
                path,
                ln,
                format!(
                    "feature index {m} is out of range for {n} features (the file is 0-based: \
                     index 0 appears on line {})",
                    zero_line.unwrap_or(0)
                ),
            ));
        }
        (Some(n), _) => n,
        (None, Some((m, _))) => m as usize + usize::from(zero_based),
        (None, None) => 0,
    };
    let features = Csr::new(labels.len(), ncols, row_ptr, col_idx, values)?;
    Ok(LibSvm { labels, features })
}
