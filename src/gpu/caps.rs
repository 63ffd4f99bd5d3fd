//! What the adapter can do. Kernels choose their path from these, never from the adapter name.

use serde::Serialize;

/// Capabilities and limits of the device in use.
#[derive(Clone, Debug, Serialize)]
pub struct Caps {
    /// Adapter name as the driver reports it (for reports only).
    pub adapter_name: String,
    /// Backend (Vulkan, Metal, DX12 …).
    pub backend: String,
    /// Device type (DiscreteGpu, Cpu …).
    pub device_type: String,
    /// Driver name and version.
    pub driver: String,
    /// Subgroup operations are available (`Features::SUBGROUP`).
    pub subgroups: bool,
    /// Smallest subgroup size the adapter may use.
    pub subgroup_min_size: u32,
    /// Largest subgroup size the adapter may use.
    pub subgroup_max_size: u32,
    /// `f16` in shaders (`Features::SHADER_F16`).
    pub f16: bool,
    /// Native `atomic<f32>` add on storage buffers (`Features::SHADER_FLOAT32_ATOMIC`).
    pub f32_atomics: bool,
    /// Native f32 add on workgroup memory (Vulkan's `shaderSharedFloat32AtomicAdd`): the
    /// device was opened with it and passes kernels through as SPIR-V
    /// ([`crate::gpu::GpuOptions::no_wg_f32_atomics`]). Only devices this crate opens have
    /// it; kernels built with `WG_F32_NATIVE` need it.
    pub wg_f32_atomics: bool,
    /// The `@coherent` decoration on storage buffers (`Features::MEMORY_DECORATION_COHERENT`):
    /// loads see other workgroups' stores of the same dispatch instead of a per-compute-unit
    /// cached copy (NVIDIA's L1 is not coherent across SMs).
    pub coherent: bool,
    /// Timestamp queries at pass boundaries.
    pub timestamps: bool,
    /// Timestamp queries inside compute passes.
    pub timestamps_inside_passes: bool,
    /// Nanoseconds per timestamp tick.
    pub timestamp_period_ns: f32,
    /// Workgroup (shared) memory per workgroup, in bytes.
    pub max_workgroup_storage_bytes: u32,
    /// Invocations per workgroup.
    pub max_invocations_per_workgroup: u32,
    /// Workgroups per dispatch dimension.
    pub max_workgroups_per_dimension: u32,
    /// Bytes one storage binding may cover.
    pub max_storage_binding_bytes: u64,
    /// Storage bindings must start at a multiple of this many bytes.
    pub storage_offset_alignment: u32,
    /// Bytes one buffer may hold.
    pub max_buffer_bytes: u64,
    /// Storage buffers one shader stage may bind.
    pub max_storage_buffers_per_stage: u32,
    /// Last-level cache size (bytes). wgpu cannot query it: `WGSPARSE_L2_BYTES` overrides
    /// the default (50 MB for discrete GPUs, as on Hopper; 4 MB otherwise).
    pub l2_bytes: u64,
    /// The per-compute-unit cache (bytes). wgpu cannot query it: `WGSPARSE_L1_BYTES`
    /// overrides the default (256 KiB for discrete GPUs, Hopper's combined L1 and shared
    /// memory per SM; 32 KiB otherwise).
    pub l1_bytes: u64,
    /// Loop iterations one invocation may run before the device silently ends its loops
    /// (llvmpipe: 65,535 in all), measured when the device opens ([`crate::gpu::loop_cap`]);
    /// `None` on GPUs and on devices that ran the probe's loop whole.
    pub loop_cap: Option<u32>,
}

impl Caps {
    pub(crate) fn from_parts(
        info: &wgpu::AdapterInfo,
        features: wgpu::Features,
        limits: &wgpu::Limits,
        timestamp_period_ns: f32,
    ) -> Self {
        let discrete = info.device_type == wgpu::DeviceType::DiscreteGpu;
        let from_env = |name: &str| -> Option<u64> {
            std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
        };
        let l2_bytes =
            from_env("WGSPARSE_L2_BYTES").unwrap_or(if discrete { 50 << 20 } else { 4 << 20 });
        let l1_bytes =
            from_env("WGSPARSE_L1_BYTES").unwrap_or(if discrete { 256 << 10 } else { 32 << 10 });
        let subgroups = features.contains(wgpu::Features::SUBGROUP);
        Caps {
            adapter_name: info.name.clone(),
            backend: format!("{:?}", info.backend),
            device_type: format!("{:?}", info.device_type),
            driver: format!("{} {}", info.driver, info.driver_info)
                .trim()
                .to_string(),
            subgroups,
            subgroup_min_size: if subgroups { info.subgroup_min_size } else { 1 },
            subgroup_max_size: if subgroups { info.subgroup_max_size } else { 1 },
            f16: features.contains(wgpu::Features::SHADER_F16),
            f32_atomics: features.contains(wgpu::Features::SHADER_FLOAT32_ATOMIC),
            wg_f32_atomics: false,
            coherent: features.contains(wgpu::Features::MEMORY_DECORATION_COHERENT),
            timestamps: features.contains(wgpu::Features::TIMESTAMP_QUERY),
            timestamps_inside_passes: features
                .contains(wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES),
            timestamp_period_ns,
            max_workgroup_storage_bytes: limits.max_compute_workgroup_storage_size,
            max_invocations_per_workgroup: limits.max_compute_invocations_per_workgroup,
            max_workgroups_per_dimension: limits.max_compute_workgroups_per_dimension,
            max_storage_binding_bytes: limits.max_storage_buffer_binding_size,
            storage_offset_alignment: limits.min_storage_buffer_offset_alignment,
            max_buffer_bytes: limits.max_buffer_size,
            max_storage_buffers_per_stage: limits.max_storage_buffers_per_shader_stage,
            l2_bytes,
            l1_bytes,
            loop_cap: None,
        }
    }

    /// Whether a virtual subgroup of `lanes` lanes can reduce with subgroup shuffles: needs
    /// subgroup ops and a guaranteed subgroup size of at least `lanes`.
    pub fn shuffle_fits(&self, lanes: u32) -> bool {
        self.subgroups && lanes <= self.subgroup_min_size
    }
}
