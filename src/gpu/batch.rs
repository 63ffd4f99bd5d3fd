//! Recording many dispatches and submitting them once.

use std::sync::Arc;

use crate::gpu::timer::{GpuTime, Timestamps};
use crate::gpu::{Gpu, Kernel};
use crate::{Error, Result};

enum Step {
    Dispatch {
        kernel: Arc<Kernel>,
        bind_group: wgpu::BindGroup,
        grid: [u32; 3],
    },
    Copy {
        src: wgpu::Buffer,
        dst: wgpu::Buffer,
        bytes: u64,
    },
}

/// A list of dispatches (and buffer copies) recorded by kernel functions and submitted in
/// one command buffer; consecutive dispatches share one compute pass. wgpu orders
/// dispatches in a pass that touch the same buffer, so later steps see earlier results.
pub struct Batch<'g> {
    gpu: &'g Gpu,
    steps: Vec<Step>,
}

impl<'g> Batch<'g> {
    /// An empty batch on `gpu`.
    pub fn new(gpu: &'g Gpu) -> Self {
        Batch { gpu, steps: vec![] }
    }

    /// The device this batch records for.
    pub fn gpu(&self) -> &'g Gpu {
        self.gpu
    }

    /// Records one dispatch of `kernel` over `grid` workgroups (a zero-sized grid is skipped).
    pub fn dispatch(
        &mut self,
        kernel: &Arc<Kernel>,
        bind_group: wgpu::BindGroup,
        grid: [u32; 3],
    ) -> Result<()> {
        let max = self.gpu.caps.max_workgroups_per_dimension;
        if grid.iter().any(|&g| g > max) {
            return Err(Error::TooLarge {
                what: format!("dispatch of {}", kernel.label),
                needed: format!("{grid:?} workgroups"),
                limit: format!("{max} per dimension"),
            });
        }
        if grid.contains(&0) {
            return Ok(());
        }
        self.steps.push(Step::Dispatch {
            kernel: kernel.clone(),
            bind_group,
            grid,
        });
        Ok(())
    }

    /// Records a buffer-to-buffer copy of `bytes` bytes.
    pub fn copy(&mut self, src: &wgpu::Buffer, dst: &wgpu::Buffer, bytes: u64) {
        self.steps.push(Step::Copy {
            src: src.clone(),
            dst: dst.clone(),
            bytes,
        });
    }

    /// Number of recorded dispatches.
    pub fn dispatches(&self) -> usize {
        self.steps
            .iter()
            .filter(|s| matches!(s, Step::Dispatch { .. }))
            .count()
    }

    fn encode(&self, timestamps: Option<&Timestamps>) -> wgpu::CommandBuffer {
        let mut encoder = self
            .gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("wgsparse.batch"),
            });
        // With timestamps, everything runs in one pass so its begin/end bracket all work.
        let mut i = 0;
        let mut first_pass = true;
        while i < self.steps.len() {
            if let Step::Copy { src, dst, bytes } = &self.steps[i] {
                encoder.copy_buffer_to_buffer(src, 0, dst, 0, *bytes);
                i += 1;
                continue;
            }
            let writes = timestamps.filter(|_| first_pass).map(|t| t.pass_writes());
            first_pass = false;
            let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
                label: Some("wgsparse.pass"),
                timestamp_writes: writes,
            });
            while let Some(Step::Dispatch {
                kernel,
                bind_group,
                grid,
            }) = self.steps.get(i)
            {
                pass.set_pipeline(&kernel.pipeline);
                pass.set_bind_group(0, bind_group, &[]);
                pass.dispatch_workgroups(grid[0], grid[1], grid[2]);
                i += 1;
            }
        }
        if let Some(t) = timestamps {
            t.resolve(&mut encoder);
        }
        encoder.finish()
    }

    /// Submits everything recorded and waits for it to finish.
    pub fn submit(self) -> Result<()> {
        let gpu = self.gpu;
        let labels = self.labels();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(None)]))?;
        gpu.wait()
    }

    /// Submits and returns the GPU time of the work: from timestamp queries around the one
    /// compute pass when the adapter has them and the batch has no copies, else wall clock
    /// around submit-and-wait.
    pub fn submit_timed(self) -> Result<GpuTime> {
        let gpu = self.gpu;
        let labels = self.labels();
        let single_pass = self
            .steps
            .iter()
            .all(|s| matches!(s, Step::Dispatch { .. }));
        if gpu.caps.timestamps && single_pass && !self.steps.is_empty() {
            let ts = Timestamps::new(gpu);
            gpu.scoped(&labels, || gpu.queue.submit([self.encode(Some(&ts))]))?;
            return ts.read(gpu);
        }
        let start = std::time::Instant::now();
        gpu.scoped(&labels, || gpu.queue.submit([self.encode(None)]))?;
        gpu.wait()?;
        Ok(GpuTime::wall(start.elapsed().as_secs_f64()))
    }

    fn labels(&self) -> String {
        let mut names: Vec<&str> = self
            .steps
            .iter()
            .filter_map(|s| match s {
                Step::Dispatch { kernel, .. } => Some(kernel.label.as_str()),
                Step::Copy { .. } => None,
            })
            .collect();
        names.dedup();
        if names.is_empty() {
            "batch".into()
        } else {
            names.join("+")
        }
    }
}
