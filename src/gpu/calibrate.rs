//! The residency calibration: how many workgroups the device keeps resident at once, measured.
//! wgpu reports neither the compute units nor what each keeps resident, so [`calibrate`] runs
//! `runtime/residency` at a few workgroup sizes and workgroup-memory footprints: each
//! workgroup of a grid many waves deep counts itself in while it holds its slot, and the
//! highest count seen is the device's resident workgroups of that shape. [`derive()`] turns the
//! peaks into a [`Residency`]: the units are the peaks' greatest common divisor, the per-unit
//! invocations the most any workgroup size reached, the per-unit workgroups the peak of the
//! smallest, and the per-unit workgroup memory (and what a unit sets aside per workgroup
//! beyond it) the tightest bound the memory-limited peaks give; then the model must
//! reproduce every peak, else the calibration is refused.
//! `wgsparse calibrate --save` stores the result per adapter and driver, and
//! [`Residency::of`] takes it from there (environment overrides first).
//!
//! The probe's workgroups use few registers, so kernels that use many keep fewer resident than
//! the calibration says (the `stream` variant's `--groups` times smaller grids).

use serde::{Deserialize, Serialize};

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, KernelSpec, Residency};
use crate::{Error, Result};

/// One probe: workgroups of `workgroup` invocations and `shared` bytes of workgroup memory,
/// and how many of them were resident at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// Invocations per workgroup.
    pub workgroup: u32,
    /// Workgroup memory per workgroup, bytes.
    pub shared: u32,
    /// Workgroups resident at once, at most, over the grid.
    pub peak: u32,
}

/// A calibration: the probes and the residency derived from them.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Calibration {
    /// Adapter name.
    pub adapter: String,
    /// Driver (name and version as the adapter reports them).
    pub driver: String,
    /// The probes, in the order run.
    pub probes: Vec<Probe>,
    /// What they imply.
    pub residency: Residency,
}

/// The workgroup memory the probes without a footprint declare (one word).
const NO_SHARED: u32 = 4;

/// Times each probe shape runs.
const ROUNDS: usize = 3;

/// What a unit may set aside per workgroup beyond its declared memory, bytes, smallest first.
const RESERVED_STEPS: [u32; 6] = [0, 128, 256, 512, 1024, 2048];

/// The probe shapes (invocations, workgroup memory) on a device of `max_wg` invocations and
/// `most` bytes of workgroup memory a workgroup at most: the smallest workgroup and the larger
/// ones without workgroup memory (the invocations and workgroups per unit), then the smallest
/// with `most` and with about ½, ⅓ and ⅕ of it (the memory per unit).
fn shapes(max_wg: u32, most: u32) -> Vec<(u32, u32)> {
    let max_wg = max_wg.min(1024);
    let mut out: Vec<(u32, u32)> = [32, 256, 512, 1024]
        .into_iter()
        .filter(|&w| w <= max_wg)
        .map(|w| (w, NO_SHARED))
        .collect();
    let most = most / 4 * 4;
    for part in [1, 2, 3, 5] {
        // A little over the part, so a unit holding exactly `part` such footprints is told
        // apart from one holding more; whole 256-byte steps, the allocation granule of the
        // devices we know.
        let s = if part == 1 {
            most
        } else {
            (most / part + 256).min(most) / 256 * 256
        };
        if s > NO_SHARED && !out.contains(&(32, s)) {
            out.push((32, s));
        }
    }
    out
}

