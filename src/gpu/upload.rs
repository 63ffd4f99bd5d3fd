//! A reused host-visible buffer that new contents of one device buffer are written into and
//! copied from: an iterating caller's operands reach the device with no allocation per write
//! (`queue.write_buffer` stages every call in a buffer of its own), and the host fills it
//! straight from its own arrays, on several threads when it is large.

use std::sync::{mpsc, Mutex};

use bytemuck::Pod;

use crate::gpu::{Gpu, GpuBuffer};
use crate::{Error, Result};

type MapResult = std::result::Result<(), wgpu::BufferAsyncError>;

/// A `MAP_WRITE | COPY_SRC` buffer as large as its destination. Between [`Upload::fill`] and
/// [`Upload::flush`] it is mapped; after a flush it is mapped again once the copy is done
/// (the next fill waits for that).
pub struct Upload {
    buffer: wgpu::Buffer,
    bytes: u64,
    state: Mutex<State>,
}

/// Where an [`Upload`] stands.
enum State {
    /// Flushed; the map it asked for has not been seen to complete.
    Pending(mpsc::Receiver<MapResult>),
    /// Mapped; `filled` once a fill succeeded (only then may it be flushed).
    Mapped { filled: bool },
}

fn gpu_error(message: impl ToString) -> Error {
    Error::Gpu {
        kernel: "staged write".into(),
        message: message.to_string(),
    }
}

impl Upload {
    /// A staging buffer for the whole of `dst` (its padded size), mapped and ready to fill.
    pub fn for_buffer<T: Pod>(gpu: &Gpu, label: &str, dst: &GpuBuffer<T>) -> Result<Self> {
        Self::new(gpu, label, dst.raw().size())
    }

    /// A staging buffer of `bytes` bytes (a multiple of 4), mapped and ready to fill: one
    /// piece of a destination, copied into it by [`Upload::flush_at`].
    pub fn new(gpu: &Gpu, label: &str, bytes: u64) -> Result<Self> {
        if !bytes.is_multiple_of(4) {
            return Err(Error::Shape(format!("a staging buffer of {bytes} bytes")));
        }
        let buffer = gpu.scoped(label, || {
            gpu.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: bytes,
                usage: wgpu::BufferUsages::MAP_WRITE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: true,
            })
        })?;
        Ok(Upload {
            buffer,
            bytes,
            state: Mutex::new(State::Mapped { filled: false }),
        })
    }

    /// Bytes it holds (the destination's padded size).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, State>> {
        self.state.lock().map_err(|_| gpu_error("poisoned lock"))
    }

    /// Waits until the buffer is mapped (the last flush's copy done) and hands its bytes,
    /// write-only, to `f`. Nothing reaches the device until [`Upload::flush`]; when `f`
    /// fails the buffer stays mapped, refuses to flush, and the next fill starts over.
    pub fn fill<R>(
        &self,
        gpu: &Gpu,
        f: impl FnOnce(wgpu::WriteOnly<'_, [u8]>) -> Result<R>,
    ) -> Result<R> {
        let mut state = self.lock()?;
        if let State::Pending(rx) = &*state {
            let mapped = match rx.try_recv() {
                Ok(r) => r,
                Err(_) => {
                    gpu.wait()?;
                    rx.recv().map_err(|_| gpu_error("map callback dropped"))?
                }
            };
            mapped.map_err(gpu_error)?;
        }
        *state = State::Mapped { filled: false };
        let value = {
            let mut view = self.buffer.get_mapped_range_mut(..).map_err(gpu_error)?;
            f(view.slice(..))?
        };
        *state = State::Mapped { filled: true };
        Ok(value)
    }

    /// Whether a fill succeeded since the last flush.
    pub fn is_filled(&self) -> bool {
        self.lock()
            .is_ok_and(|s| matches!(*s, State::Mapped { filled: true }))
    }

    /// Unmaps the filled buffer, queues its copy into `dst` (ordered after the work already
    /// submitted) and asks for it to be mapped again once the copy is done. Does not wait.
    /// An error unless the last fill succeeded.
    pub fn flush<T: Pod>(&self, gpu: &Gpu, dst: &GpuBuffer<T>) -> Result<()> {
        if dst.raw().size() != self.bytes {
            return Err(Error::Shape(format!(
                "a staged write of {} bytes into a buffer of {}",
                self.bytes,
                dst.raw().size()
            )));
        }
        self.flush_at(gpu, dst, 0)
    }

    /// [`Upload::flush`] into bytes `offset..offset + bytes()` of `dst` (`offset` a multiple
    /// of 4): one piece of a destination written by several uploads.
    pub fn flush_at<T: Pod>(&self, gpu: &Gpu, dst: &GpuBuffer<T>, offset: u64) -> Result<()> {
        if offset + self.bytes > dst.raw().size() || !offset.is_multiple_of(4) {
            return Err(Error::Shape(format!(
                "a staged write of {} bytes at {offset} into a buffer of {}",
                self.bytes,
                dst.raw().size()
            )));
        }
        let mut state = self.lock()?;
        if !matches!(*state, State::Mapped { filled: true }) {
            return Err(gpu_error(
                "flushed with no successful fill since the last flush",
            ));
        }
        let (tx, rx) = mpsc::channel();
        let submitted = gpu.scoped("staged write", || {
            self.buffer.unmap();
            let mut encoder = gpu
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                    label: Some("staged write"),
                });
            encoder.copy_buffer_to_buffer(&self.buffer, 0, dst.raw(), offset, self.bytes);
            gpu.queue.submit([encoder.finish()]);
            self.buffer.map_async(wgpu::MapMode::Write, .., move |r| {
                let _ = tx.send(r);
            });
        });
        // The map was asked for whatever the error scopes caught.
        *state = State::Pending(rx);
        submitted
    }
}

/// Host threads worth using for a copy of `bytes` bytes: one per 4 MiB, at most `max` (and at
/// least one).
pub fn copy_threads(bytes: usize, max: usize) -> usize {
    bytes.div_ceil(4 << 20).clamp(1, max.max(1))
}

/// The host's cores, as far as the standard library can tell (1 if it cannot).
pub fn host_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// `dst.copy_from_slice(src)` cut over up to `threads` host threads (by [`copy_threads`]): a
/// large copy out of a mapped read-back buffer goes at the host's memory bandwidth rather
/// than one core's.
pub fn copy_parallel<T: Pod + Send + Sync>(dst: &mut [T], src: &[T], threads: usize) {
    assert_eq!(dst.len(), src.len(), "copy_parallel between unequal slices");
    let parts = copy_threads(std::mem::size_of_val(src), threads);
    if parts <= 1 {
        dst.copy_from_slice(src);
        return;
    }
    let per = src.len().div_ceil(parts);
    std::thread::scope(|scope| {
        for (d, s) in dst.chunks_mut(per).zip(src.chunks(per)) {
            scope.spawn(move || d.copy_from_slice(s));
        }
    });
}
