//! Shader registry and pipeline cache: (shader name, defines, override constants) → pipeline
//! with an explicit bind-group layout.

use std::sync::Arc;

use crate::gpu::{preprocess, spirv_wg_adds, workgroup_memory, Gpu};
use crate::{Error, Result};

/// How a kernel binds each buffer; binding `i` of group 0 is entry `i` of the list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Binding {
    /// `var<uniform>`.
    Uniform,
    /// `var<storage, read>`.
    Read,
    /// `var<storage, read_write>`.
    ReadWrite,
}

/// A request for a compiled kernel.
#[derive(Clone, Debug)]
pub struct KernelSpec<'a> {
    /// Shader name, its path under `shaders/` without `.wgsl` (e.g. `sddmm/sm_l2`).
    pub name: &'a str,
    /// Preprocessor defines (features, element type).
    pub defines: Vec<&'a str>,
    /// WGSL `override` constants (tile sizes, workgroup size …).
    pub constants: Vec<(&'a str, f64)>,
    /// The binding list of group 0.
    pub bindings: &'a [Binding],
}

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct KernelKey {
    name: String,
    defines: Vec<String>,
    constants: Vec<(String, u64)>,
    sources: Vec<(String, String)>,
}

/// A compiled compute pipeline and its bind-group layout.
pub struct Kernel {
    /// Pipeline label, e.g. `sddmm.sm_l2`.
    pub label: String,
    pub(crate) pipeline: wgpu::ComputePipeline,
    layout: wgpu::BindGroupLayout,
    bindings: Vec<Binding>,
}

impl Kernel {
    /// Makes a bind group from whole buffers, one per declared binding, in order.
    pub fn bind(&self, gpu: &Gpu, buffers: &[&wgpu::Buffer]) -> Result<wgpu::BindGroup> {
        let ranges: Vec<wgpu::BufferBinding> = buffers
            .iter()
            .map(|b| b.as_entire_buffer_binding())
            .collect();
        self.bind_ranges(gpu, &ranges)
    }

    /// Makes a bind group from buffer ranges, one per declared binding, in order. Fails with
    /// [`Error::TooLarge`] when a storage range exceeds one binding and with [`Error::Gpu`]
    /// when an offset is not a multiple of the adapter's storage offset alignment.
    pub fn bind_ranges(
        &self,
        gpu: &Gpu,
        buffers: &[wgpu::BufferBinding<'_>],
    ) -> Result<wgpu::BindGroup> {
        if buffers.len() != self.bindings.len() {
            return Err(Error::Gpu {
                kernel: self.label.clone(),
                message: format!(
                    "{} buffers bound, the kernel declares {}",
                    buffers.len(),
                    self.bindings.len()
                ),
            });
        }
        let caps = &gpu.caps;
        for (i, (range, kind)) in buffers.iter().zip(&self.bindings).enumerate() {
            if matches!(kind, Binding::Uniform) {
                continue;
            }
            let size = range
                .size
                .map_or(range.buffer.size() - range.offset, |s| s.get());
            if size > caps.max_storage_binding_bytes {
                return Err(Error::TooLarge {
                    what: format!("binding {i} of {}", self.label),
                    needed: format!("{size} bytes in one storage binding"),
                    limit: format!(
                        "{} bytes on {}",
                        caps.max_storage_binding_bytes, caps.adapter_name
                    ),
                });
            }
            if !range
                .offset
                .is_multiple_of(caps.storage_offset_alignment.max(1) as u64)
            {
                return Err(Error::Gpu {
                    kernel: self.label.clone(),
                    message: format!(
                        "binding {i} starts at byte {}, not a multiple of {}",
                        range.offset, caps.storage_offset_alignment
                    ),
                });
            }
        }
        let entries: Vec<wgpu::BindGroupEntry> = buffers
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupEntry {
                binding: i as u32,
                resource: wgpu::BindingResource::Buffer(b.clone()),
            })
            .collect();
        gpu.scoped(&self.label, || {
            gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(&self.label),
                layout: &self.layout,
                entries: &entries,
            })
        })
    }
}

impl Gpu {
    /// Returns the cached pipeline for `spec`, compiling it on first use. Preprocessing and
    /// naga validation errors carry naga's annotated message; wgpu errors name the kernel.
    pub fn kernel(&self, spec: &KernelSpec) -> Result<Arc<Kernel>> {
        self.kernel_with(spec, &[])
    }

