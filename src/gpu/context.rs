//! Adapter selection and device creation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::gpu::kernels::{Kernel, KernelKey};
use crate::gpu::{loop_cap, Caps};
use crate::{Error, Result};

/// How [`Gpu::new_with`] picks and configures a device.
#[derive(Clone, Debug, Default)]
pub struct GpuOptions {
    /// Create shader modules with naga's runtime bounds checks (slower; for debugging).
    /// `WGSPARSE_CHECKED=1` turns it on too.
    pub checked_shaders: bool,
    /// Pick the adapter whose name contains this (case-insensitive); `WGPU_ADAPTER_NAME` too.
    pub adapter_name: Option<String>,
    /// Do not request optional features (exercises the fallback paths).
    pub no_optional_features: bool,
    /// Treat storage bindings as at most this many bytes (below the adapter's own limit):
    /// exercises the paths that split data over several bindings on small inputs.
    pub max_binding_bytes: Option<u64>,
    /// [`Gpu::several`]: when the machine has fewer adapters than devices asked for, open the
    /// first adapter as several devices instead of failing (`WGSPARSE_SHARE_ADAPTERS=1` too).
    pub share_adapters: bool,
    /// Do not open the device with native f32 adds in workgroup memory
    /// ([`Caps::wg_f32_atomics`]; `WGSPARSE_WG_F32_ATOMICS=0` too): the kernels then add
    /// there by compare-exchange loops, as on adapters without them.
    pub no_wg_f32_atomics: bool,
}

/// A device, its queue, its capabilities and the pipeline cache.
pub struct Gpu {
    /// The wgpu device.
    pub device: wgpu::Device,
    /// The device's one queue.
    pub queue: wgpu::Queue,
    /// What the device can do.
    pub caps: Caps,
    pub(crate) checked_shaders: bool,
    pub(crate) kernels: Mutex<HashMap<KernelKey, Arc<Kernel>>>,
    /// When the last warmed, timed workload on this device ended ([`crate::gpu::timed_warm`]):
    /// how long the clocks have had to fall since.
    pub(crate) last_timed_end: Mutex<Option<std::time::Instant>>,
}

/// Optional features the kernels use when present.
fn wanted_features() -> wgpu::Features {
    wgpu::Features::SUBGROUP
        | wgpu::Features::SHADER_F16
        | wgpu::Features::SHADER_FLOAT32_ATOMIC
        | wgpu::Features::TIMESTAMP_QUERY
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_ENCODERS
        | wgpu::Features::TIMESTAMP_QUERY_INSIDE_PASSES
        | wgpu::Features::MEMORY_DECORATION_COHERENT
}

/// An instance for compute alone. On Linux and the BSDs wgpu's Vulkan instance enables every
/// window-system surface extension the loader offers (Xlib, XCB, Wayland); Mesa's
/// device-selection layer, an implicit layer on most distributions, then connects to the
/// Wayland and X servers while listing devices to find the default one, and on a machine
/// without a display libwayland prints `error: XDG_RUNTIME_DIR is invalid or not set in the
/// environment.` for each listing. A compute library presents nothing, so its instance asks
/// for none of those extensions and the layer has no display to look for.
fn compute_instance(desc: wgpu::InstanceDescriptor) -> wgpu::Instance {
    #[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
    // Vulkan is the only backend compiled in here (Metal and DX12 are not on this platform).
    if desc.backends.contains(wgpu::Backends::VULKAN) {
        if let Some(instance) = vulkan_without_window_systems(&desc) {
            return instance;
        }
    }
    wgpu::Instance::new(desc)
}

/// A Vulkan-only instance without the Xlib, XCB and Wayland surface extensions; `None` when
/// Vulkan cannot be loaded (the caller then falls back to wgpu's own instance, which reports
/// the missing adapter).
#[cfg(all(unix, not(target_vendor = "apple"), not(target_os = "android")))]
fn vulkan_without_window_systems(desc: &wgpu::InstanceDescriptor) -> Option<wgpu::Instance> {
    use wgpu::hal;
    const WINDOW_SYSTEMS: [&std::ffi::CStr; 3] = [
        c"VK_KHR_xlib_surface",
        c"VK_KHR_xcb_surface",
        c"VK_KHR_wayland_surface",
    ];
    let hal_desc = hal::InstanceDescriptor {
        name: "wgsparse",
        flags: desc.flags,
        memory_budget_thresholds: desc.memory_budget_thresholds,
        backend_options: desc.backend_options.clone(),
        telemetry: None,
        display: None,
    };
    let drop_window_systems: Box<hal::vulkan::CreateInstanceCallback> = Box::new(|args| {
        args.extensions.retain(|e| !WINDOW_SYSTEMS.contains(e));
    });
    // SAFETY: the descriptor is wgpu's own for this process. The callback's contract asks
    // not to remove extensions because wgpu-hal assumes the ones it lists are enabled; it
    // uses these three only to create window surfaces (`create_surface_from_xlib`, `_xcb`,
    // `_wayland`), each of which first checks that its extension is enabled and otherwise
    // returns an error. wgsparse never creates a surface. The instance is handed to wgpu,
    // which owns and destroys it.
    let raw =
        unsafe { hal::vulkan::Instance::init_with_callback(&hal_desc, Some(drop_window_systems)) }
            .ok()?;
    Some(unsafe { wgpu::Instance::from_hal::<hal::api::Vulkan>(raw) })
}

