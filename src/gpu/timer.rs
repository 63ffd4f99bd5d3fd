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
    pub(crate) fn wall(seconds: f64) -> Self {
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

/// A two-entry query set bracketing one compute pass.
pub(crate) struct Timestamps {
    set: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    staging: wgpu::Buffer,
}

impl Timestamps {
    pub(crate) fn new(gpu: &Gpu) -> Self {
        let set = gpu.device.create_query_set(&wgpu::QuerySetDescriptor {
            label: Some("wgsparse.timestamps"),
            ty: wgpu::QueryType::Timestamp,
            count: 2,
        });
        let resolve = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgsparse.timestamps.resolve"),
            size: 16,
            usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("wgsparse.timestamps.staging"),
            size: 16,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        Timestamps {
            set,
            resolve,
            staging,
        }
    }

    pub(crate) fn pass_writes(&self) -> wgpu::ComputePassTimestampWrites<'_> {
        wgpu::ComputePassTimestampWrites {
            query_set: &self.set,
            beginning_of_pass_write_index: Some(0),
            end_of_pass_write_index: Some(1),
        }
    }

    pub(crate) fn resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.resolve_query_set(&self.set, 0..2, &self.resolve, 0);
        encoder.copy_buffer_to_buffer(&self.resolve, 0, &self.staging, 0, 16);
    }

    pub(crate) fn read(&self, gpu: &Gpu) -> Result<GpuTime> {
        let bytes = read_mapped(gpu, &self.staging)?;
        let ticks: &[u64] = bytemuck::cast_slice(&bytes);
        let elapsed = ticks[1].saturating_sub(ticks[0]) as f64;
        Ok(GpuTime {
            seconds: elapsed * gpu.caps.timestamp_period_ns as f64 * 1e-9,
            from_timestamps: true,
        })
    }
}
