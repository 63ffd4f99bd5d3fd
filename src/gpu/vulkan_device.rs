//! A Vulkan device with native f32 adds in workgroup memory.
//!
//! wgpu enables `VK_EXT_shader_atomic_float` for storage buffers only
//! (`Features::SHADER_FLOAT32_ATOMIC`); its `shaderSharedFloat32AtomicAdd` feature is what
//! the kernels' adds into a workgroup copy of w need to be native instead of a
//! compare-exchange loop. On an H100 they ran 11–13× the loop's rate under power-law
//! contention (`benches/peers/shared_atomics_probe.py`) but half its rate over random words
//! (`wgsparse roofline`), so the fused tuner times both kinds. This module creates the device
//! itself, with wgpu-hal's own extension list and feature chain plus that one bit, and hands
//! it to wgpu; the kernels then reach the driver as SPIR-V rewritten by
//! [`crate::gpu::spirv_wg_adds`] (`Features::PASSTHROUGH_SHADERS`).

use ash::vk;
use wgpu::hal;

/// Opens `adapter` with `desc` plus `PASSTHROUGH_SHADERS` and workgroup f32 adds, when the
/// adapter is a Vulkan one that has them and `desc` asks for `SHADER_FLOAT32_ATOMIC` (whose
/// extension carries the bit). `None`: not available here (the caller opens the device the
/// usual way); `Some(Err)`: available, but the device could not be created.
pub(crate) fn open_with_wg_f32_adds(
    adapter: &wgpu::Adapter,
    desc: &wgpu::DeviceDescriptor<'_>,
) -> Option<Result<(wgpu::Device, wgpu::Queue), String>> {
    let wanted = wgpu::Features::SHADER_FLOAT32_ATOMIC | wgpu::Features::PASSTHROUGH_SHADERS;
    if !desc
        .required_features
        .contains(wgpu::Features::SHADER_FLOAT32_ATOMIC)
        || !adapter.features().contains(wanted)
    {
        return None;
    }
    let features = desc.required_features | wanted;
    // SAFETY: the hal adapter is used only while `adapter` lives, to query the physical
    // device and create a device from it with the extensions and feature chain wgpu-hal
    // itself computes for `features` (`device_from_raw`'s contract), plus one more feature
    // bit of an extension that chain already enables; the device is then owned by wgpu.
    let open = unsafe {
        let hal_adapter = adapter.as_hal::<hal::api::Vulkan>()?;
        let instance = hal_adapter.shared_instance().raw_instance();
        let physical = hal_adapter.raw_physical_device();
        let extension = ash::ext::shader_atomic_float::NAME;
        if !hal_adapter
            .physical_device_capabilities()
            .supports_extension(extension)
        {
            return None;
        }
        let mut atomic_float = vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT::default();
        let mut query = vk::PhysicalDeviceFeatures2::default().push_next(&mut atomic_float);
        instance.get_physical_device_features2(physical, &mut query);
        if atomic_float.shader_shared_float32_atomic_add != vk::TRUE {
            return None;
        }
        let extensions = hal_adapter.required_device_extensions(features);
        if !extensions.contains(&extension) {
            return None;
        }
        let mut chain = hal_adapter.physical_device_features(&extensions, features);
        let names: Vec<_> = extensions.iter().map(|e| e.as_ptr()).collect();
        // wgpu-hal opens queue family 0, queue 0.
        let queue = vk::DeviceQueueCreateInfo::default()
            .queue_family_index(0)
            .queue_priorities(&[1.0]);
        let queues = [queue];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&names);
        let info = chain.add_to_device_create(info);
        // Set the bit in the chain's own atomic-float struct (one struct of a type per chain).
        let mut next = info.p_next as *mut vk::BaseOutStructure<'_>;
        let mut found = false;
        while !next.is_null() {
            if (*next).s_type == vk::StructureType::PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT
            {
                let f = next as *mut vk::PhysicalDeviceShaderAtomicFloatFeaturesEXT<'_>;
                (*f).shader_shared_float32_atomic_add = vk::TRUE;
                found = true;
            }
            next = (*next).p_next;
        }
        if !found {
            return None;
        }
        let raw = match instance.create_device(physical, &info, None) {
            Ok(raw) => raw,
            Err(e) => return Some(Err(format!("vkCreateDevice: {e}"))),
        };
        hal_adapter
            .device_from_raw(
                raw,
                None,
                &extensions,
                features,
                &desc.required_limits,
                &desc.memory_hints,
                0,
                0,
            )
            .map_err(|e| format!("{e}"))
    };
    let open = match open {
        Ok(open) => open,
        Err(e) => return Some(Err(e)),
    };
    let desc = wgpu::DeviceDescriptor {
        required_features: features,
        ..desc.clone()
    };
    // SAFETY: `open` was created from this adapter's hal adapter just above.
    Some(
        unsafe { adapter.create_device_from_hal::<hal::api::Vulkan>(open, &desc) }
            .map_err(|e| e.to_string()),
    )
}
