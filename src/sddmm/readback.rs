//! Pieced read-back of a device's P: its part read in pieces of rows through two staging
//! buffers in rotation, so the device copies (and the buffer maps) piece i + 1 while the host
//! copies piece i into the caller's array. The same values as the whole read-back, moved in
//! smaller steps.

use std::ops::Range;
use std::time::Instant;

use crate::gpu::{copy_parallel, Gpu, GpuBuffer, StagedCopy, Staging};
use crate::{Error, Result};

/// How P comes back from a device when an iteration reads it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// The device's whole part copied into one read buffer, mapped, then copied into the
    /// caller's array.
    #[default]
    Whole,
    /// The part read in pieces of whole rows (a contiguous range of its CSR values each) of
    /// at most `piece_bytes` (a longer row is a piece of its own), through two read buffers
    /// in rotation: piece i + 1's device copy and map proceed while the host copies piece i.
    /// Row cut (and one device) only: the column cut's gather interleaves every part's rows.
    Pieced {
        /// Bytes of P one piece holds at most.
        piece_bytes: usize,
    },
}

impl ReadMode {
    /// Pieced read-back at its default piece size (a few host threads' worth of copy).
    pub const PIECED: ReadMode = ReadMode::Pieced {
        piece_bytes: 32 << 20,
    };

    /// `whole` or `pieced`, as reports name it.
    pub fn name(&self) -> &'static str {
        match self {
            ReadMode::Whole => "whole",
            ReadMode::Pieced { .. } => "pieced",
        }
    }
}

/// The ranges of CSR values of consecutive runs of rows (`row_ptr`'s rows), each of at most
/// `cap` values unless it is one longer row; empty rows join their neighbours, and an S
/// without nonzeros has no piece.
pub(crate) fn row_pieces(row_ptr: &[u32], cap: usize) -> Vec<Range<usize>> {
    let cap = cap.max(1);
    let mut out = Vec::new();
    let mut start = 0usize;
    for w in row_ptr.windows(2) {
        let (s, e) = (w[0] as usize, w[1] as usize);
        // Row [s, e) would overflow the piece that started at `start`: close it first.
        if e - start > cap && s > start {
            out.push(start..s);
            start = s;
        }
    }
    let end = row_ptr.last().map_or(0, |&e| e as usize);
    if end > start {
        out.push(start..end);
    }
    out
}

/// A device's read buffers for a pieced read-back of its output.
pub(crate) struct PiecedRead {
    pieces: Vec<Range<usize>>,
    /// Read buffers in rotation (two, one for a single piece, none without nonzeros).
    ring: Vec<Staging<f32>>,
}

impl PiecedRead {
    /// Read buffers for `row_ptr`'s S (the device's part) in pieces of at most `piece_bytes`.
    pub(crate) fn new(gpu: &Gpu, row_ptr: &[u32], piece_bytes: usize) -> Result<Self> {
        let pieces = row_pieces(row_ptr, piece_bytes / std::mem::size_of::<f32>());
        let cap = pieces.iter().map(|r| r.len()).max().unwrap_or(0);
        let ring = (0..pieces.len().min(2))
            .map(|_| Staging::new(gpu, "sddmm.resident.p.pieces", cap))
            .collect::<Result<_>>()?;
        Ok(PiecedRead { pieces, ring })
    }

    /// Reads `out` into `p` (as long), piece by piece; returns when the last piece's device
    /// copy was done and when it was mapped (the host copies of the earlier pieces happen
    /// before, hidden behind the device's later copies). Allocates nothing. On an error (a
    /// lost device) `p` may be partly overwritten, and the buffers still in flight are
    /// waited for and unmapped, ready for the next read.
    pub(crate) fn read(
        &self,
        gpu: &Gpu,
        out: &GpuBuffer<f32>,
        p: &mut [f32],
        threads: usize,
    ) -> Result<[Instant; 2]> {
        if p.len() != out.len() || self.pieces.last().is_some_and(|r| r.end != p.len()) {
            return Err(Error::Shape(format!(
                "a pieced read of {} values into {}",
                out.len(),
                p.len()
            )));
        }
        // The copy in flight in each ring buffer: piece i goes through buffer i % ring.len().
        let mut queued: [Option<StagedCopy>; 2] = [None, None];
        let result = self.read_queued(gpu, out, p, threads, &mut queued);
        if result.is_err() {
            for (buf, copy) in self.ring.iter().zip(&mut queued) {
                if let Some(copy) = copy.take() {
                    // The wait's `Ready`, dropped at once, unmaps the buffer.
                    let _ = buf.wait(gpu, copy);
                }
            }
        }
        result
    }

    fn read_queued(
        &self,
        gpu: &Gpu,
        out: &GpuBuffer<f32>,
        p: &mut [f32],
        threads: usize,
        queued: &mut [Option<StagedCopy>; 2],
    ) -> Result<[Instant; 2]> {
        let n = self.ring.len();
        for (j, (buf, r)) in self.ring.iter().zip(&self.pieces).enumerate() {
            queued[j] = Some(buf.copy_from(gpu, out, r.clone())?);
        }
        let mut marks = [Instant::now(); 2];
        for (i, r) in self.pieces.iter().enumerate() {
            let buf = &self.ring[i % n];
            let copy = queued[i % n].take().expect("one copy queued per piece");
            let last = i + 1 == self.pieces.len();
            if last {
                buf.wait_copied(gpu, &copy)?;
                marks[0] = Instant::now();
            }
            let ready = buf.wait(gpu, copy)?;
            if last {
                marks[1] = Instant::now();
            }
            // The view unmaps the buffer when dropped, before its next copy is queued.
            copy_parallel(&mut p[r.clone()], &buf.view(ready)?, threads);
            if let Some(next) = self.pieces.get(i + n) {
                queued[i % n] = Some(buf.copy_from(gpu, out, next.clone())?);
            }
        }
        Ok(marks)
    }
}

#[cfg(test)]
mod tests {
    use super::row_pieces;

    #[test]
    fn pieces_are_whole_rows_within_the_cap_and_cover_every_value() {
        // Rows of 3, 0, 5, 1, 9, 0, 2 values.
        let rp = [0u32, 3, 3, 8, 9, 18, 18, 20];
        assert_eq!(row_pieces(&rp, 6), vec![0..3, 3..9, 9..18, 18..20]);
        assert_eq!(row_pieces(&rp, 100), vec![0..20]);
        assert_eq!(row_pieces(&rp, 1), vec![0..3, 3..8, 8..9, 9..18, 18..20]);
        assert!(row_pieces(&[0, 0, 0], 4).is_empty());
        assert!(row_pieces(&[0], 4).is_empty());
    }
}
