//! Inputs and networks of the sparse DNN: GraphChallenge files (1-based TSV weights
//! `n{N}-l{k}.tsv`, inputs `sparse-images-{N}.tsv`, categories one row per line), IDX images
//! resized to √N × √N and thresholded, and generated networks and inputs.

use std::io::BufRead;
use std::path::Path;

use rand::{Rng, SeedableRng};

use crate::gen::radix_net_layer;
use crate::io::{read_graphchallenge_tsv, IdxImages};
use crate::sparse::Csr;
use crate::spdnn::Network;
use crate::{limits, Error, Result};

/// Nonzeros per row of the challenge's layers.
pub const PER_ROW: usize = 32;
/// Value of every weight of a generated layer (1/16, as the challenge's layers).
pub const WEIGHT: f32 = 1.0 / 16.0;

/// A network of `layers` RadiX-Net-like layers (32 nonzeros per row and per column, all
/// 1/16; fewer per row when `n < 32`), seeded, with bias `bias`.
pub fn generated_network(n: usize, layers: usize, bias: f32, seed: u64) -> Result<Network> {
    let per_row = PER_ROW.min(n);
    // Layers are independent (each its own seed): generated on every core.
    let ws = crate::sparse::bucket::par_map(layers, |l| {
        radix_net_layer(n, per_row, WEIGHT, seed.wrapping_add(l as u64 * 7919))
    })
    .into_iter()
    .collect::<Result<Vec<_>>>()?;
    Network::new(n, ws, bias)
}

/// Reads layers `dir/n{n}-l{k}.tsv` for k = 1..=layers (the error names the file and line).
pub fn read_network(dir: &Path, n: usize, layers: usize, bias: f32) -> Result<Network> {
    let ws = (1..=layers)
        .map(|k| read_graphchallenge_tsv(dir.join(format!("n{n}-l{k}.tsv")), n, n))
        .collect::<Result<Vec<_>>>()?;
    Network::new(n, ws, bias)
}

/// `rows × n` binary inputs, each entry 1 with probability `density`, seeded.
pub fn random_inputs(rows: usize, n: usize, density: f64, seed: u64) -> Result<Csr> {
    if !(0.0..=1.0).contains(&density) {
        return Err(Error::Option(format!(
            "input density {density} is not in [0, 1]"
        )));
    }
    // The expected entries (u32 column and f32 value each) and the row offsets are checked
    // before any is drawn: `rows` comes from the command line and may be in the billions.
    let expected = rows as f64 * n as f64 * density;
    if expected > u32::MAX as f64 {
        return Err(Error::Option(format!(
            "{rows} random input rows × {n} neurons at density {density:.3} expect {expected:.0} \
             nonzeros, beyond the u32 index range ({})",
            u32::MAX
        )));
    }
    let what = format!("{rows} random input rows");
    limits::check_host(&what, expected as u64 * 8 + (rows as u64 + 1) * 4)?;
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut row_ptr = limits::try_with_capacity(&what, rows + 1)?;
    row_ptr.push(0u32);
    let mut col_idx = limits::try_with_capacity(&what, expected as usize)?;
    for _ in 0..rows {
        for j in 0..n {
            if rng.random_bool(density) {
                col_idx.push(j as u32);
            }
        }
        let end = u32::try_from(col_idx.len())
            .map_err(|_| Error::Option(format!("{what}: more than {} nonzeros drawn", u32::MAX)))?;
        row_ptr.push(end);
    }
    let values = limits::try_vec(&what, col_idx.len(), 1.0f32)?;
    Csr::new(rows, n, row_ptr, col_idx, values)
}

/// Images `first .. first + rows` of `images`, each resized to √n × √n and thresholded as
/// [`idx_inputs`] does (row 0 of the result is image `first`): one piece of a run split by
/// input rows. An error when the range passes the file's images, before anything is built.
pub fn idx_inputs_range(
    images: &IdxImages,
    n: usize,
    first: usize,
    rows: usize,
    threshold: u8,
) -> Result<Csr> {
    if first.checked_add(rows).is_none_or(|end| end > images.count) {
        return Err(Error::Option(format!(
            "input rows {first} .. {first} + {rows} pass the IDX file's {} images \
             (--first-row + --rows must be at most {})",
            images.count, images.count
        )));
    }
    idx_images_to_rows(images, n, first..first + rows, threshold)
}

