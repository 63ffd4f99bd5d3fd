//! How many workgroups a device keeps resident at once: wgpu reports neither the number of
//! compute units nor their resident invocations or workgroup memory, so [`Residency`] takes
//! them from the environment (`WGSPARSE_COMPUTE_UNITS`, `WGSPARSE_UNIT_THREADS`,
//! `WGSPARSE_UNIT_SHARED_BYTES`), with defaults for Hopper (132 units of 2,048 invocations
//! and 228 KiB) on discrete GPUs and one unit per CPU core otherwise. Launch models size
//! their grids from it, and persistent kernels that need every workgroup resident bound
//! their grids by it.

use serde::Serialize;

use crate::gpu::Caps;

/// What one compute unit can keep resident, and how many units there are.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Residency {
    /// Compute units (SMs).
    pub units: u32,
    /// Invocations resident per unit.
    pub threads_per_unit: u32,
    /// Workgroup memory per unit, bytes.
    pub shared_per_unit: u32,
    /// Workgroups resident per unit at most.
    pub groups_per_unit: u32,
}

impl Residency {
    /// The device's residency: environment overrides, else the defaults described above.
    pub fn of(caps: &Caps) -> Self {
        let env = |name: &str| -> Option<u32> {
            std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
        };
        let discrete = caps.device_type == "DiscreteGpu";
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        Residency {
            units: env("WGSPARSE_COMPUTE_UNITS")
                .unwrap_or(if discrete { 132 } else { cores })
                .max(1),
            threads_per_unit: env("WGSPARSE_UNIT_THREADS").unwrap_or(2048).max(32),
            shared_per_unit: env("WGSPARSE_UNIT_SHARED_BYTES")
                .unwrap_or(if discrete {
                    228 << 10
                } else {
                    caps.max_workgroup_storage_bytes
                })
                .max(1),
            groups_per_unit: 32,
        }
    }

    /// Workgroups of `wg` invocations using `shared` bytes of workgroup memory resident on
    /// one unit (at least 1).
    pub fn groups_resident(&self, wg: u32, shared: u32) -> u32 {
        let by_threads = self.threads_per_unit / wg;
        let by_shared = self.shared_per_unit.checked_div(shared).unwrap_or(u32::MAX);
        by_threads.min(by_shared).min(self.groups_per_unit).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resident_groups_take_the_tightest_bound() {
        let r = Residency {
            units: 132,
            threads_per_unit: 2048,
            shared_per_unit: 228 << 10,
            groups_per_unit: 32,
        };
        // Threads bind: 2048 / 256 = 8.
        assert_eq!(r.groups_resident(256, 16 << 10), 8);
        // Shared memory binds: 228 KiB / 48 KiB = 4.
        assert_eq!(r.groups_resident(256, 48 << 10), 4);
        // The per-unit cap binds; no shared memory is no bound.
        assert_eq!(r.groups_resident(32, 0), 32);
        // Never below one.
        assert_eq!(r.groups_resident(4096, 1 << 30), 1);
    }
}
