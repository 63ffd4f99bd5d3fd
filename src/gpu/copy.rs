//! A buffer copy recorded as a compute dispatch (`runtime/copy_words`) instead of a transfer
//! command: made once for a (source, destination, length), recorded into any [`Batch`].

use crate::gpu::{Batch, Binding, Gpu, GpuBuffer, Kernel, KernelSpec};
use crate::{Error, Result};
use bytemuck::{Pod, Zeroable};
use std::sync::Arc;

/// Invocations per workgroup of `runtime/copy_words`.
const WG: u32 = 256;
/// Most workgroups of one copy: about as many invocations as a large GPU holds at once
/// (1,024 × 256 = 262,144); longer copies stride (a few dozen iterations for 10⁷ words).
const MAX_GROUPS: u32 = 1024;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Params {
    n: u32,
    stride: u32,
}

/// `dst[..words] = src[..words]` (4-byte words) by the compute units.
pub struct WordCopy {
    kernel: Arc<Kernel>,
    bind_group: wgpu::BindGroup,
    groups: u32,
}

impl WordCopy {
    /// The copy of the first `words` 4-byte words of `src` into `dst`. Fails with
    /// [`Error::Shape`] when either buffer holds fewer or `words` exceeds the u32 range.
    pub fn new<T: Pod, U: Pod>(
        gpu: &Gpu,
        src: &GpuBuffer<T>,
        dst: &GpuBuffer<U>,
        words: usize,
    ) -> Result<Self> {
        let bytes = words as u64 * 4;
        let (have_src, have_dst) = (
            (src.len() * std::mem::size_of::<T>()) as u64,
            (dst.len() * std::mem::size_of::<U>()) as u64,
        );
        if bytes > have_src || bytes > have_dst || words > u32::MAX as usize {
            return Err(Error::Shape(format!(
                "word copy of {words} words: source {have_src} bytes, destination {have_dst} bytes"
            )));
        }
        let (src, dst) = (src.raw(), dst.raw());
        let kernel = gpu.kernel(&KernelSpec {
            name: "runtime/copy_words",
            defines: vec![],
            constants: vec![("WG", WG as f64)],
            bindings: &[Binding::Uniform, Binding::Read, Binding::ReadWrite],
        })?;
        let groups = (words as u32).div_ceil(WG).clamp(1, MAX_GROUPS);
        let params = gpu.uniform(
            "runtime.copy_words.params",
            &Params {
                n: words as u32,
                stride: groups * WG,
            },
        );
        let size = |b: &wgpu::Buffer| std::num::NonZeroU64::new(bytes.max(4).min(b.size()));
        let bind_group = kernel.bind_ranges(
            gpu,
            &[
                params.as_entire_buffer_binding(),
                wgpu::BufferBinding {
                    buffer: src,
                    offset: 0,
                    size: size(src),
                },
                wgpu::BufferBinding {
                    buffer: dst,
                    offset: 0,
                    size: size(dst),
                },
            ],
        )?;
        Ok(WordCopy {
            kernel,
            bind_group,
            groups,
        })
    }

    /// Records the copy into `batch` (one dispatch).
    pub fn record(&self, batch: &mut Batch) -> Result<()> {
        batch.dispatch(&self.kernel, self.bind_group.clone(), [self.groups, 1, 1])
    }
}
