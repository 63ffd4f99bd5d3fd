//! GPU time from timestamp queries, with a wall-clock fallback.

use serde::Serialize;

use crate::gpu::buffer::read_mapped;
use crate::gpu::Gpu;
use crate::Result;

/// A measured duration and where it came from.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct GpuTime {
    /// Seconds.
    pub seconds: f64,
    /// True when measured by timestamp queries on the GPU, false for wall clock on the host.
    pub from_timestamps: bool,
}

impl GpuTime {
    /// A wall-clock duration on the host.
    pub fn wall(seconds: f64) -> Self {
        GpuTime {
            seconds,
            from_timestamps: false,
        }
    }

    /// Milliseconds.
    pub fn ms(&self) -> f64 {
        self.seconds * 1e3
    }

    /// "timestamps" or "wall clock".
    pub fn source(&self) -> &'static str {
        if self.from_timestamps {
            "timestamps"
        } else {
            "wall clock"
        }
    }
}

/// A query set of timestamps: two bracketing one compute pass (or a run of passes and
/// copies), or a begin/end pair per pass ([`Timestamps::with_count`], a batch's phases).
pub(crate) struct Timestamps {
    set: wgpu::QuerySet,
    count: u32,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
}

/// Most timestamps one query set holds (wgpu's limit on a query set).
pub(crate) const MAX_TIMESTAMPS: u32 = 4096;

impl Timestamps {
    pub(crate) fn new(gpu: &Gpu) -> Self {
        Self::with_count(gpu, 2)
    }

    /// A set of `count` timestamps (2 ≤ count ≤ [`MAX_TIMESTAMPS`]).
    pub(crate) fn with_count(gpu: &Gpu, count: u32) -> Self {
        let count = count.clamp(2, MAX_TIMESTAMPS);
        let set = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("wgsparse.timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count,
        });
        let bytes = 8 * count as u64;
        let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgsparse.timestamps.resolve"),
            size: bytes,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgsparse.timestamps.staging"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Timestamps {
            set,
            count,
            resolve,
            staging,
        }
    }

    /// A pass's writes: the first timestamp at its beginning (`begin`), the second at its
    /// end (`end`).
    pub(crate) fn pass_writes_ends(
        &self,
        begin: bool,
        end: bool,
    ) -> wgpu::ComputePassTimestampWrites<'_> {
        self.pass_writes(begin.then_some(0), end.then_some(1))
    }

    /// A pass's writes into the given entries at its beginning and end.
    pub(crate) fn pass_writes(
        &self,
        begin: Option<u32>,
        end: Option<u32>,
    ) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: begin,
            end_of_pass_write_index: end,
        }
    }

    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.set, 0..self.count, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.staging, 0, 8 * self.count as u64);
    }

    /// Every entry, in seconds after entry 0 (waits for the device).
    pub(crate) fn seconds(&self, gpu: &Gpu) -> Result<Vec<f64>> {
        let bytes = read_mapped(gpu, &self.staging)?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        let period = gpu.caps.timestamp_period_ns as f64 * 1e-9;
        Ok(ticks
            .iter()
            .map(|&t| t.saturating_sub(ticks[0]) as f64 * period)
            .collect())
    }

    pub(crate) fn read(&self, gpu: &Gpu) -> Result<GpuTime> {
        let s = self.seconds(gpu)?;
        Ok(GpuTime {
            seconds: s[1],
            from_timestamps: true,
        })
    }
}

/// Least wall-clock time spent re-running a workload before timing it. GPUs scale their
/// clocks with load: after host work (plan building, a CPU check) an H200 sat at ~500 MHz
/// instead of 1,980 MHz and ran kernels 3–4× slower until about 0.3 s of continuous load
/// brought it back (see BENCHMARKS.md).
pub const WARM_UP_SECONDS: f64 = 0.5;
/// Least warm-up when the device has been idle (no timed workload ended within
/// [`IDLE_SECONDS`]): an H100 held a steady plateau 3–4× slow for 0.5–0.6 s of load after
/// seconds of plan building, so a warm-up of [`WARM_UP_SECONDS`] could end, its timings
/// agreeing, before the clocks rose (BENCHMARKS.md, twenty-sixth measurements).
pub const COLD_WARM_UP_SECONDS: f64 = 1.5;
/// Idle time after which the clocks may have fallen: about a second of idling took an H200
/// to its lowest clock; half of it counts as idle here.
pub const IDLE_SECONDS: f64 = 0.5;
/// Most wall-clock time spent warming up when timings do not settle.
pub const WARM_UP_MAX_SECONDS: f64 = 3.0;
/// Warm-up ends once the last three timings are within this fraction of each other.
const SETTLED: f64 = 0.03;

