//! The staging ring: parts streamed through two device slots, the host filling one slot's
//! reused staging buffers while the device trains from the other slot.
//!
//! Memory: two slots on the device, each as large as the largest part's arrays, and for
//! each slot staging buffers ([`Upload`]) as large as its arrays: host-visible memory of
//! 2 × the slot bytes (pinned host memory, or device memory behind a resizable BAR where the
//! driver offers a heap that large), besides the parts' own host arrays.

use super::Trainer;
use crate::gpu::{host_cores, write_parallel, Batch, Gpu, GpuBuffer, Upload};
use crate::{Error, Result};

/// A ring slot: the device arrays a part is trained from (meta, sample-sorted and
/// feature-sorted edges), each sized for the largest part, and a reused staging buffer per
/// array, as large as it.
pub(super) struct Slot {
    arrays: [GpuBuffer<u32>; 3],
    ups: [Upload; 3],
}

impl Slot {
    /// A slot whose arrays hold `lens` words (meta, sedge, fedge), zeroed, with their
    /// staging buffers (mapped, ready to fill).
    pub fn new(gpu: &Gpu, lens: [usize; 3]) -> Result<Self> {
        let names = ["wide.ring.meta", "wide.ring.sedge", "wide.ring.fedge"];
        let array = |i: usize| GpuBuffer::<u32>::zeroed(gpu, names[i], lens[i]);
        let arrays = [array(0)?, array(1)?, array(2)?];
        let up = |i: usize| Upload::for_buffer(gpu, &format!("{}.up", names[i]), &arrays[i]);
        let ups = [up(0)?, up(1)?, up(2)?];
        Ok(Slot { arrays, ups })
    }

    /// The slot's arrays, as the part's dispatches bind them.
    pub fn bound(&self) -> [&GpuBuffer<u32>; 3] {
        let [m, s, f] = &self.arrays;
        [m, s, f]
    }

    /// Lays `host`'s arrays out in the staging buffers (each on up to `threads` host
    /// threads) and queues the copy of each one's prefix, its own length, into the slot's
    /// array; no wait. A fill waits only for the copy this slot's staging buffer took last
    /// (two parts ago), not for the training submitted since.
    fn write(&self, gpu: &Gpu, host: [&[u32]; 3], threads: usize) -> Result<()> {
        for ((array, up), words) in self.arrays.iter().zip(&self.ups).zip(host) {
            up.fill(gpu, |w| write_parallel(w, words, threads))?;
            up.flush_prefix(gpu, array, std::mem::size_of_val(words) as u64)?;
        }
        Ok(())
    }
}

fn not_ring(what: &str) -> Error {
    Error::Option(format!("the staging ring's epoch without {what}"))
}

impl Trainer<'_> {
    /// The staging ring's epoch: each part in turn is laid out in the next slot's staging
    /// buffers, copied into the slot (its prefix) and its dispatches submitted without
    /// waiting, so the host fills part i + 1 (the other slot's staging) while the device
    /// trains part i. Wall-clock time, transfers included.
    pub(super) fn ring_epoch(&mut self, part_order: &[u32]) -> Result<crate::gpu::GpuTime> {
        let gpu = self.gpu;
        let threads = host_cores();
        let start = std::time::Instant::now();
        for (pos, &p) in part_order.iter().enumerate() {
            let (p, slot) = (p as usize, pos % 2);
            let ring = self.ring.as_ref().ok_or_else(|| not_ring("its slots"))?;
            if self.parts[p].steps[slot].is_empty() {
                let steps = self.epoch_steps(&self.parts[p], ring[slot].bound())?;
                self.parts[p].steps[slot] = steps;
            }
            let ring = self.ring.as_ref().ok_or_else(|| not_ring("its slots"))?;
            let part = &self.parts[p];
            let host = part
                .host
                .as_ref()
                .ok_or_else(|| not_ring("a part's host arrays"))?;
            // Invariant: the copy into slot `slot` is queued after every submission that
            // reads it (part pos − 2's training, already submitted), and the queue runs
            // submissions in order with wgpu's barriers between a read and a later copy
            // into the same buffer: a slot is never overwritten before its part is
            // trained, and this part's training, submitted next, sees its whole prefix.
            ring[slot].write(gpu, [&host.meta, &host.sedge, &host.fedge], threads)?;
            let mut batch = Batch::new(gpu);
            self.record(&mut batch, &part.steps[slot])?;
            batch.submit_nowait()?;
        }
        gpu.wait()?;
        Ok(crate::gpu::GpuTime::wall(start.elapsed().as_secs_f64()))
    }
}
