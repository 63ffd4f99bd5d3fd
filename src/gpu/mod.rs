//! The runtime: the only place that creates wgpu objects.
//!
//! [`Gpu`] owns the device and queue and a pipeline cache; [`GpuBuffer`] moves typed data;
//! [`Batch`] records many dispatches and submits them in one compute pass; [`KernelSpec`]
//! names a shader, its defines and override constants.

mod batch;
mod buffer;
pub mod calibrate;
mod caps;
mod context;
mod copy;
mod devices;
mod kernels;
pub mod loop_cap;
pub mod preprocess;
mod residency;
mod scan;
pub mod shaders;
pub(crate) mod spirv_wg_adds;
mod staging;
mod timer;
mod upload;
#[cfg(not(target_vendor = "apple"))]
mod vulkan_device;
mod warm;
pub mod workgroup_memory;

pub use batch::{Batch, Mark, PhaseTime, PhaseTimes, Recording};
pub use buffer::GpuBuffer;
pub use caps::Caps;
pub use context::{Gpu, GpuOptions};
pub use copy::WordCopy;
pub use devices::{each, each_with};
pub use kernels::{Binding, Kernel, KernelSpec};
pub use residency::{Residency, Source as ResidencySource};
pub use scan::ExclusiveScan;
pub(crate) use spirv_wg_adds::DEFINE as WG_F32_NATIVE;
pub use staging::{Ready, StagedCopy, StagedView, Staging};
pub use timer::{
    median_warm, timed_warm, timed_warm_report, GpuTime, WarmUp, COLD_WARM_UP_SECONDS,
    IDLE_SECONDS, WARM_UP_MAX_SECONDS, WARM_UP_SECONDS,
};
pub(crate) use upload::SendWrite;
pub use upload::{copy_parallel, copy_threads, host_cores, write_parallel, Upload};
pub use warm::warm_clocks;