/// The first `rows` images (all when `None`), each resized to √n × √n by nearest neighbour
/// and thresholded: a pixel above `threshold` becomes 1. `n` must be a perfect square.
pub fn idx_inputs(images: &IdxImages, n: usize, rows: Option<usize>, threshold: u8) -> Result<Csr> {
    let count = rows.unwrap_or(images.count).min(images.count);
    idx_images_to_rows(images, n, 0..count, threshold)
}

/// Images `range` resized to √n × √n by nearest neighbour and thresholded, one row each.
fn idx_images_to_rows(
    images: &IdxImages,
    n: usize,
    range: std::ops::Range<usize>,
    threshold: u8,
) -> Result<Csr> {
    let side = (n as f64).sqrt().round() as usize;
    if side * side != n {
        return Err(Error::Option(format!(
            "{n} neurons is not a square: IDX images need √N × √N"
        )));
    }
    let count = range.len();
    let mut row_ptr = vec![0u32];
    let mut col_idx = Vec::new();
    for i in range {
        let img = images.image(i);
        for r in 0..side {
            let sr = r * images.rows / side;
            for c in 0..side {
                let sc = c * images.cols / side;
                if img[sr * images.cols + sc] > threshold {
                    col_idx.push((r * side + c) as u32);
                }
            }
        }
        row_ptr.push(col_idx.len() as u32);
    }
    let values = vec![1.0f32; col_idx.len()];
    Csr::new(count, n, row_ptr, col_idx, values)
}

/// Reads GraphChallenge inputs (1-based `row<TAB>col<TAB>value`) as `rows × n`.
pub fn read_inputs_tsv(path: &Path, rows: usize, n: usize) -> Result<Csr> {
    read_graphchallenge_tsv(path, rows, n)
}

/// Reads a categories file: one 1-based row index per line (blank lines skipped), each in
/// `1..=rows`; returns them 0-based, sorted, without duplicates. The error names the line.
pub fn read_categories(path: &Path, rows: usize) -> Result<Vec<u32>> {
    read_categories_range(path, rows, 0..rows)
}

/// Reads the part of a categories file (one 1-based row index per line, each in
/// `1..=total`) that falls in the 0-based input rows `range`, numbered from the range's
/// start (row `range.start` is 0), sorted, without duplicates: the truth of a run over
/// those rows alone. Rows of the file outside `range` are skipped; rows beyond `total`
/// are an error naming the line.
pub fn read_categories_range(
    path: &Path,
    total: usize,
    range: std::ops::Range<usize>,
) -> Result<Vec<u32>> {
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    let mut out = Vec::new();
    for (ln, line) in std::io::BufReader::new(file).lines().enumerate() {
        let line = line.map_err(|e| Error::io(path, e))?;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        match t.parse::<u64>() {
            Ok(i) if i >= 1 && i <= total as u64 => {
                let r = (i - 1) as usize;
                if range.contains(&r) {
                    out.push((r - range.start) as u32);
                }
            }
            Ok(i) => {
                return Err(Error::parse(
                    path,
                    ln as u64 + 1,
                    format!("row {i} is out of range 1..={total} (indices are 1-based)"),
                ))
            }
            Err(_) => {
                return Err(Error::parse(
                    path,
                    ln as u64 + 1,
                    format!("`{t}` is not a row index"),
                ))
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Writes categories (0-based) as one 1-based row index per line.
pub fn write_categories(path: &Path, categories: &[u32]) -> Result<()> {
    let text: String = categories.iter().map(|c| format!("{}\n", c + 1)).collect();
    std::fs::write(path, text).map_err(|e| Error::io(path, e))
}
