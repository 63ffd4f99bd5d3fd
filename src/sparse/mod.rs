//! Host sparse formats (COO, CSR, CSC, ELL, DCSR, CSR+ELL hybrid), dense row-major matrices,
//! their validation and conversions, and device-resident twins.
//!
//! Indices are `u32` (the GPU's native index width); values are `f32`. Every constructor that
//! takes raw arrays validates them and names the first offending entry.

pub mod bands;
pub(crate) mod bucket;
mod convert;
mod coo;
mod csc;
mod csr;
mod csr_ell;
mod dcsr;
mod dense;
mod device;
mod device_formats;
mod ell;
pub mod order;
pub mod panels;

pub use coo::Coo;
pub use csc::Csc;
pub use csr::Csr;
pub use csr_ell::CsrEll;
pub use dcsr::Dcsr;
pub use dense::Dense;
pub use device::{GpuCsr, GpuDense};
pub use device_formats::{GpuCoo, GpuCsc, GpuCsrEll, GpuDcsr, GpuEll};
pub use ell::{Ell, ELL_PAD};

/// Exclusive prefix sums of `counts` with the total appended (`counts.len() + 1` values):
/// CSR row offsets from row lengths, bucket starts from bucket sizes. The total must fit `u32`.
pub(crate) fn offsets(counts: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(counts.len() + 1);
    let mut acc = 0u32;
    out.push(0);
    for &c in counts {
        acc += c;
        out.push(acc);
    }
    out
}

/// Fails with an [`crate::Error::Invalid`] naming the first non-finite value.
pub(crate) fn check_finite(what: &str, values: &[f32]) -> crate::Result<()> {
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(crate::Error::invalid(
            what,
            format!("value {} at entry {i} is not finite", values[i]),
        )),
    }
}
