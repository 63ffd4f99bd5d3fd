//! IDX files, the MNIST format: a big-endian magic `0x000008DD` (unsigned bytes, `DD`
//! dimensions), one big-endian `u32` per dimension, then the bytes row-major.
//!
//! Images are `0x00000803` (count, rows, cols); labels are `0x00000801` (count). Errors use
//! line 0 and give the byte offset in the message.

use std::io::{Read, Write};
use std::path::Path;

use super::atomic::{io_err, write_atomically};
use super::text::{open, read_full};
use crate::sparse::Dense;
use crate::{Error, Result};

/// Magic number of an IDX file of unsigned-byte images (3 dimensions).
pub const IDX_IMAGES_MAGIC: u32 = 0x0000_0803;
/// Magic number of an IDX file of unsigned-byte labels (1 dimension).
pub const IDX_LABELS_MAGIC: u32 = 0x0000_0801;

/// A stack of `count` grayscale images of `rows × cols` pixels.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdxImages {
    /// Number of images.
    pub count: usize,
    /// Pixel rows per image.
    pub rows: usize,
    /// Pixel columns per image.
    pub cols: usize,
    /// `count * rows * cols` pixels, image after image, each row-major.
    pub pixels: Vec<u8>,
}

impl IdxImages {
    /// The pixels of image `i`, row-major. Panics if `i >= count` or `pixels` is too short.
    pub fn image(&self, i: usize) -> &[u8] {
        let n = self.rows * self.cols;
        &self.pixels[i * n..(i + 1) * n]
    }

    /// The images as a `count × (rows · cols)` dense matrix with pixels scaled to `[0, 1]`.
    pub fn to_dense(&self) -> Result<Dense> {
        let data = self.pixels.iter().map(|&p| f32::from(p) / 255.0).collect();
        Dense::new(self.count, self.rows * self.cols, data)
    }
}

/// Reads an IDX file of unsigned-byte images (magic `0x00000803`).
pub fn read_idx_images(path: impl AsRef<Path>) -> Result<IdxImages> {
    let (dims, pixels) = read_idx(path.as_ref(), IDX_IMAGES_MAGIC)?;
    Ok(IdxImages {
        count: dims[0],
        rows: dims[1],
        cols: dims[2],
        pixels,
    })
}

/// Reads an IDX file of unsigned-byte labels (magic `0x00000801`).
pub fn read_idx_labels(path: impl AsRef<Path>) -> Result<Vec<u8>> {
    Ok(read_idx(path.as_ref(), IDX_LABELS_MAGIC)?.1)
}

/// Writes `images` as an IDX file (magic `0x00000803`), replacing `path` atomically.
pub fn write_idx_images(path: impl AsRef<Path>, images: &IdxImages) -> Result<()> {
    let expected = images
        .count
        .checked_mul(images.rows)
        .and_then(|n| n.checked_mul(images.cols));
    if expected != Some(images.pixels.len()) {
        return Err(Error::invalid(
            "IDX images",
            format!(
                "{} pixels for {} images of {}×{}",
                images.pixels.len(),
                images.count,
                images.rows,
                images.cols
            ),
        ));
    }
    write_idx(
        path.as_ref(),
        IDX_IMAGES_MAGIC,
        &[images.count, images.rows, images.cols],
        &images.pixels,
    )
}

/// Writes `labels` as an IDX file (magic `0x00000801`), replacing `path` atomically.
pub fn write_idx_labels(path: impl AsRef<Path>, labels: &[u8]) -> Result<()> {
    write_idx(path.as_ref(), IDX_LABELS_MAGIC, &[labels.len()], labels)
}

fn write_idx(path: &Path, magic: u32, dims: &[usize], data: &[u8]) -> Result<()> {
    let mut header = magic.to_be_bytes().to_vec();
    for &d in dims {
        let d = u32::try_from(d).map_err(|_| {
            Error::invalid("IDX data", format!("dimension {d} does not fit in u32"))
        })?;
        header.extend_from_slice(&d.to_be_bytes());
    }
    write_atomically(path, |w| {
        w.write_all(&header)
            .and_then(|()| w.write_all(data))
            .map_err(io_err(path))
    })
}

fn describe(magic: u32) -> &'static str {
    match magic {
        IDX_IMAGES_MAGIC => "u8 images",
        IDX_LABELS_MAGIC => "u8 labels",
        _ => "unknown",
    }
}

/// Reads an unsigned-byte IDX file with `magic`: its dimensions and its data.
fn read_idx(path: &Path, magic: u32) -> Result<(Vec<usize>, Vec<u8>)> {
    let (mut reader, size) = open(path)?;
    let ndims = (magic & 0xff) as usize;
    let header_len = 4 + 4 * ndims;
    let mut header = vec![0u8; header_len];
    let got = read_full(&mut reader, &mut header).map_err(|e| Error::io(path, e))?;
    if got < 4 {
        return Err(Error::parse(
            path,
            0,
            format!(
                "truncated at byte offset {got}: the file is {} and the magic number needs 4 bytes",
                if got == 0 {
                    "empty".to_string()
                } else {
                    format!("{got} bytes")
                }
            ),
        ));
    }
    let found = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
    if found != magic {
        return Err(Error::parse(
            path,
            0,
            format!(
                "bad magic number 0x{found:08x} at byte offset 0: expected 0x{magic:08x} ({}){}",
                describe(magic),
                match describe(found) {
                    _ if found >> 16 == 0x1f8b => {
                        ", this file is gzip-compressed (decompress it first, e.g. `gunzip -k`)"
                            .to_string()
                    }
                    "unknown" => String::new(),
                    d => format!(", this file holds {d}"),
                }
            ),
        ));
    }
    if got < header_len {
        return Err(Error::parse(
            path,
            0,
            format!(
                "truncated header at byte offset {got}: {ndims} dimensions need {header_len} bytes"
            ),
        ));
    }
    let dims: Vec<usize> = header[4..]
        .chunks_exact(4)
        .map(|c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]) as usize)
        .collect();
    let len = dims
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .ok_or_else(|| {
            Error::parse(
                path,
                0,
                format!("dimensions {dims:?} overflow the address space"),
            )
        })?;
    let end = header_len as u64 + len as u64;
    if size > 0 && size < end {
        return Err(Error::parse(
            path,
            0,
            format!("truncated at byte offset {size}: dimensions {dims:?} need {end} bytes in all"),
        ));
    }
    let mut data = Vec::with_capacity(len.min(size as usize));
    let read = (&mut reader)
        .take(len as u64)
        .read_to_end(&mut data)
        .map_err(|e| Error::io(path, e))?;
    if read < len {
        return Err(Error::parse(
            path,
            0,
            format!(
                "truncated at byte offset {}: dimensions {dims:?} need {end} bytes in all",
                header_len + read
            ),
        ));
    }
    let mut extra = [0u8; 1];
    if read_full(&mut reader, &mut extra).map_err(|e| Error::io(path, e))? > 0 {
        return Err(Error::parse(
            path,
            0,
            format!("unexpected data at byte offset {end}, after the {dims:?} data ends"),
        ));
    }
    Ok((dims, data))
}
