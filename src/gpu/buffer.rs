//! Typed device buffers.

use std::marker::PhantomData;

use bytemuck::Pod;
use wgpu::util::DeviceExt;

use crate::gpu::Gpu;
use crate::{Error, Result};

/// A device buffer of `len` elements of `T`, usable as a storage binding and as a copy
/// source/destination. Never larger than the adapter's largest buffer: data that does not
/// fit is rejected with [`Error::TooLarge`] before wgpu sees it. A buffer may exceed one
/// storage binding; kernels then bind it piecewise (see [`crate::gpu::Kernel::bind_ranges`])
/// or refuse it with [`Error::TooLarge`] when they bind it.
pub struct GpuBuffer<T: Pod> {
    buffer: wgpu::Buffer,
    len: usize,
    _t: PhantomData<T>,
}

const USAGE: wgpu::BufferUsages = wgpu::BufferUsages::STORAGE
    .union(wgpu::BufferUsages::COPY_SRC)
    .union(wgpu::BufferUsages::COPY_DST);

impl<T: Pod> GpuBuffer<T> {
    /// Bytes the buffer occupies: at least 16, a multiple of 16 (vec4 views, empty data).
    fn padded_bytes(len: usize) -> u64 {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        bytes.max(16).div_ceil(16) * 16
    }

    /// Fails with [`Error::TooLarge`] when `len` elements exceed the largest buffer.
    pub fn check_fits(gpu: &Gpu, what: &str, len: usize) -> Result<()> {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .map_or(u64::MAX, |_| Self::padded_bytes(len));
        let limit = gpu.caps.max_buffer_bytes;
        if bytes > limit {
            return Err(Error::TooLarge {
                what: format!("{what} ({len} elements)"),
                needed: format!("{bytes} bytes in one buffer"),
                limit: format!("{limit} bytes on {}", gpu.caps.adapter_name),
            });
        }
        Ok(())
    }

    /// [`GpuBuffer::check_fits`], and fails with [`Error::TooLarge`] when `len` elements
    /// exceed one storage binding: for a buffer that a kernel binds whole. Call it on sizes
    /// that follow from an input before the host builds the data.
    pub fn check_binding(gpu: &Gpu, what: &str, len: usize) -> Result<()> {
        Self::check_fits(gpu, what, len)?;
        let bytes = (len as u64).saturating_mul(std::mem::size_of::<T>() as u64);
        let limit = gpu.caps.max_storage_binding_bytes;
        if bytes > limit {
            return Err(Error::TooLarge {
                what: format!("{what} ({len} elements)"),
                needed: format!("{bytes} bytes in one storage binding"),
                limit: format!("{limit} bytes on {}", gpu.caps.adapter_name),
            });
        }
        Ok(())
    }