/// Runs the probes on `gpu` and derives its residency ([`derive()`]).
pub fn calibrate(gpu: &Gpu) -> Result<Calibration> {
    let caps = &gpu.caps;
    let cpu = !matches!(caps.device_type.as_str(), "DiscreteGpu" | "IntegratedGpu");
    // A grid many waves deep, each workgroup held ≈ 0.2 ms on a GPU; a software device runs
    // a workgroup per thread at a time and counts every loop trip (its loop cap, 65,535).
    let (groups, hold) = if cpu {
        (64 * super::host_cores() as u32, 20_000)
    } else {
        (16_384, 100_000)
    };
    let groups = groups.min(caps.max_workgroups_per_dimension).max(1);
    let counts = GpuBuffer::<u32>::zeroed(gpu, "residency.counts", 2)?;
    let sink = GpuBuffer::<f32>::zeroed(gpu, "residency.sink", 1024)?;
    let mut probes: Vec<Probe> = Vec::new();
    // Every shape in ROUNDS rounds, the highest peak kept: a round may start before the
    // device's workers (a software device's threads) are all up.
    let shapes = shapes(
        caps.max_invocations_per_workgroup,
        caps.max_workgroup_storage_bytes,
    );
    for &(wg, shared) in (0..ROUNDS).flat_map(|_| &shapes) {
        let kernel = gpu.kernel(&KernelSpec {
            name: "runtime/residency",
            defines: vec![],
            constants: vec![
                ("WG", wg as f64),
                ("SHARED_WORDS", (shared / 4) as f64),
                ("HOLD", hold as f64),
            ],
            bindings: &[Binding::ReadWrite, Binding::ReadWrite],
        })?;
        counts.write(gpu, &[0, 0])?;
        let mut batch = Batch::new(gpu);
        batch.dispatch(
            &kernel,
            kernel.bind(gpu, &[counts.raw(), sink.raw()])?,
            [groups, 1, 1],
        )?;
        batch.submit()?;
        let [live, peak] = counts.read(gpu)?[..] else {
            unreachable!("two counters")
        };
        if live != 0 || peak == 0 || peak > groups {
            return Err(Error::Gpu {
                kernel: "runtime/residency".into(),
                message: format!(
                    "probe of {wg} invocations and {shared} B: {live} workgroups still counted \
                     live and a peak of {peak} over {groups}"
                ),
            });
        }
        match probes
            .iter_mut()
            .find(|p| (p.workgroup, p.shared) == (wg, shared))
        {
            Some(p) => p.peak = p.peak.max(peak),
            None => probes.push(Probe {
                workgroup: wg,
                shared,
                peak,
            }),
        }
    }
    Ok(Calibration {
        adapter: caps.adapter_name.clone(),
        driver: caps.driver.clone(),
        residency: derive(&probes)?,
        probes,
    })
}

