//! Where an SDDMM iteration's time goes: its phases, each ended by waiting for every device,
//! and the parts of the write and the read-back.

use std::time::Instant;

use serde::Serialize;

/// Wall-clock seconds of an iteration's phases, each ended by waiting for every device (so
/// they add up to a little more than an iteration that overlaps them). A phase's parts are
/// consecutive intervals of it, so they add up to it.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct Breakdown {
    /// New A and B checked and laid out in the staging buffers, copied to the devices
    /// (`write_layout` + `write_copy`).
    pub write: f64,
    /// The SDDMM submitted and done.
    pub run: f64,
    /// P copied into the read-back buffers and mapped (`readback_copy` + `readback_map`).
    /// Read back in pieces ([`super::ReadMode::Pieced`]), until the last piece is mapped on
    /// every device, the host copies of the earlier pieces included (hidden behind it).
    pub readback: f64,
    /// P copied out of the mapped buffers into the caller's array, in S's CSR order. Read
    /// back in pieces, the last piece's copy: the part of the gather not hidden.
    pub gather: f64,
    /// Part of the write: A and B laid out, checked, in the mapped staging buffers on every
    /// device (with an overlapped write, each piece's device copy queued as it is laid out).
    pub write_layout: f64,
    /// Part of the write: the device copies out of the staging buffers into the operands
    /// (and the buffers' remap) waited for after the layout; with an overlapped write, the
    /// copies' part not hidden behind the layout.
    pub write_copy: f64,
    /// Part of the read-back: P's device copy into the read-back buffers, queued and waited
    /// for (in pieces: until the last piece's copy is done).
    pub readback_copy: f64,
    /// Part of the read-back: the wait for the read-back buffers to be mapped once copied
    /// (in pieces: the last piece's).
    pub readback_map: f64,
}

/// The instants an iteration's phases and parts end at, from its start.
pub(crate) struct Marks {
    /// Start, layout done, write done, run done, P copied, P mapped, P gathered.
    pub(crate) at: [Instant; 7],
}

impl From<Marks> for Breakdown {
    fn from(m: Marks) -> Self {
        let t = m.at;
        let s = |i: usize| t[i + 1].duration_since(t[i]).as_secs_f64();
        Breakdown {
            write_layout: s(0),
            write_copy: s(1),
            write: s(0) + s(1),
            run: s(2),
            readback_copy: s(3),
            readback_map: s(4),
            readback: s(3) + s(4),
            gather: s(5),
        }
    }
}

impl Breakdown {
    /// The phases' sum.
    pub fn total(&self) -> f64 {
        self.write + self.run + self.readback + self.gather
    }

    /// The median of each phase over `samples`, a phase's parts taken from the sample that
    /// gave its median (so they still add up to it).
    pub fn median(samples: &[Breakdown]) -> Breakdown {
        let pick = |f: fn(&Breakdown) -> f64| -> Breakdown {
            let mut v: Vec<&Breakdown> = samples.iter().collect();
            v.sort_by(|x, y| f(x).total_cmp(&f(y)));
            v.get(v.len() / 2).copied().copied().unwrap_or_default()
        };
        let (w, r, rb, g) = (
            pick(|b| b.write),
            pick(|b| b.run),
            pick(|b| b.readback),
            pick(|b| b.gather),
        );
        Breakdown {
            write: w.write,
            write_layout: w.write_layout,
            write_copy: w.write_copy,
            run: r.run,
            readback: rb.readback,
            readback_copy: rb.readback_copy,
            readback_map: rb.readback_map,
            gather: g.gather,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn parts_add_up_to_their_phases_and_medians_keep_them_together() {
        let t0 = Instant::now();
        // Per-field medians of these writes' parts (3 and 1 ms) would not add up to the
        // median write (5 ms).
        let (layout, copy) = ([5u64, 1, 4, 2, 3], [0u64, 6, 1, 1, 9]);
        let samples: Vec<Breakdown> = (0..5)
            .map(|i| {
                let mut at = [t0; 7];
                let steps = [layout[i], copy[i], 2, 3 * i as u64 + 1, 1, 1];
                for (j, ms) in steps.iter().enumerate() {
                    at[j + 1] = at[j] + Duration::from_millis(*ms);
                }
                Marks { at }.into()
            })
            .collect();
        for b in samples.iter().chain([&Breakdown::median(&samples)]) {
            assert!((b.write_layout + b.write_copy - b.write).abs() < 1e-12);
            assert!((b.readback_copy + b.readback_map - b.readback).abs() < 1e-12);
            assert!(b.write_layout >= 0.0 && b.write_copy >= 0.0);
            assert!(b.readback_copy >= 0.0 && b.readback_map >= 0.0);
        }
        let m = Breakdown::median(&samples);
        assert!((m.write - 0.005).abs() < 1e-9 && (m.readback - 0.008).abs() < 1e-9);
    }
}