    /// [`Gpu::kernel`] with extra WGSL sources standing for shaders of their names (see
    /// [`preprocess::preprocess_with`]): how WGSL from outside the crate joins a kernel.
    pub fn kernel_with(&self, spec: &KernelSpec, sources: &[(&str, &str)]) -> Result<Arc<Kernel>> {
        let mut defines: Vec<String> = spec.defines.iter().map(|d| d.to_string()).collect();
        defines.sort();
        let key = KernelKey {
            name: spec.name.to_string(),
            defines,
            constants: spec
                .constants
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_bits()))
                .collect(),
            sources: sources
                .iter()
                .map(|(n, s)| (n.to_string(), s.to_string()))
                .collect(),
        };
        if let Some(k) = self.kernels.lock().expect("kernel cache").get(&key) {
            return Ok(k.clone());
        }
        let kernel = Arc::new(self.compile(spec, sources)?);
        self.kernels
            .lock()
            .expect("kernel cache")
            .insert(key, kernel.clone());
        Ok(kernel)
    }

    fn compile(&self, spec: &KernelSpec, sources: &[(&str, &str)]) -> Result<Kernel> {
        let label = spec.name.replace('/', ".");
        let wgsl = preprocess::preprocess_with(spec.name, &spec.defines, sources)?;
        let (naga_module, naga_info) = preprocess::validate_with_info(&label, &wgsl)?;
        // Checked before the driver sees it: wgpu does not, and a driver may hang on it.
        let wg_bytes = workgroup_memory::workgroup_bytes(&label, &naga_module, &spec.constants)?;
        let wg_limit = self.caps.max_workgroup_storage_bytes as u64;
        if wg_bytes > wg_limit {
            return Err(Error::TooLarge {
                what: format!("kernel {label}'s workgroup memory"),
                needed: format!("{wg_bytes} bytes"),
                limit: format!("{wg_limit} bytes on {}", self.caps.adapter_name),
            });
        }
        let entries: Vec<wgpu::BindGroupLayoutEntry> = spec
            .bindings
            .iter()
            .enumerate()
            .map(|(i, b)| wgpu::BindGroupLayoutEntry {
                binding: i as u32,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: match b {
                        Binding::Uniform => wgpu::BufferBindingType::Uniform,
                        Binding::Read => wgpu::BufferBindingType::Storage { read_only: true },
                        Binding::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                    },
                    has_dynamic_offset: false,
                    min_binding_size: None,
                },
                count: None,
            })
            .collect();
        let native_wg_adds = spec.defines.contains(&spirv_wg_adds::DEFINE);
        let spirv = if native_wg_adds {
            if !self.caps.wg_f32_atomics {
                return Err(Error::Unsupported(format!(
                    "kernel {label}: native f32 adds in workgroup memory on {}",
                    self.caps.adapter_name
                )));
            }
            Some(spirv_wg_adds::compile(
                &label,
                (&naga_module, &naga_info),
                &spec.constants,
                self.checked_shaders,
            )?)
        } else {
            None
        };
        self.scoped(&label, || {
            let desc = wgpu::ShaderModuleDescriptor {
                label: Some(&label),
                source: wgpu::ShaderSource::Wgsl(wgsl.into()),
            };
            let module = if let Some(words) = spirv {
                // SAFETY: the words are naga's own SPIR-V for this kernel, validated as WGSL,
                // with the one rewrite `spirv_wg_adds` makes (refused unless its uses are
                // the adds, loads and stores it rewrites); the device has the feature the
                // rewrite needs (checked above).
                unsafe {
                    self.device.create_shader_module_passthrough(
                        wgpu::ShaderModuleDescriptorPassthrough {
                            label: Some(&label),
                            entry_points: std::borrow::Cow::Owned(vec![
                                wgpu::PassthroughShaderEntryPoint {
                                    name: "main".into(),
                                    // Unused for SPIR-V.
                                    workgroup_size: (0, 0, 0),
                                },
                            ]),
                            spirv: Some(words.into()),
                            ..Default::default()
                        },
                    )
                }
            } else if self.checked_shaders {
                self.device.create_shader_module(desc)
            } else {
                // SAFETY: every index a kernel uses is validated on the host at upload
                // (Plan::new checks ranges and shapes) and kernels guard their own extents,
                // so naga's per-access bounds checks are redundant.
                unsafe {
                    self.device
                        .create_shader_module_trusted(desc, wgpu::ShaderRuntimeChecks::unchecked())
                }
            };
            let layout = self
                .device
                .create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
                    label: Some(&label),
                    entries: &entries,
                });
            let pipeline_layout =
                self.device
                    .create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
                        label: Some(&label),
                        bind_group_layouts: &[Some(&layout)],
                        immediate_size: 0,
                    });
            let pipeline = self
                .device
                .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                    label: Some(&label),
                    layout: Some(&pipeline_layout),
                    module: &module,
                    entry_point: Some("main"),
                    compilation_options: wgpu::PipelineCompilationOptions {
                        // SPIR-V passed through has its overrides set already.
                        constants: if native_wg_adds { &[] } else { &spec.constants },
                        zero_initialize_workgroup_memory: false,
                    },
                    cache: None,
                });
            Kernel {
                label: label.clone(),
                pipeline,
                layout,
                bindings: spec.bindings.to_vec(),
            }
        })
    }

    /// A uniform buffer holding `value` (kernel parameters).
    pub fn uniform<T: bytemuck::Pod>(&self, label: &str, value: &T) -> wgpu::Buffer {
        use wgpu::util::DeviceExt;
        self.device
            .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::bytes_of(value),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            })
    }

    /// Overwrites the bytes of `value` at byte `offset` of a uniform buffer made by
    /// [`Gpu::uniform`] (e.g. one field, at `std::mem::offset_of!`); the write is queued
    /// before the next submission's work.
    pub fn write_uniform_at<T: bytemuck::Pod>(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        value: &T,
    ) {
        self.queue
            .write_buffer(buffer, offset, bytemuck::bytes_of(value));
    }

    /// A dispatch grid for `groups` workgroups: 1D when it fits, else 2D with the x extent
    /// capped; kernels recover the linear id as `wid.y * num_workgroups.x + wid.x` and skip
    /// ids ≥ `groups`.
    pub fn grid(&self, groups: u32) -> Result<[u32; 3]> {
        let max = self.caps.max_workgroups_per_dimension.max(1);
        if groups <= max {
            return Ok([groups, 1, 1]);
        }
        let y = groups.div_ceil(max);
        if y > max {
            return Err(Error::TooLarge {
                what: "dispatch".into(),
                needed: format!("{groups} workgroups"),
                limit: format!("{max}² workgroups"),
            });
        }
        Ok([max, y, 1])
    }
}