impl Calibration {
    /// Stores this calibration for its adapter and driver (`residency.json` in the tuning
    /// cache's folder); [`Residency::of`] takes it from then on. Returns the file written.
    pub fn save(&self, gpu: &Gpu) -> Result<std::path::PathBuf> {
        super::residency::save(&gpu.caps, self)
    }
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The residency the probes imply (see the module docs); an error names the probes when no
/// residency of that form reproduces every peak.
pub fn derive(probes: &[Probe]) -> Result<Residency> {
    let inconsistent = |why: &str| {
        let list: Vec<String> = probes
            .iter()
            .map(|p| format!("{} × {} B: {}", p.workgroup, p.shared, p.peak))
            .collect();
        Error::Unsupported(format!(
            "residency calibration: {why} (probes {})",
            list.join(", ")
        ))
    };
    let units = probes.iter().fold(0, |g, p| gcd(g, p.peak));
    let plain: Vec<&Probe> = probes.iter().filter(|p| p.shared <= NO_SHARED).collect();
    let smallest = plain
        .iter()
        .min_by_key(|p| p.workgroup)
        .ok_or_else(|| inconsistent("no probe without workgroup memory"))?;
    if units == 0 {
        return Err(inconsistent("no workgroup was resident"));
    }
    let per = |p: &Probe| p.peak / units;
    let threads = plain
        .iter()
        .map(|p| per(p) * p.workgroup)
        .max()
        .unwrap_or(0);
    let groups = per(smallest);
    // A memory-limited probe (fewer per unit than invocations and the workgroup cap allow)
    // puts the unit's memory in [n·(s + r), (n + 1)·(s + r)), r being what the unit sets
    // aside per workgroup; the others only say it holds n·(s + r). The smallest r of
    // RESERVED_STEPS that every probe agrees with is taken.
    let mut last = None;
    for r in RESERVED_STEPS {
        let (mut lo, mut hi) = (0u64, u64::MAX);
        for p in probes.iter().filter(|p| p.shared > NO_SHARED) {
            let n = per(p) as u64;
            let each = (p.shared + r) as u64;
            lo = lo.max(n * each);
            if per(p) < groups.min(threads / p.workgroup) {
                hi = hi.min((n + 1) * each);
            }
        }
        if lo >= hi {
            continue;
        }
        let res = Residency {
            units,
            threads_per_unit: threads,
            shared_per_unit: lo.max(NO_SHARED as u64).min(u32::MAX as u64) as u32,
            groups_per_unit: groups,
            shared_reserved: r,
        };
        match probes
            .iter()
            .find(|p| units * res.groups_resident(p.workgroup, p.shared) != p.peak)
        {
            None => return Ok(res),
            Some(p) => last = Some((res, *p)),
        }
    }
    Err(match last {
        None => inconsistent("the workgroup-memory probes disagree"),
        Some((r, p)) => inconsistent(&format!(
            "{} units of {} invocations, {} B (+ {} B a workgroup) and {} workgroups do not \
             give the peak of {} × {} B",
            r.units,
            r.threads_per_unit,
            r.shared_per_unit,
            r.shared_reserved,
            r.groups_per_unit,
            p.workgroup,
            p.shared
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hopper as the defaults describe it: 132 SMs of 2,048 invocations, 228 KiB, 32 blocks.
    const HOPPER: Residency = Residency {
        units: 132,
        threads_per_unit: 2048,
        shared_per_unit: 228 << 10,
        groups_per_unit: 32,
        shared_reserved: 0,
    };

    /// The peaks a device of this residency would show at the probe shapes of a device with
    /// `most` bytes of workgroup memory a workgroup.
    fn peaks(r: &Residency, most: u32) -> Vec<Probe> {
        shapes(1024, most)
            .into_iter()
            .map(|(workgroup, shared)| Probe {
                workgroup,
                shared,
                peak: r.units * r.groups_resident(workgroup, shared),
            })
            .collect()
    }

    #[test]
    fn derives_what_hopper_ada_and_a_software_device_keep_resident() {
        for (r, most) in [
            (HOPPER, 48 << 10),
            // Ada: 128 SMs of 1,536 invocations, 100 KiB, 24 blocks.
            (
                Residency {
                    units: 128,
                    threads_per_unit: 1536,
                    shared_per_unit: 100 << 10,
                    groups_per_unit: 24,
                    shared_reserved: 0,
                },
                48 << 10,
            ),
            // A software device: one workgroup per thread.
            (
                Residency {
                    units: 2,
                    threads_per_unit: 1024,
                    shared_per_unit: 64 << 10,
                    groups_per_unit: 1,
                    shared_reserved: 0,
                },
                64 << 10,
            ),
            // Hopper as it is: 1 KiB set aside per block.
            (
                Residency {
                    shared_reserved: 1024,
                    ..HOPPER
                },
                48 << 10,
            ),
        ] {
            let probes = peaks(&r, most);
            let got = derive(&probes).unwrap();
            assert_eq!(got.units, r.units);
            assert_eq!(got.threads_per_unit, r.threads_per_unit);
            assert_eq!(got.groups_per_unit, r.groups_per_unit);
            // The memory is known to within the probes' steps; every probe is reproduced, and
            // so is a 48 KiB workgroup's residency.
            assert!(got.shared_per_unit <= r.shared_per_unit);
            for (w, sh) in [(128, 16 << 10), (256, 24 << 10), (512, 48 << 10)] {
                assert_eq!(
                    got.groups_resident(w, sh),
                    r.groups_resident(w, sh),
                    "{w} × {sh} B: {got:?}"
                );
            }
            for w in [64, 128, 256, 512] {
                for sh in [4 << 10, 16 << 10, 24 << 10, 48 << 10] {
                    if sh <= most {
                        assert!(
                            got.groups_resident(w, sh) <= r.groups_resident(w, sh),
                            "{w} × {sh} B: more resident than the device keeps"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn refuses_peaks_no_residency_reproduces() {
        let mut probes = peaks(&HOPPER, 48 << 10);
        // Seven a unit at 256 invocations but four at 512: no residency of the model's form.
        probes[1].peak -= 132;
        assert!(derive(&probes).is_err());
        let none = [Probe {
            workgroup: 32,
            shared: NO_SHARED,
            peak: 0,
        }];
        let e = derive(&none).unwrap_err().to_string();
        assert!(e.contains("no workgroup was resident"), "{e}");
    }
}