fn device_rank(t: wgpu::DeviceType) -> u8 {
    match t {
        wgpu::DeviceType::DiscreteGpu => 0,
        wgpu::DeviceType::IntegratedGpu => 1,
        wgpu::DeviceType::VirtualGpu => 2,
        wgpu::DeviceType::Other => 3,
        wgpu::DeviceType::Cpu => 4,
    }
}

impl Gpu {
    /// Picks an adapter (honouring `WGPU_BACKEND` and `WGPU_ADAPTER_NAME`; discrete >
    /// integrated > CPU) and creates a device with its own limits and the optional features
    /// the kernels use.
    pub fn new() -> Result<Self> {
        Self::new_with(&GpuOptions::default())
    }

    /// [`Gpu::new`] with options.
    pub fn new_with(options: &GpuOptions) -> Result<Self> {
        pollster::block_on(Self::new_async(options))
    }

    async fn new_async(options: &GpuOptions) -> Result<Self> {
        let adapters = Self::adapters(options).await?;
        Self::open(&adapters[0], options).await
    }

    /// Opens `count` devices, one per adapter (`None`: every hardware adapter of the backend,
    /// or the best adapter when there is no hardware one), each with its own queue and
    /// pipeline cache. Adapters are taken in [`Gpu::new`]'s order of preference. When fewer
    /// adapters than `count` exist, [`GpuOptions::share_adapters`] opens the first one several
    /// times (tests of the partitioned paths on one adapter); otherwise that is an error.
    pub fn several(count: Option<usize>, options: &GpuOptions) -> Result<Vec<Gpu>> {
        pollster::block_on(async {
            let adapters = Self::adapters(options).await?;
            let hardware = adapters
                .iter()
                .filter(|a| a.get_info().device_type != wgpu::DeviceType::Cpu)
                .count();
            let count = match count {
                Some(0) => return Err(Error::Option("a device count must be at least 1".into())),
                Some(n) => n,
                None => hardware.max(1),
            };
            let share = options.share_adapters
                || std::env::var("WGSPARSE_SHARE_ADAPTERS")
                    .is_ok_and(|v| !v.is_empty() && v != "0");
            if count > adapters.len() && !share {
                return Err(Error::Option(format!(
                    "{count} devices asked for, but this machine has {} adapter(s) ({})",
                    adapters.len(),
                    adapters
                        .iter()
                        .map(|a| a.get_info().name)
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            let mut gpus = Vec::with_capacity(count);
            for i in 0..count {
                let adapter = adapters.get(i).unwrap_or(&adapters[0]);
                gpus.push(Self::open(adapter, options).await?);
            }
            Ok(gpus)
        })
    }

    /// Every device [`Gpu::several`] opens with no count: one per hardware adapter.
    pub fn all() -> Result<Vec<Gpu>> {
        Self::several(None, &GpuOptions::default())
    }

    /// The adapters of the backends in `WGPU_BACKEND` (default Vulkan, Metal, DX12), filtered
    /// by name and sorted by preference (discrete > integrated > virtual > CPU); never empty.
    async fn adapters(options: &GpuOptions) -> Result<Vec<wgpu::Adapter>> {
        let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
        desc.backends = wgpu::Backends::from_env()
            .unwrap_or(wgpu::Backends::VULKAN | wgpu::Backends::METAL | wgpu::Backends::DX12);
        desc.flags = wgpu::InstanceFlags::from_build_config().with_env();
        let backends = desc.backends;
        let instance = compute_instance(desc);
        let wanted_name = options
            .adapter_name
            .clone()
            .or_else(|| std::env::var("WGPU_ADAPTER_NAME").ok())
            .map(|n| n.to_lowercase());
        let mut adapters = instance.enumerate_adapters(backends).await;
        if let Some(name) = &wanted_name {
            adapters.retain(|a| a.get_info().name.to_lowercase().contains(name));
        }
        adapters.sort_by_key(|a| device_rank(a.get_info().device_type));
        if adapters.is_empty() {
            let why = match wanted_name {
                Some(n) => format!(" whose name contains {n:?}"),
                None => format!(" for backends {backends:?}"),
            };
            return Err(Error::NoAdapter(why));
        }
        Ok(adapters)
    }

    /// Creates a device on `adapter` with its own limits and the optional features the
    /// kernels use.
    async fn open(adapter: &wgpu::Adapter, options: &GpuOptions) -> Result<Self> {
        let features = if options.no_optional_features {
            wgpu::Features::empty()
        } else {
            adapter.features() & wanted_features()
        };
        let info = adapter.get_info();
        let desc = wgpu::DeviceDescriptor {
            label: Some("wgsparse"),
            required_features: features,
            required_limits: adapter.limits(),
            experimental_features: wgpu::ExperimentalFeatures::disabled(),
            memory_hints: wgpu::MemoryHints::Performance,
            trace: wgpu::Trace::Off,
        };
        let request_error = |message: String| Error::RequestDevice {
            adapter: info.name.clone(),
            message,
        };
        let wg_adds = !options.no_optional_features
            && !options.no_wg_f32_atomics
            && std::env::var("WGSPARSE_WG_F32_ATOMICS").map_or(true, |v| v != "0");
        #[cfg(not(target_vendor = "apple"))]
        let opened = if wg_adds {
            crate::gpu::vulkan_device::open_with_wg_f32_adds(adapter, &desc)
        } else {
            None
        };
        #[cfg(target_vendor = "apple")]
        let opened: Option<std::result::Result<_, String>> = None;
        let (device, queue, wg_f32_atomics) = match opened {
            Some(result) => {
                let (device, queue) = result.map_err(request_error)?;
                (device, queue, true)
            }
            None => {
                let (device, queue) = adapter
                    .request_device(&desc)
                    .await
                    .map_err(|e| request_error(e.to_string()))?;
                (device, queue, false)
            }
        };
        let checked = options.checked_shaders
            || std::env::var("WGSPARSE_CHECKED").is_ok_and(|v| !v.is_empty() && v != "0");
        let mut gpu = Self::assemble(&info, device, queue, checked);
        gpu.caps.wg_f32_atomics = wg_f32_atomics;
        if let Some(limit) = options.max_binding_bytes {
            let caps = &mut gpu.caps;
            caps.max_storage_binding_bytes = caps.max_storage_binding_bytes.min(limit.max(256));
        }
        if loop_cap::probed(&gpu.caps.device_type) {
            gpu.caps.loop_cap = loop_cap::probe(&gpu)?;
        }
        Ok(gpu)
    }

    /// Adopts a device the application already created on `adapter`. The kernels use
    /// whichever optional features that device has.
    /// A software device's loop cap is probed as in [`Gpu::new`]; should the probe fail there,
    /// the cap is unknown (`None`) and the failure reported on stderr.
    pub fn from_device(adapter: &wgpu::Adapter, device: wgpu::Device, queue: wgpu::Queue) -> Self {
        let mut gpu = Self::assemble(&adapter.get_info(), device, queue, false);
        if loop_cap::probed(&gpu.caps.device_type) {
            gpu.caps.loop_cap = loop_cap::probe(&gpu).unwrap_or_else(|e| {
                eprintln!("wgsparse: the loop-cap probe failed, cap unknown: {e}");
                None
            });
        }
        gpu
    }

    fn assemble(
        info: &wgpu::AdapterInfo,
        device: wgpu::Device,
        queue: wgpu::Queue,
        checked_shaders: bool,
    ) -> Self {
        // wgpu's default handler panics; errors are caught by scopes around each operation,
        // so an error that escapes them is reported, not fatal.
        device.on_uncaptured_error(Arc::new(|e| {
            eprintln!("wgsparse: uncaptured GPU error: {e}")
        }));
        let period = queue.get_timestamp_period();
        let caps = Caps::from_parts(info, device.features(), &device.limits(), period);
        Gpu {
            device,
            queue,
            caps,
            checked_shaders,
            kernels: Mutex::new(HashMap::new()),
            last_timed_end: Mutex::new(None),
        }
    }

    /// Blocks until all submitted work is done.
    pub fn wait(&self) -> Result<()> {
        self.device
            .poll(wgpu::PollType::wait_indefinitely())
            .map(|_| ())
            .map_err(|e| Error::Gpu {
                kernel: "poll".into(),
                message: e.to_string(),
            })
    }

    /// Waits until `submission` (and everything submitted before it) has finished and its
    /// map callbacks have run.
    pub fn wait_for(&self, submission: wgpu::SubmissionIndex) -> Result<()> {
        self.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(submission),
                timeout: None,
            })
            .map(|_| ())
            .map_err(|e| Error::Gpu {
                kernel: "poll".into(),
                message: e.to_string(),
            })
    }

    /// Runs `f` inside a validation + out-of-memory error scope; a captured error becomes
    /// [`Error::Gpu`] naming `what`.
    pub(crate) fn scoped<T>(&self, what: &str, f: impl FnOnce() -> T) -> Result<T> {
        let oom = self.device.push_error_scope(wgpu::ErrorFilter::OutOfMemory);
        let validation = self.device.push_error_scope(wgpu::ErrorFilter::Validation);
        let value = f();
        let v = pollster::block_on(validation.pop());
        let o = pollster::block_on(oom.pop());
        match v.or(o) {
            None => Ok(value),
            Some(e) => Err(Error::Gpu {
                kernel: what.to_string(),
                message: e.to_string(),
            }),
        }
    }
}
