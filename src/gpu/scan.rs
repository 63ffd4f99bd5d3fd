//! Device-wide exclusive prefix sum of `u32` values: the building block of work that
//! counts, then places (plans built on the GPU, compactions). Blocks of 1,024 elements are
//! scanned by one workgroup each (`runtime/scan_blocks`), their totals are scanned the same
//! way level by level, and the offsets are added back (`runtime/scan_add`); all dispatches
//! go into the caller's batch.

use std::sync::Arc;

use bytemuck::{Pod, Zeroable};

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::Result;

/// Invocations per workgroup of the scan kernels.
const WG: usize = 256;
/// Elements one workgroup scans (WG invocations × 4 each; `ITEMS` in the shaders).
const BLOCK: usize = WG * 4;

const BINDINGS: [Binding; 3] = [Binding::Uniform, Binding::ReadWrite, Binding::ReadWrite];

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    n: u32,
    pad: [u32; 3],
}

/// One level: `n` elements in blocks of [`BLOCK`], whose totals go to `sums`.
struct Level {
    n: usize,
    params: wgpu::Buffer,
    sums: GpuBuffer<u32>,
}

/// A prepared exclusive scan of `len` elements (scratch for the block totals of every
/// level), reusable on any buffer of at least `len` elements. Totals wrap modulo 2³².
pub struct ExclusiveScan {
    len: usize,
    levels: Vec<Level>,
    scan: Arc<Kernel>,
    add: Arc<Kernel>,
}

impl ExclusiveScan {
    /// Scratch and kernels for scanning `len` elements.
    pub fn new(gpu: &Gpu, len: usize) -> Result<Self> {
        let kernel = |name| {
            gpu.kernel(&KernelSpec {
                name,
                defines: vec![],
                constants: vec![("WG", WG as f64)],
                bindings: &BINDINGS,
            })
        };
        let mut levels = Vec::new();
        let mut n = len;
        while n > 0 {
            let blocks = n.div_ceil(BLOCK);
            let params = Params {
                n: n as u32,
                pad: [0; 3],
            };
            levels.push(Level {
                n,
                params: gpu.uniform("scan.params", &params),
                sums: GpuBuffer::zeroed(gpu, "scan.sums", blocks)?,
            });
            if blocks == 1 {
                break;
            }
            n = blocks;
        }
        Ok(ExclusiveScan {
            len,
            levels,
            scan: kernel("runtime/scan_blocks")?,
            add: kernel("runtime/scan_add")?,
        })
    }

    /// Elements one workgroup scans: the blocks whose totals [`ExclusiveScan::record_blocks`]
    /// leaves to its caller.
    pub const BLOCK: usize = BLOCK;

    /// Records the in-place exclusive scan of the first `len` elements of `data`:
    /// `data[i] ← data[0] + … + data[i − 1]`.
    pub fn record(&self, batch: &mut Batch, data: &GpuBuffer<u32>) -> Result<()> {
        self.record_levels(batch, data, false)
    }

    /// The first pass of [`ExclusiveScan::record`] alone (one dispatch): each block of
    /// [`ExclusiveScan::BLOCK`] elements of `data` scanned in place and its total written
    /// to [`ExclusiveScan::totals`], for a caller that reads the scan in its own next
    /// dispatch: element i of the scan is `data[i]` plus the totals of the blocks before
    /// `i / BLOCK` (none with one block). The other passes' dispatches are saved.
    pub fn record_blocks(&self, batch: &mut Batch, data: &GpuBuffer<u32>) -> Result<()> {
        self.record_levels(batch, data, true)
    }

    /// The block totals [`ExclusiveScan::record_blocks`] writes (`None` for one block or
    /// none), to bind before recording.
    pub fn totals(&self) -> Option<&GpuBuffer<u32>> {
        (self.levels.len() > 1).then(|| &self.levels[0].sums)
    }

    fn record_levels(
        &self,
        batch: &mut Batch,
        data: &GpuBuffer<u32>,
        first_only: bool,
    ) -> Result<()> {
        let gpu = batch.gpu();
        assert!(
            data.len() >= self.len,
            "scan of {} elements on {}",
            self.len,
            data.len()
        );
        // Level i scans level i − 1's block totals (level 0 scans `data`).
        let input = |i: usize| {
            if i == 0 {
                data.raw()
            } else {
                self.levels[i - 1].sums.raw()
            }
        };
        for (i, level) in self.levels.iter().enumerate() {
            let bg = self
                .scan
                .bind(gpu, &[&level.params, input(i), level.sums.raw()])?;
            batch.dispatch(&self.scan, bg, gpu.grid(level.n.div_ceil(BLOCK) as u32)?)?;
            if first_only {
                return Ok(());
            }
        }
        // The top level is one block (its offset is 0); add the others' offsets back down.
        for (i, level) in self.levels.iter().enumerate().rev().skip(1) {
            let bg = self
                .add
                .bind(gpu, &[&level.params, input(i), level.sums.raw()])?;
            batch.dispatch(&self.add, bg, gpu.grid(level.n.div_ceil(BLOCK) as u32)?)?;
        }
        Ok(())
    }
}
