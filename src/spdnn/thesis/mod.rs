//! The thesis's approaches to sparse DNN inference (El Masry, AUB 2021): the features Y kept
//! sparse between layers, each layer one fused kernel (multiply + bias + ReLU + clamp to 32)
//! into a dense batch buffer, then per batch a count and scan of the buffer's nonzeros, an
//! exact-size expand of the sparse output (a new buffer of exactly the nonzeros needed, the
//! old contents copied, only when they do not fit) and a flush of the buffer into it; Y_in
//! and Y_out ping-pong between layers.
//!
//! - [`Format::CsrEll`]: Y in CSR, W in ELL with column-major slots (slot t of row k at
//!   t·N + k), blocks over Y's rows.
//! - [`Format::CsrCsr`]: Y in CSR, W in CSR, blocks over Y's rows.
//! - [`Format::CscCsc`]: Y and W in CSC, blocks over W's columns: output column c of Z is
//!   Σ_k W[k, c] · Y[:, k], the same kernel with W's columns as the left operand and Y's
//!   columns (read by id) as the right one; the buffer holds whole columns of all rows.
//!
//! Work is dealt only over non-empty rows (DCSR; non-empty columns, DCSC, for CSC·CSC): the
//! flush writes the list of non-empty rows of Y_out, built on the device from the count's
//! flags and an [`ExclusiveScan`](crate::gpu::ExclusiveScan), and the next layer's batches
//! cover that list alone. In CSC·CSC the blocks go over W's columns, which are never empty,
//! so there the list only spares the empty columns of Y their (empty) reads.
//!
//! Tiling ([`Tiling`]): 1D gives each workgroup one whole row of the batch (all output
//! columns), summed in workgroup memory when the row fits there (else with f32 atomics
//! straight in the buffer); 2D gives each workgroup a tile
//! of TR rows × TC output columns, the tile's left entries staged in workgroup memory, each
//! right row entered by a binary search at the tile's first column, the sums kept in
//! workgroup memory and written to the buffer once.
//!
//! Rows are independent, so the inputs may be split into bands of rows inferred one after
//! the other through every layer (W shared, each band's Y0 uploaded once): by default the
//! bands are as large as a binding allows for a dense Y, so a sparse Y always fits one.
//!
//! The host reads two numbers back per batch (the batch's nonzeros and non-empty rows), so
//! it can size Y_out exactly as the thesis does; the price is one round trip per batch.

mod operands;
mod run;
mod stage;

use serde::Serialize;

use crate::{Error, Result};

pub use run::{ThesisPlan, ThesisRun};

/// Storage of Y and W (the thesis's three approaches).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// Y in CSR, W in ELL (column-major slots), blocks over Y's rows.
    CsrEll,
    /// Y in CSR, W in CSR, blocks over Y's rows.
    CsrCsr,
    /// Y in CSC, W in CSC, blocks over W's columns.
    CscCsc,
}

impl Format {
    /// Every format, in the thesis's order of speed (fastest first).
    pub const ALL: [Format; 3] = [Format::CsrEll, Format::CsrCsr, Format::CscCsc];

    /// The name the CLI and reports use.
    pub fn name(self) -> &'static str {
        match self {
            Format::CsrEll => "csr-ell",
            Format::CsrCsr => "csr-csr",
            Format::CscCsc => "csc-csc",
        }
    }
}

/// How a layer's work is split over workgroups.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Tiling {
    /// One workgroup per row of the batch, all output columns, sums in the buffer.
    #[serde(rename = "1d")]
    OneD,
    /// One workgroup per tile of rows × output columns, inputs staged and sums kept in
    /// workgroup memory.
    #[serde(rename = "2d")]
    TwoD,
}

impl Tiling {
    /// Both tilings.
    pub const ALL: [Tiling; 2] = [Tiling::OneD, Tiling::TwoD];

    /// "1d" or "2d".
    pub fn name(self) -> &'static str {
        match self {
            Tiling::OneD => "1d",
            Tiling::TwoD => "2d",
        }
    }
}

/// Size of the dense batch buffer.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum BufferSize {
    /// A fraction (0, 1] of a dense Y (rows × N floats): the thesis's 10% / 25% / 50%.
    Fraction(f64),
    /// Rows (columns for CSC·CSC) of the batch.
    Rows(usize),
}

/// Options of a thesis-approach inference.
#[derive(Clone, Debug)]
pub struct ThesisOptions {
    /// Storage of Y and W.
    pub format: Format,
    /// 1D or 2D tiling.
    pub tiling: Tiling,
    /// The dense batch buffer.
    pub buffer: BufferSize,
    /// Invocations per workgroup (a power of two, 32..=the device's limit).
    pub workgroup: u32,
    /// 2D: batch rows per tile TR.
    pub tile_rows: u32,
    /// 2D: output columns per tile TC (the thesis's TILE_SIZE, 512).
    pub tile_cols: u32,
    /// 1D: keep a row's sums in workgroup memory (written once, coalesced) instead of f32
    /// atomics in the buffer; `None`: when the row fits workgroup memory.
    pub row_in_workgroup: Option<bool>,
    /// Input rows per band: the rows are inferred band by band (every layer over one band,
    /// then the next), so a band's sparse Y fits one binding; `None`: the most rows whose
    /// dense Y (rows × N floats, a bound on the sparse Y's entries) fits one binding, the
    /// bands then evened out.
    pub band_rows: Option<usize>,
}

impl Default for ThesisOptions {
    fn default() -> Self {
        ThesisOptions {
            format: Format::CsrEll,
            tiling: Tiling::TwoD,
            buffer: BufferSize::Fraction(0.1),
            workgroup: 256,
            tile_rows: 4,
            tile_cols: 512,
            row_in_workgroup: None,
            band_rows: None,
        }
    }
}

impl ThesisOptions {
    /// Checks the options against the device: the error names the bad option.
    pub(crate) fn validate(&self, max_invocations: u32, wg_storage: u32) -> Result<()> {
        let wg = self.workgroup;
        if !wg.is_power_of_two() || wg < 32 || wg > max_invocations {
            return Err(Error::Option(format!(
                "workgroup of {wg} invocations: a power of two in 32..={max_invocations}"
            )));
        }
        match self.buffer {
            BufferSize::Fraction(f) if !(f > 0.0 && f <= 1.0) => {
                return Err(Error::Option(format!(
                    "buffer fraction {f} is not in (0, 1]"
                )))
            }
            BufferSize::Rows(0) => {
                return Err(Error::Option("a batch of 0 rows".into()));
            }
            _ => {}
        }
        if self.band_rows == Some(0) {
            return Err(Error::Option("a band of 0 rows".into()));
        }
        if self.tiling == Tiling::TwoD {
            if self.tile_rows == 0 || self.tile_cols == 0 {
                return Err(Error::Option(format!(
                    "tile of {} × {}: both sides must be positive",
                    self.tile_rows, self.tile_cols
                )));
            }
            let bytes = u64::from(self.tile_rows) * u64::from(self.tile_cols) * 4
                + 3 * u64::from(wg) * 4
                + 16;
            if bytes > u64::from(wg_storage) {
                return Err(Error::TooLarge {
                    what: format!(
                        "a 2D tile of {} × {} with {wg} staged entries",
                        self.tile_rows, self.tile_cols
                    ),
                    needed: format!("{bytes} bytes of workgroup memory"),
                    limit: format!("{wg_storage} bytes"),
                });
            }
        }
        Ok(())
    }
}
