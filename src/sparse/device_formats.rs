//! Device twins of COO, CSC, ELL, DCSR and the CSR+ELL hybrid: the host arrays uploaded
//! unchanged (after validation), and read back into a validated host matrix.

use crate::gpu::{Gpu, GpuBuffer};
use crate::sparse::{Coo, Csc, CsrEll, Dcsr, Ell, GpuCsr};
use crate::Result;

/// Declares a device twin whose fields are the host format's dimensions and arrays, in the
/// order of the host format's `new`.
macro_rules! device_twin {
    ($(#[$doc:meta])* $gpu:ident for $host:ident
        { dims: [$($dim:ident),*], arrays: [$($arr:ident: $t:ty),*] }) => {
        $(#[$doc])*
        pub struct $gpu {
            $(
                #[doc = concat!("`", stringify!($dim), "` of the host matrix.")]
                pub $dim: usize,
            )*
            $(
                #[doc = concat!("`", stringify!($arr), "` of the host matrix, on the device.")]
                pub $arr: GpuBuffer<$t>,
            )*
        }

        impl $gpu {
            /// Validates and uploads a host matrix.
            pub fn upload(gpu: &Gpu, m: &$host) -> Result<Self> {
                m.validate()?;
                Ok($gpu {
                    $($dim: m.$dim,)*
                    $($arr: GpuBuffer::upload(
                        gpu,
                        concat!(stringify!($host), ".", stringify!($arr)),
                        &m.$arr,
                    )?,)*
                })
            }

            /// Reads the matrix back (validated).
            pub fn read(&self, gpu: &Gpu) -> Result<$host> {
                $host::new($(self.$dim,)* $(self.$arr.read(gpu)?,)*)
            }
        }
    };
}

device_twin!(
    /// A COO matrix on the device.
    GpuCoo for Coo { dims: [nrows, ncols], arrays: [rows: u32, cols: u32, values: f32] }
);
device_twin!(
    /// A CSC matrix on the device.
    GpuCsc for Csc { dims: [nrows, ncols], arrays: [col_ptr: u32, row_idx: u32, values: f32] }
);
device_twin!(
    /// An ELL matrix on the device (row-major `nrows × width` slots, padding included).
    GpuEll for Ell { dims: [nrows, ncols, width], arrays: [col_idx: u32, values: f32] }
);
device_twin!(
    /// A DCSR matrix on the device (only non-empty rows stored).
    GpuDcsr for Dcsr {
        dims: [nrows, ncols],
        arrays: [row_ids: u32, row_ptr: u32, col_idx: u32, values: f32]
    }
);

/// The CSR+ELL hybrid on the device: its ELL part and its CSR overflow.
pub struct GpuCsrEll {
    /// The regular part.
    pub ell: GpuEll,
    /// Entries beyond the ELL width.
    pub overflow: GpuCsr,
}

impl GpuCsrEll {
    /// Validates and uploads a host hybrid matrix.
    pub fn upload(gpu: &Gpu, m: &CsrEll) -> Result<Self> {
        m.validate()?;
        Ok(GpuCsrEll {
            ell: GpuEll::upload(gpu, &m.ell)?,
            overflow: GpuCsr::upload(gpu, &m.overflow)?,
        })
    }

    /// Reads the matrix back (validated).
    pub fn read(&self, gpu: &Gpu) -> Result<CsrEll> {
        CsrEll::new(self.ell.read(gpu)?, self.overflow.read(gpu)?)
    }
}
