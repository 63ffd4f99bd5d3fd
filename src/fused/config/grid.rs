//! Grids under a device's loop budget: how many workgroups a kernel takes so that no
//! invocation loops past half the device's loop cap (lavapipe ends loops silently there).

use super::option_err;
use crate::fused::plan::{self, Residency};
use crate::fused::{loops, Options};
use crate::gpu::loop_cap;
use crate::{Error, Result};

/// The workgroups of a kernel whose workgroups stride over at most `tiles_max` tiles of `tile`
/// entries (`per_tile` loop iterations per invocation each, `fixed` besides): `groups`, raised
/// where a device's loop budget needs more workgroups so each takes few enough tiles; an
/// error when even one tile, or the most workgroups, is past the budget.
pub(super) fn tile_grid(
    caps: &crate::Caps,
    groups: usize,
    tiles_max: usize,
    tile: u32,
    (per_tile, fixed): (u64, u64),
) -> Result<usize> {
    let max_groups = caps.max_workgroups_per_dimension as usize;
    match loops::max_per_invocation(loop_cap::budget(caps.loop_cap), per_tile, fixed) {
        None => Ok(groups),
        Some(0) => Err(loop_err(
            caps,
            format!("a tile of {tile} entries"),
            per_tile + fixed,
        )),
        Some(k) => {
            let need = tiles_max.div_ceil(k as usize);
            if need > max_groups {
                return Err(loop_err(
                    caps,
                    format!("{tiles_max} tiles over at most {max_groups} workgroups"),
                    tiles_max.div_ceil(max_groups) as u64 * per_tile + fixed,
                ));
            }
            Ok(groups.max(need.min(tiles_max)))
        }
    }
}

/// Eq. 5 (or the caller's C) and the number of workgroups. `(per_row, fixed)`: the loop
/// iterations one invocation runs per row of its vector and besides ([`loops`]); on a device
/// with a loop cap C stays within its budget (more workgroups instead), and a caller's C
/// beyond it is refused.
pub(crate) fn grid(
    options: &Options,
    m: usize,
    nv: u32,
    (r, wg, shared): (&Residency, u32, u32),
    caps: &crate::Caps,
    (per_row, fixed): (u64, u64),
) -> Result<(u32, u32)> {
    let max_groups = caps.max_workgroups_per_dimension;
    let c_max = loops::max_per_invocation(loop_cap::budget(caps.loop_cap), per_row, fixed);
    if c_max == Some(0) {
        return Err(loop_err(caps, "one row per vector".into(), per_row + fixed));
    }
    match options.rows_per_vector {
        None => {
            let resident = r.units.saturating_mul(r.groups_resident(wg, shared));
            let (c, groups) = plan::rows_per_vector(m, nv, resident, max_groups);
            match c_max {
                Some(cm) if c as u64 > cm => {
                    let groups = m.div_ceil(cm as usize * nv as usize).max(1);
                    if groups > max_groups as usize {
                        return Err(loop_err(
                            caps,
                            format!("{m} rows over at most {max_groups} workgroups"),
                            c as u64 * per_row + fixed,
                        ));
                    }
                    Ok((cm as u32, groups as u32))
                }
                _ => Ok((c, groups)),
            }
        }
        Some(0) => Err(option_err("rows per vector must be at least 1".into())),
        Some(c) => {
            if let Some(cm) = c_max.filter(|&cm| c as u64 > cm) {
                return Err(option_err(format!(
                    "rows per vector (--c) = {c}: about {} loop iterations per invocation, over \
                     {}, half the loop cap of {} ({} iterations, after which it silently \
                     ends loops); at most {cm} rows per vector here",
                    c as u64 * per_row + fixed,
                    loop_cap::budget(caps.loop_cap).unwrap_or(u64::MAX),
                    caps.adapter_name,
                    caps.loop_cap.unwrap_or(u32::MAX),
                )));
            }
            let groups = m.div_ceil(c as usize * nv as usize).max(1);
            if groups > max_groups as usize {
                return Err(option_err(format!(
                    "{c} rows per vector over {m} rows needs {groups} workgroups, more than \
                     {max_groups}"
                )));
            }
            Ok((c, groups as u32))
        }
    }
}

/// A kernel whose invocations would loop past the device's loop budget (half its cap).
pub(super) fn loop_err(caps: &crate::Caps, what: String, iterations: u64) -> Error {
    Error::TooLarge {
        what,
        needed: format!("about {iterations} loop iterations per invocation"),
        limit: format!(
            "{}, half the loop cap of {} ({} iterations, after which it silently ends loops)",
            loop_cap::budget(caps.loop_cap).unwrap_or(u64::MAX),
            caps.adapter_name,
            caps.loop_cap.unwrap_or(u32::MAX)
        ),
    }
}
