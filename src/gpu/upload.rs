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
/// (the next fill waits for that copy alone, not for work submitted after it). It takes
/// host-visible memory as large as it is: wgpu's allocator prefers device memory the host
/// writes across the bus (a resizable BAR's heap) when such a heap holds it, else host memory
/// the driver pins.
pub struct Upload {
    buffer: wgpu::Buffer,
    bytes: u64,
    state: Mutex<State>,
}

/// Where an [`Upload`] stands.
enum State {
    /// Flushed by the copy in this submission (`None`: the submission failed); the map it
    /// asked for has not been seen to complete.
    Pending(mpsc::Receiver<MapResult>, Option<wgpu::SubmissionIndex>),
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

    /// Waits until the buffer is mapped (the last flush's copy done: that submission alone,
    /// so the host fills while later submissions run) and hands its bytes, write-only, to
    /// `f`. Nothing reaches the device until [`Upload::flush`]; when `f` fails the buffer
    /// stays mapped, refuses to flush, and the next fill starts over.
    pub fn fill<R>(
        &self,
        gpu: &Gpu,
        f: impl FnOnce(wgpu::WriteOnly<'_, [u8]>) -> Result<R>,
    ) -> Result<R> {
        let mut state = self.lock()?;
        if let State::Pending(rx, copy) = &*state {
            let mapped = match rx.try_recv() {
                Ok(r) => r,
                Err(_) => {
                    if let Some(copy) = copy {
                        gpu.wait_for(copy.clone())?;
                    }
                    match rx.try_recv() {
                        Ok(r) => r,
                        // No copy to wait for, or its map not yet resolved: all work.
                        Err(_) => {
                            gpu.wait()?;
                            rx.recv().map_err(|_| gpu_error("map callback dropped"))?
                        }
                    }
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
        self.copy(gpu, dst, offset, self.bytes)
    }

    /// [`Upload::flush`] of the first `bytes` bytes only (a multiple of 4, at most
    /// [`Upload::bytes`]) into the first `bytes` bytes of `dst`: a destination sized for the
    /// largest of several contents, written with a shorter one. The rest of `dst` keeps what
    /// it held; the whole buffer is mapped again for the next fill.
    pub fn flush_prefix<T: Pod>(&self, gpu: &Gpu, dst: &GpuBuffer<T>, bytes: u64) -> Result<()> {
        if bytes > self.bytes {
            return Err(Error::Shape(format!(
                "a staged write of {bytes} bytes from a staging buffer of {}",
                self.bytes
            )));
        }
        self.copy(gpu, dst, 0, bytes)
    }

    /// Unmaps, queues the copy of the first `bytes` bytes into `dst` at `offset`, and asks
    /// for the map again (no wait); checks the range and that a fill succeeded.
    fn copy<T: Pod>(&self, gpu: &Gpu, dst: &GpuBuffer<T>, offset: u64, bytes: u64) -> Result<()> {
        let fits = offset
            .checked_add(bytes)
            .is_some_and(|end| end <= dst.raw().size());
        if !fits || !offset.is_multiple_of(4) || !bytes.is_multiple_of(4) {
            return Err(Error::Shape(format!(
                "a staged write of {bytes} bytes at {offset} into a buffer of {}",
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
            if bytes > 0 {
                encoder.copy_buffer_to_buffer(&self.buffer, 0, dst.raw(), offset, bytes);
            }
            let copy = gpu.queue.submit([encoder.finish()]);
            self.buffer.map_async(wgpu::MapMode::Write, .., move |r| {
                let _ = tx.send(r);
            });
            copy
        });
        // The map was asked for whatever the error scopes caught.
        *state = State::Pending(rx, submitted.as_ref().ok().cloned());
        submitted.map(|_| ())
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

/// A write-only part of a mapped buffer, handed to one copy thread.
pub(crate) struct SendWrite<'a>(pub wgpu::WriteOnly<'a, [u8]>);

// SAFETY: a `WriteOnly<[u8]>` is a unique, write-only borrow of mapped memory, like a
// `&mut [u8]` (which is `Send`); wgpu marks it `Send` only for sized targets. The parts handed
// to threads come from `split_at` and never overlap, and the scope ends before the mapping.
unsafe impl Send for SendWrite<'_> {}

impl<'a> SendWrite<'a> {
    /// The view it carries.
    pub fn into_inner(self) -> wgpu::WriteOnly<'a, [u8]> {
        self.0
    }
}

/// Writes `src`'s bytes into the start of `dst` (a mapped [`Upload`]'s view, as
/// [`Upload::fill`] hands it), cut over up to `threads` host threads (by [`copy_threads`]):
/// a large upload is laid out at the host's memory bandwidth rather than one core's. The
/// rest of `dst` is left as it was. [`Error::Shape`] when `src` does not fit.
pub fn write_parallel<T: Pod + Sync>(
    dst: wgpu::WriteOnly<'_, [u8]>,
    src: &[T],
    threads: usize,
) -> Result<()> {
    let src: &[u8] = bytemuck::cast_slice(src);
    if src.len() > dst.len() {
        return Err(Error::Shape(format!(
            "writing {} bytes into a staging buffer of {}",
            src.len(),
            dst.len()
        )));
    }
    let (mut rest, _) = dst.split_at(src.len());
    let parts = copy_threads(src.len(), threads);
    if parts <= 1 {
        rest.copy_from_slice(src);
        return Ok(());
    }
    let per = src.len().div_ceil(parts);
    std::thread::scope(|scope| {
        let mut handles = Vec::with_capacity(parts);
        for s in src.chunks(per) {
            let (head, tail) = rest.split_at(s.len());
            rest = tail;
            let w = SendWrite(head);
            // `w` moved whole (a method call), not its field, which is not `Send`.
            handles.push(scope.spawn(move || w.into_inner().copy_from_slice(s)));
        }
        // Every thread joined here, so a panic in one is an error, not the scope's panic.
        handles.into_iter().try_for_each(|h| {
            h.join()
                .map_err(|_| gpu_error("a staging copy thread panicked"))
        })
    })
}
