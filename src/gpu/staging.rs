//! Asynchronous read-back of part of a buffer: the copy into a host-visible staging buffer is
//! queued behind the work already submitted, and the host collects it later, while the
//! device runs whatever was submitted after it (how multi-device MF passes blocks of Q
//! between devices without idling them).

use std::ops::Range;
use std::sync::mpsc;

use bytemuck::Pod;

use crate::gpu::{Batch, Gpu, GpuBuffer};
use crate::{Error, Result};

/// A host-visible buffer of `capacity` elements of `T` that ranges of device buffers are
/// copied into.
pub struct Staging<T: Pod> {
    buffer: wgpu::Buffer,
    capacity: usize,
    _t: std::marker::PhantomData<T>,
}

/// A copy queued by [`Staging::copy_from`], to be collected by [`Staging::collect`].
pub struct StagedCopy {
    len: usize,
    submission: wgpu::SubmissionIndex,
    mapped: mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
}

fn gpu_error(message: impl ToString) -> Error {
    Error::Gpu {
        kernel: "staged read-back".into(),
        message: message.to_string(),
    }
}

impl<T: Pod> Staging<T> {
    /// A staging buffer for up to `capacity` elements (checked against the largest buffer).
    pub fn new(gpu: &Gpu, label: &str, capacity: usize) -> Result<Self> {
        GpuBuffer::<T>::check_fits(gpu, label, capacity)?;
        let bytes = ((capacity * std::mem::size_of::<T>()) as u64).max(4);
        let buffer = gpu.scoped(label, || {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes.div_ceil(4) * 4,
                usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                mapped_at_creation: false,
            })
        })?;
        Ok(Staging {
            buffer,
            capacity,
            _t: std::marker::PhantomData,
        })
    }

    /// Queues a copy of elements `range` of `src` into this buffer, behind everything already
    /// submitted, and asks for it to be mapped once done. Does not wait. The range's byte
    /// offset and length must be multiples of 4. Collect it with [`Staging::collect`] before
    /// the next copy into this buffer.
    pub fn copy_from(
        &self,
        gpu: &Gpu,
        src: &GpuBuffer<T>,
        range: Range<usize>,
    ) -> Result<StagedCopy> {
        let size = std::mem::size_of::<T>();
        let (offset, bytes) = ((range.start * size) as u64, (range.len() * size) as u64);
        if range.end > src.len()
            || range.len() > self.capacity
            || !offset.is_multiple_of(4)
            || !bytes.is_multiple_of(4)
        {
            return Err(Error::Shape(format!(
                "staging elements {range:?} of a buffer of {} into one of {}",
                src.len(),
                self.capacity
            )));
        }
        let (tx, mapped) = mpsc::channel();
        if bytes == 0 {
            let _ = tx.send(Ok(()));
            let submission = gpu.queue.submit(std::iter::empty());
            return Ok(StagedCopy {
                len: 0,
                submission,
                mapped,
            });
        }
        let submission = gpu.scoped("staged read-back", || {
            let mut encoder = gpu
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("staged read-back"),
                });
            encoder.copy_buffer_to_buffer(src.raw(), offset, &self.buffer, 0, bytes);
            let submission = gpu.queue.submit([encoder.finish()]);
            self.buffer
                .slice(..bytes)
                .map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
            submission
        })?;
        Ok(StagedCopy {
            len: range.len(),
            submission,
            mapped,
        })
    }

    /// Records a copy of elements `0..len` of `src` into this buffer at the end of `batch`
    /// (in the batch's command buffer: no submission of its own); once the batch is submitted,
    /// [`Staging::mapped_after`] asks for the map. Collect it before the next copy into this
    /// buffer.
    pub fn copy_in(&self, batch: &mut Batch, src: &GpuBuffer<T>, len: usize) -> Result<()> {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        if len > src.len() || len > self.capacity || !bytes.is_multiple_of(4) {
            return Err(Error::Shape(format!(
                "staging elements 0..{len} of a buffer of {} into one of {}",
                src.len(),
                self.capacity
            )));
        }
        if bytes > 0 {
            batch.copy(src.raw(), &self.buffer, bytes);
        }
        Ok(())
    }

    /// The copy [`Staging::copy_in`] recorded (`len` elements) into the batch that became
    /// `submission`: asks for the map, does not wait.
    pub fn mapped_after(&self, submission: wgpu::SubmissionIndex, len: usize) -> StagedCopy {
        let (tx, mapped) = mpsc::channel();
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        if bytes == 0 {
            let _ = tx.send(Ok(()));
        } else {
            self.buffer
                .slice(..bytes)
                .map_async(wgpu::MapMode::Read, move |r| {
                    let _ = tx.send(r);
                });
        }
        StagedCopy {
            len,
            submission,
            mapped,
        }
    }

    /// Waits for `copy` (and what was submitted before it, not after) and returns its elements.
    pub fn collect(&self, gpu: &Gpu, copy: StagedCopy) -> Result<Vec<T>> {
        let ready = self.wait(gpu, copy)?;
        Ok(self.view(ready)?.to_vec())
    }

    /// Waits for `copy` (and what was submitted before it) to be done on the device, not for
    /// the map: [`Staging::wait`] after it waits only for the map.
    pub fn wait_copied(&self, gpu: &Gpu, copy: &StagedCopy) -> Result<()> {
        gpu.wait_for(copy.submission.clone())
    }

    /// Waits for `copy` (and what was submitted before it) to be done and mapped, without
    /// looking at it: [`Staging::view`] then reads it in place, on any thread.
    pub fn wait(&self, gpu: &Gpu, copy: StagedCopy) -> Result<Ready<'_>> {
        gpu.wait_for(copy.submission)?;
        copy.mapped
            .recv()
            .map_err(|_| gpu_error("map callback dropped"))?
            .map_err(gpu_error)?;
        Ok(Ready {
            mapped: (copy.len > 0).then_some(&self.buffer),
            len: copy.len,
        })
    }

    /// The copied elements where they lie, in the mapped buffer (no host copy); the buffer is
    /// unmapped when the view is dropped, ready for the next copy.
    pub fn view(&self, mut ready: Ready<'_>) -> Result<StagedView<'_, T>> {
        let bytes = (ready.len * std::mem::size_of::<T>()) as u64;
        // From here the view, not `ready`, unmaps the buffer.
        let view = match ready.mapped.take() {
            None => None,
            Some(_) => Some(self.buffer.slice(..bytes).get_mapped_range().map_err(|e| {
                self.buffer.unmap();
                gpu_error(e)
            })?),
        };
        Ok(StagedView {
            buffer: &self.buffer,
            view,
            _t: std::marker::PhantomData,
        })
    }
}

