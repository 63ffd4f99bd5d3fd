//! How many workgroups a device keeps resident at once: wgpu reports neither the number of
//! compute units nor their resident invocations or workgroup memory, so [`Residency::of`]
//! takes each from the environment (`WGSPARSE_COMPUTE_UNITS`, `WGSPARSE_UNIT_THREADS`,
//! `WGSPARSE_UNIT_SHARED_BYTES`, `WGSPARSE_UNIT_SHARED_RESERVED`, `WGSPARSE_UNIT_GROUPS`),
//! else from this adapter and driver's calibration when `wgsparse calibrate --save` stored
//! one ([`crate::gpu::calibrate`]), else from defaults for Hopper (132 units of 2,048
//! invocations, 228 KiB and 32 workgroups) on discrete GPUs and one unit per CPU core
//! otherwise. Launch models size their grids from it, and persistent kernels that need every
//! workgroup resident bound their grids by it.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::gpu::calibrate::Calibration;
use crate::gpu::Caps;
use crate::tune::TuneCache;
use crate::Result;

/// What one compute unit can keep resident, and how many units there are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residency {
    /// Compute units (SMs).
    pub units: u32,
    /// Invocations resident per unit.
    pub threads_per_unit: u32,
    /// Workgroup memory per unit, bytes.
    pub shared_per_unit: u32,
    /// Workgroups resident per unit at most.
    pub groups_per_unit: u32,
    /// Workgroup memory a unit sets aside per workgroup beyond what the workgroup declares,
    /// bytes (0 in the defaults; NVIDIA reserves 1 KiB a block since Ampere).
    #[serde(default)]
    pub shared_reserved: u32,
}

/// Where [`Residency::of`] found its figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// The defaults.
    Default,
    /// A stored calibration of this adapter and driver.
    Calibrated,
    /// At least one environment override (over either).
    Environment,
}

/// The calibration store (`residency.json` in the tuning cache's folder).
fn store() -> Option<TuneCache> {
    TuneCache::named("residency.json")
}

/// The store's key: adapter and driver.
fn key(caps: &Caps) -> String {
    format!("{} | {}", caps.adapter_name, caps.driver)
}

/// Per key, the stored calibration's residency as first read in this process (or stored).
fn memo() -> &'static Mutex<HashMap<String, Option<Residency>>> {
    static MEMO: OnceLock<Mutex<HashMap<String, Option<Residency>>>> = OnceLock::new();
    MEMO.get_or_init(Default::default)
}

/// This adapter and driver's stored calibration, if any.
fn calibrated(caps: &Caps) -> Option<Residency> {
    let k = key(caps);
    let mut m = memo().lock().unwrap_or_else(|e| e.into_inner());
    *m.entry(k.clone()).or_insert_with(|| {
        store()
            .and_then(|s| s.get::<Calibration>(&k))
            .map(|c| c.residency)
    })
}

/// Stores `c` as this adapter and driver's calibration ([`Residency::of`] takes it from now
/// on, in this process and later ones); returns the file written.
pub(super) fn save(caps: &Caps, c: &Calibration) -> Result<std::path::PathBuf> {
    let s = store().ok_or_else(|| {
        crate::Error::Option(
            "no cache folder to store the calibration in (set WGSPARSE_CACHE_DIR)".into(),
        )
    })?;
    s.insert(&key(caps), c)?;
    memo()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key(caps), Some(c.residency));
    Ok(s.path().to_path_buf())
}

impl Residency {
    /// The device's residency: environment overrides, else the stored calibration, else the
    /// defaults described above.
    pub fn of(caps: &Caps) -> Self {
        Self::with_source(caps).0
    }

    /// [`Residency::of`] and where its figures came from.
    pub fn with_source(caps: &Caps) -> (Self, Source) {
        let env = |name: &str| -> Option<u32> {
            std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
        };
        let discrete = caps.device_type == "DiscreteGpu";
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get() as u32);
        let stored = calibrated(caps);
        let base = stored.unwrap_or(Residency {
            units: if discrete { 132 } else { cores },
            threads_per_unit: 2048,
            shared_per_unit: if discrete {
                228 << 10
            } else {
                caps.max_workgroup_storage_bytes
            },
            groups_per_unit: 32,
            shared_reserved: 0,
        });
        let overrides = [
            env("WGSPARSE_COMPUTE_UNITS"),
            env("WGSPARSE_UNIT_THREADS"),
            env("WGSPARSE_UNIT_SHARED_BYTES"),
            env("WGSPARSE_UNIT_GROUPS"),
            env("WGSPARSE_UNIT_SHARED_RESERVED"),
        ];
        let source = if overrides.iter().any(Option::is_some) {
            Source::Environment
        } else if stored.is_some() {
            Source::Calibrated
        } else {
            Source::Default
        };
        let [units, threads, shared, groups, reserved] = overrides;
        let r = Residency {
            units: units.unwrap_or(base.units).max(1),
            threads_per_unit: threads.unwrap_or(base.threads_per_unit).max(32),
            shared_per_unit: shared.unwrap_or(base.shared_per_unit).max(1),
            groups_per_unit: groups.unwrap_or(base.groups_per_unit).max(1),
            shared_reserved: reserved.unwrap_or(base.shared_reserved),
        };
        (r, source)
    }

    /// Workgroups of `wg` invocations using `shared` bytes of workgroup memory resident on
    /// one unit (at least 1).
    pub fn groups_resident(&self, wg: u32, shared: u32) -> u32 {
        let by_threads = self.threads_per_unit / wg;
        // No workgroup memory, no bound from it.
        let by_shared = if shared == 0 {
            u32::MAX
        } else {
            self.shared_per_unit / shared.saturating_add(self.shared_reserved)
        };
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
            shared_reserved: 0,
        };
        // Threads bind: 2048 / 256 = 8.
        assert_eq!(r.groups_resident(256, 16 << 10), 8);
        // Shared memory binds: 228 KiB / 48 KiB = 4.
        assert_eq!(r.groups_resident(256, 48 << 10), 4);
        // The per-unit cap binds; no shared memory is no bound.
        assert_eq!(r.groups_resident(32, 0), 32);
        // Never below one.
        assert_eq!(r.groups_resident(4096, 1 << 30), 1);
        // 1 KiB set aside per workgroup: 228 KiB / 17 KiB = 13, not 14.
        let reserving = Residency {
            shared_reserved: 1 << 10,
            ..r
        };
        assert_eq!(r.groups_resident(128, 16 << 10), 14);
        assert_eq!(reserving.groups_resident(128, 16 << 10), 13);
        assert_eq!(reserving.groups_resident(32, 0), 32);
    }
}
