//! The staging ring: parts streamed through two device slots, the host writing one while
//! the device trains from the other.

use super::Trainer;
use crate::gpu::Batch;
use crate::Result;

impl Trainer<'_> {
    /// The staging ring's epoch: each part in turn is written into the next slot and its
    /// dispatches submitted without waiting, so the host writes part i + 1 (into the other
    /// slot) while the device trains part i; the queue orders each write after the
    /// submissions that read its slot before. Wall-clock time, transfers included.
    pub(super) fn ring_epoch(&mut self, part_order: &[u32]) -> Result<crate::gpu::GpuTime> {
        let gpu = self.gpu;
        let start = std::time::Instant::now();
        for (pos, &p) in part_order.iter().enumerate() {
            let (p, slot) = (p as usize, pos % 2);
            let ring = self.ring.as_ref().expect("ring mode");
            if self.parts[p].steps[slot].is_empty() {
                let r = &ring[slot];
                self.parts[p].steps[slot] =
                    self.epoch_steps(&self.parts[p], [&r[0], &r[1], &r[2]])?;
            }
            let ring = self.ring.as_ref().expect("ring mode");
            let part = &self.parts[p];
            let host = part.host.as_ref().expect("ring parts keep their arrays");
            for (buffer, words) in ring[slot]
                .iter()
                .zip([&host.meta, &host.sedge, &host.fedge])
            {
                buffer.write_prefix(gpu, words)?;
            }
            let mut batch = Batch::new(gpu);
            self.record(&mut batch, &part.steps[slot])?;
            batch.submit_nowait()?;
        }
        gpu.wait()?;
        Ok(crate::gpu::GpuTime::wall(start.elapsed().as_secs_f64()))
    }
}