/// Runs `run` back to back until the GPU's clocks have settled (at least
/// [`WARM_UP_SECONDS`], or [`COLD_WARM_UP_SECONDS`] when the device has been idle, and the
/// last three timings within 3% of each other, at most [`WARM_UP_MAX_SECONDS`]; on a CPU
/// device, which has no clock scaling, two runs), then `reps` more times (at least once),
/// and returns the median of those timings.
pub fn median_warm(
    gpu: &Gpu,
    reps: usize,
    run: impl FnMut() -> Result<GpuTime>,
) -> Result<GpuTime> {
    let times = timed_warm(gpu, reps, run)?;
    Ok(times[times.len() / 2])
}

/// What a warm-up did before the timed runs: whether the clocks ramped during it (its first
/// runs slower than its last) or a workload ran slow throughout.
#[derive(Clone, Copy, Debug, Default, Serialize)]
pub struct WarmUp {
    /// Runs before the timed ones.
    pub runs: usize,
    /// Whether the device had been idle before it ([`COLD_WARM_UP_SECONDS`] of load at least).
    pub cold: bool,
    /// Wall-clock seconds they took.
    pub seconds: f64,
    /// The first run's time, seconds.
    pub first_s: f64,
    /// The fastest run's, seconds.
    pub fastest_s: f64,
    /// The last run's, seconds.
    pub last_s: f64,
}

/// [`median_warm`]'s timed runs, fastest first (at least one): for reports of the best and
/// the median.
pub fn timed_warm(
    gpu: &Gpu,
    reps: usize,
    run: impl FnMut() -> Result<GpuTime>,
) -> Result<Vec<GpuTime>> {
    Ok(timed_warm_report(gpu, reps, run)?.0)
}

/// [`timed_warm`] and what its warm-up did.
pub fn timed_warm_report(
    gpu: &Gpu,
    reps: usize,
    mut run: impl FnMut() -> Result<GpuTime>,
) -> Result<(Vec<GpuTime>, WarmUp)> {
    let start = std::time::Instant::now();
    let cpu = gpu.caps.device_type == "Cpu";
    let cold = last_timed_end(gpu)
        .is_none_or(|end| start.saturating_duration_since(end).as_secs_f64() > IDLE_SECONDS);
    let least = if cold {
        COLD_WARM_UP_SECONDS
    } else {
        WARM_UP_SECONDS
    };
    let mut last = [f64::NAN; 3];
    let mut warm = WarmUp {
        cold,
        fastest_s: f64::INFINITY,
        ..Default::default()
    };
    for n in 0.. {
        last[n % 3] = run()?.seconds;
        let t = last[n % 3];
        if n == 0 {
            warm.first_s = t;
        }
        warm.fastest_s = warm.fastest_s.min(t);
        warm.last_s = t;
        warm.runs = n + 1;
        let elapsed = start.elapsed().as_secs_f64();
        let (lo, hi) = last
            .iter()
            .fold((f64::INFINITY, 0f64), |(l, h), &t| (l.min(t), h.max(t)));
        let settled = n >= 2 && hi <= lo * (1.0 + SETTLED);
        if (cpu && n >= 1) || (settled && elapsed >= least) || elapsed >= WARM_UP_MAX_SECONDS {
            warm.seconds = elapsed;
            break;
        }
    }
    let mut times = (0..reps.max(1))
        .map(|_| run())
        .collect::<Result<Vec<GpuTime>>>()?;
    // A poisoned lock still holds a valid instant.
    *gpu.last_timed_end.lock().unwrap_or_else(|e| e.into_inner()) = Some(std::time::Instant::now());
    times.sort_by(|x, y| x.seconds.total_cmp(&y.seconds));
    Ok((times, warm))
}

/// When the last warmed, timed workload on `gpu` ended (None: none yet).
fn last_timed_end(gpu: &Gpu) -> Option<std::time::Instant> {
    *gpu.last_timed_end.lock().unwrap_or_else(|e| e.into_inner())
}
