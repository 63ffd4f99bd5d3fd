//! # wgsparse
//!
//! Sparse machine-learning GPU kernels written as WGSL compute shaders and dispatched through
//! wgpu: fast on NVIDIA GPUs through Vulkan, and unchanged on any Vulkan/Metal/DX12 adapter,
//! including the Mesa software Vulkan device (lavapipe) on machines with no GPU.
//!
//! Every system follows one rhythm: an options struct → `Plan::new` (validate, preprocess,
//! pick the variant) → `run` / `record` many times → read back only what the caller asks for.
//!
//! ```no_run
//! # fn main() -> wgsparse::Result<()> {
//! let gpu = wgsparse::Gpu::new()?;
//! let s = wgsparse::gen::power_law(1000, 800, 20_000, 1.1, 7)?;
//! let a = wgsparse::gen::dense_uniform(1000, 64, 1);
//! let b = wgsparse::gen::dense_uniform(800, 64, 2);
//! let plan = wgsparse::sddmm::Plan::new(&gpu, &s, 64, wgsparse::sddmm::Options::default())?;
//! let p = plan.run_host(&gpu, &a, &b)?;
//! assert_eq!(p.len(), s.nnz());
//! # Ok(()) }
//! ```
#![warn(missing_docs)]

pub mod error;
pub mod fused;
pub mod gen;
pub mod gpu;
pub mod io;
pub mod limits;
pub mod mf;
pub mod report;
pub mod sddmm;
pub mod sparse;
pub mod spdnn;
pub mod tune;
pub mod wide;

pub use error::{Error, Result};
pub use gpu::{Caps, Gpu};