    /// Uploads `data` into a new buffer labelled `label`.
    pub fn upload(gpu: &Gpu, label: &str, data: &[T]) -> Result<Self> {
        Self::check_fits(gpu, label, data.len())?;
        let bytes = Self::padded_bytes(data.len()) as usize;
        let raw: &[u8] = bytemuck::cast_slice(data);
        let buffer = gpu.scoped(label, || {
            if raw.len() == bytes {
                gpu.device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some(label),
                        contents: raw,
                        usage: USAGE,
                    })
            } else {
                let mut padded = raw.to_vec();
                padded.resize(bytes, 0);
                gpu.device
                    .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                        label: Some(label),
                        contents: &padded,
                        usage: USAGE,
                    })
            }
        })?;
        Ok(GpuBuffer {
            buffer,
            len: data.len(),
            _t: PhantomData,
        })
    }

    /// A new buffer of `len` zero elements.
    pub fn zeroed(gpu: &Gpu, label: &str, len: usize) -> Result<Self> {
        Self::check_fits(gpu, label, len)?;
        let buffer = gpu.scoped(label, || {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: Self::padded_bytes(len),
                usage: USAGE,
                mapped_at_creation: false,
            })
        })?;
        Ok(GpuBuffer {
            buffer,
            len,
            _t: PhantomData,
        })
    }

    /// A new buffer of `len` zero elements that can also hold indirect dispatch arguments
    /// (three u32 per dispatch, see [`crate::gpu::Batch::dispatch_indirect`]), written by a
    /// kernel that sizes the next dispatch on the device.
    pub fn zeroed_indirect(gpu: &Gpu, label: &str, len: usize) -> Result<Self> {
        Self::check_fits(gpu, label, len)?;
        let buffer = gpu.scoped(label, || {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: Self::padded_bytes(len),
                usage: USAGE | wgpu::BufferUsages::INDIRECT,
                mapped_at_creation: false,
            })
        })?;
        Ok(GpuBuffer {
            buffer,
            len,
            _t: PhantomData,
        })
    }

    /// A new buffer with every element equal to `value` (e.g. NaN to poison an output).
    pub fn filled(gpu: &Gpu, label: &str, len: usize, value: T) -> Result<Self> {
        Self::check_fits(gpu, label, len)?;
        Self::upload(gpu, label, &vec![value; len])
    }

    /// Overwrites the contents with `data` (same length).
    pub fn write(&self, gpu: &Gpu, data: &[T]) -> Result<()> {
        if data.len() != self.len {
            return Err(Error::Shape(format!(
                "writing {} elements into a buffer of {}",
                data.len(),
                self.len
            )));
        }
        if !data.is_empty() {
            gpu.queue
                .write_buffer(&self.buffer, 0, bytemuck::cast_slice(data));
        }
        Ok(())
    }

    /// Overwrites the first `data.len()` elements (at most the length), leaving the rest.
    pub fn write_prefix(&self, gpu: &Gpu, data: &[T]) -> Result<()> {
        if data.len() > self.len {
            return Err(Error::Shape(format!(
                "writing {} elements into a buffer of {}",
                data.len(),
                self.len
            )));
        }
        if !data.is_empty() {
            gpu.queue
                .write_buffer(&self.buffer, 0, bytemuck::cast_slice(data));
        }
        Ok(())
    }

    /// Sets every element to `value`, e.g. NaN to poison an output before a run.
    pub fn fill(&self, gpu: &Gpu, value: T) -> Result<()> {
        self.write(gpu, &vec![value; self.len])
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The underlying wgpu buffer (its size may be padded beyond `len`).
    pub fn raw(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Copies the contents back to the host (waits for all submitted work).
    pub fn read(&self, gpu: &Gpu) -> Result<Vec<T>> {
        let bytes = Self::padded_bytes(self.len);
        let staging = gpu.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let mut encoder = gpu
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("readback"),
            });
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &staging, 0, bytes);
        gpu.queue.submit([encoder.finish()]);
        let data = read_mapped(gpu, &staging)?;
        let n = self.len * std::mem::size_of::<T>();
        Ok(bytemuck::cast_slice(&data[..n]).to_vec())
    }
}

/// Maps a `MAP_READ` buffer and returns its bytes (a futures-intrusive oneshot carries the
/// map result; the device is polled until it arrives).
pub(crate) fn read_mapped(gpu: &Gpu, staging: &wgpu::Buffer) -> Result<Vec<u8>> {
    let slice = staging.slice(..);
    let (tx, rx) = futures_intrusive::channel::shared::oneshot_channel();
    slice.map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    gpu.wait()?;
    let mapped = pollster::block_on(rx.receive())
        .ok_or_else(|| Error::Gpu {
            kernel: "readback".into(),
            message: "map callback dropped".into(),
        })?
        .map_err(|e| Error::Gpu {
            kernel: "readback".into(),
            message: e.to_string(),
        });
    mapped?;
    let data = slice
        .get_mapped_range()
        .map_err(|e| Error::Gpu {
            kernel: "readback".into(),
            message: e.to_string(),
        })?
        .to_vec();
    staging.unmap();
    Ok(data)
}