/// A copy of [`Staging::copy_from`] done and mapped ([`Staging::wait`]). Dropped without
/// being viewed, it unmaps the buffer (so an error elsewhere leaves it ready for a copy).
#[derive(Debug)]
pub struct Ready<'s> {
    mapped: Option<&'s wgpu::Buffer>,
    len: usize,
}

impl Drop for Ready<'_> {
    fn drop(&mut self) {
        if let Some(buffer) = self.mapped.take() {
            buffer.unmap();
        }
    }
}

/// Elements of a mapped staging buffer ([`Staging::view`]); derefs to `[T]` and unmaps the
/// buffer when dropped.
pub struct StagedView<'s, T: Pod> {
    buffer: &'s wgpu::Buffer,
    view: Option<wgpu::BufferView>,
    _t: std::marker::PhantomData<T>,
}

impl<T: Pod> std::ops::Deref for StagedView<'_, T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        self.view
            .as_deref()
            .map_or(&[], |bytes| bytemuck::cast_slice(bytes))
    }
}

impl<T: Pod> Drop for StagedView<'_, T> {
    fn drop(&mut self) {
        // The view must go before the unmap.
        let mapped = self.view.take().is_some();
        if mapped {
            self.buffer.unmap();
        }
    }
}

impl<T: Pod> GpuBuffer<T> {
    /// Overwrites elements `offset..offset + data.len()` with `data`, ordered after the work
    /// already submitted and before the next submission. Offset and length in bytes must be
    /// multiples of 4.
    pub fn write_at(&self, gpu: &Gpu, offset: usize, data: &[T]) -> Result<()> {
        let size = std::mem::size_of::<T>();
        if offset + data.len() > self.len()
            || !(offset * size).is_multiple_of(4)
            || !std::mem::size_of_val(data).is_multiple_of(4)
        {
            return Err(Error::Shape(format!(
                "writing {} elements at {offset} into a buffer of {}",
                data.len(),
                self.len()
            )));
        }
        if !data.is_empty() {
            gpu.queue.write_buffer(
                self.raw(),
                (offset * size) as u64,
                bytemuck::cast_slice(data),
            );
        }
        Ok(())
    }
}
