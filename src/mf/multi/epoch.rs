//! One multi-device epoch. Each device runs three host threads, so that the host's copies
//! of Q blocks run beside the device's training instead of between its kernels:
//! - the trainer submits the device's G·c steps; before a step it waits (only if need be)
//!   until the block it trains has been written into its Q, and after submitting the step it
//!   queues a copy of the trained block into a free staging buffer (two per device);
//! - the sender waits for each queued copy, reads the block out of its staging buffer, frees
//!   the buffer and sends the block to device g − 1;
//! - the receiver writes each block arriving from device g + 1 into Q (ordered before the
//!   trainer's next submission) and tells the trainer.
//!
//! Channels are unbounded, so no thread blocks on a send; a thread blocks only on work
//! another has still to do, so the ring cannot deadlock. When a thread fails, its channels
//! close and every thread waiting on them stops with a secondary error (the failing
//! thread's own error is the one reported).

use std::sync::mpsc;
use std::time::Instant;

use super::{DeviceEpoch, MultiTrainer, Shard};
use crate::gpu::{Batch, StagedCopy};
use crate::mf::blocks::{self, Grid, Touch};
use crate::mf::kernels::{self, Pass};
use crate::{Error, Result};

/// A column block of Q on its way to the next device: (block, trainings seen, words).
type Message = (usize, u64, Vec<u32>);

/// A queued copy of a trained column block into staging buffer `slot`.
struct Pending {
    block: usize,
    version: u64,
    slot: usize,
    copy: StagedCopy,
}

/// A thread's failure: its own error, or that a thread it waited on stopped (secondary: that
/// thread's error is the one to report).
enum Failure {
    Own(Error),
    Neighbour(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Own(e)
    }
}

type Outcome<T> = std::result::Result<T, Failure>;

/// The first own error, else the first error, else the values.
fn first_error<T>(results: Vec<Outcome<T>>) -> Outcome<Vec<T>> {
    let mut out = Vec::with_capacity(results.len());
    let (mut own, mut secondary) = (None, None);
    for r in results {
        match r {
            Ok(v) => out.push(v),
            Err(Failure::Own(e)) => {
                own.get_or_insert(e);
            }
            Err(Failure::Neighbour(e)) => {
                secondary.get_or_insert(e);
            }
        }
    }
    match (own, secondary) {
        (Some(e), _) => Err(Failure::Own(e)),
        (None, Some(e)) => Err(Failure::Neighbour(e)),
        (None, None) => Ok(out),
    }
}

/// The error of a thread whose partner stopped.
fn lost(d: usize, what: &str) -> Failure {
    Failure::Neighbour(Error::Gpu {
        kernel: "mf multi-device pass".into(),
        message: format!("device {d}: {what} stopped"),
    })
}

/// What every device's threads share in one epoch.
struct Epoch<'a> {
    g: usize,
    c: usize,
    epoch: usize,
    lr: f32,
    /// λ / σ.
    lambda: f32,
    /// Batch-Hogwild!'s f.
    batch: u32,
    /// Samples a worker updates together.
    ilp: u32,
    /// u32 words per feature row.
    words: usize,
    grid: &'a Grid,
}

/// The trainer's ends of the channels to its receiver and sender (none on one device).
struct Links {
    /// (block, trainings seen) of each block the receiver has written into Q.
    ready: mpsc::Receiver<(usize, u64)>,
    /// Queued copies, to the sender.
    out: mpsc::Sender<Pending>,
    /// Staging buffers the sender has emptied.
    free: mpsc::Receiver<usize>,
}

impl MultiTrainer<'_> {
    /// Trains one epoch: G·c steps, all devices at once, Q blocks passed as they are done.
    pub(super) fn train_epoch(&mut self) -> Result<(Vec<DeviceEpoch>, Vec<Touch>)> {
        let g = self.grid.g;
        let ep = Epoch {
            g,
            c: self.grid.c,
            epoch: self.epoch,
            lr: self.options.learning_rate(self.epoch),
            lambda: (self.options.lambda as f64 / self.sigma) as f32,
            batch: self.options.batch,
            ilp: self.options.ilp,
            words: self.words(),
            grid: &self.grid,
        };
        let (mut senders, mut receivers): (Vec<_>, Vec<_>) =
            (0..g).map(|_| mpsc::channel::<Message>()).unzip();
        // Device d sends to device d − 1: rotate the senders so that index d holds d − 1's.
        senders.rotate_left(g - 1);
        let updates: Vec<u64> = (0..g).map(|d| self.device_updates_per_epoch(d)).collect();
        let results = std::thread::scope(|scope| {
            let handles: Vec<_> = self
                .shards
                .iter_mut()
                .zip(senders.drain(..))
                .zip(receivers.drain(..))
                .enumerate()
                .map(|(d, ((sh, tx), rx))| {
                    let (ep, updates) = (&ep, updates[d]);
                    scope.spawn(move || {
                        let start = Instant::now();
                        // The trainer alone tracks which blocks are held; the threads share
                        // the rest of the shard.
                        let mut held = std::mem::take(&mut sh.held);
                        let r = device_epoch(sh, d, ep, &mut held, (tx, rx));
                        sh.held = held;
                        let (wait, touches) = r?;
                        sh.gpu.wait()?;
                        Ok((
                            DeviceEpoch {
                                device: d,
                                updates,
                                seconds: start.elapsed().as_secs_f64(),
                                wait_seconds: wait,
                            },
                            touches,
                        ))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().expect("a device thread panicked"))
                .collect::<Vec<_>>()
        });
        let per_device = first_error(results).map_err(|f| match f {
            Failure::Own(e) | Failure::Neighbour(e) => e,
        })?;
        let mut devices = Vec::with_capacity(g);
        let mut touches = vec![];
        for (d, t) in per_device {
            devices.push(d);
            touches.extend(t);
        }
        self.epoch += 1;
        Ok((devices, touches))
    }
}

/// One device's epoch: its trainer here, its sender and receiver on threads of their own
/// (none on one device). Returns the seconds the trainer waited for blocks, and its touches.
fn device_epoch(
    sh: &Shard,
    d: usize,
    ep: &Epoch,
    held: &mut [Option<u64>],
    (tx, rx): (mpsc::Sender<Message>, mpsc::Receiver<Message>),
) -> Outcome<(f64, Vec<Touch>)> {
    if ep.g == 1 {
        return train_steps(sh, d, ep, held, None);
    }
    std::thread::scope(|scope| {
        let (ready_tx, ready) = mpsc::channel();
        let (out, out_rx) = mpsc::channel::<Pending>();
        let (free_tx, free) = mpsc::channel();
        for slot in 0..sh.staging.len() {
            let _ = free_tx.send(slot);
        }
        let receiver = scope.spawn(move || -> Outcome<()> {
            // G·c blocks arrive per epoch: one per step of device d + 1.
            for _ in 0..ep.g * ep.c {
                let (block, version, data) = rx.recv().map_err(|_| lost(d, "device d + 1"))?;
                sh.q.write_at(sh.gpu, ep.grid.col_range(block).start * ep.words, &data)?;
                if ready_tx.send((block, version)).is_err() {
                    break; // The trainer stopped; its error is reported.
                }
            }
            Ok(())
        });
        let sender = scope.spawn(move || -> Outcome<()> {
            for p in out_rx {
                let data = sh.staging[p.slot].collect(sh.gpu, p.copy)?;
                let _ = free_tx.send(p.slot);
                tx.send((p.block, p.version, data))
                    .map_err(|_| lost(d, "device d − 1"))?;
            }
            Ok(())
        });
        let trained = train_steps(sh, d, ep, held, Some(Links { ready, out, free }));
        let sent = sender.join().expect("a sender thread panicked");
        let received = receiver.join().expect("a receiver thread panicked");
        let (sent, received) = (sent.map(|_| (0.0, vec![])), received.map(|_| (0.0, vec![])));
        first_error(vec![trained, sent, received]).map(|mut v| v.swap_remove(0))
    })
}

/// The trainer: G·c steps of batch-Hogwild! on the scheduled blocks. With `links`, each step
/// waits until its block is in Q, and each trained block is queued for the sender; after the
/// last step the trainer waits until the device holds its own c blocks again.
fn train_steps(
    sh: &Shard,
    d: usize,
    ep: &Epoch,
    held: &mut [Option<u64>],
    links: Option<Links>,
) -> Outcome<(f64, Vec<Touch>)> {
    let (g, c) = (ep.g, ep.c);
    let mut wait = 0.0;
    let mut touches = Vec::with_capacity(g * c);
    let mut wait_for = |held: &mut [Option<u64>], blocks: std::ops::Range<usize>| -> Outcome<()> {
        if let Some(l) = &links {
            let t = Instant::now();
            while blocks.clone().any(|j| held[j].is_none()) {
                let (block, version) = l.ready.recv().map_err(|_| lost(d, "the receiver"))?;
                held[block] = Some(version);
            }
            wait += t.elapsed().as_secs_f64();
        }
        Ok(())
    };
    for step in 0..g * c {
        let j = blocks::column_block(d, step, g, c);
        wait_for(held, j..j + 1)?;
        let version = held[j].take().ok_or_else(|| {
            Failure::Own(Error::Check {
                kernel: "mf multi-device schedule".into(),
                message: format!("device {d}, step {step}: column block {j} is not here"),
            })
        })?;
        let gpu = sh.gpu;
        let mut batch = Batch::new(gpu);
        let pass = Pass {
            gpu,
            layout: &sh.layout,
            p: &sh.p,
            q: &sh.q,
            rng: &sh.rng,
            counters: sh.counters.as_ref(),
            batch: ep.batch,
            ilp: ep.ilp,
            lambda: ep.lambda,
        };
        kernels::record_hogwild(&mut batch, &pass, &sh.blocks[j], ep.lr)?;
        batch.submit_nowait()?;
        touches.push(Touch {
            epoch: ep.epoch,
            step,
            device: d,
            row_block: d,
            col_block: j,
            version,
        });
        match &links {
            None => held[j] = Some(version + 1),
            Some(l) => {
                let slot = l.free.recv().map_err(|_| lost(d, "the sender"))?;
                let rows = ep.grid.col_range(j);
                let copy = sh.staging[slot].copy_from(
                    gpu,
                    &sh.q,
                    rows.start * ep.words..rows.end * ep.words,
                )?;
                l.out
                    .send(Pending {
                        block: j,
                        version: version + 1,
                        slot,
                        copy,
                    })
                    .map_err(|_| lost(d, "the sender"))?;
            }
        }
    }
    // Between epochs device d holds its own c column blocks.
    wait_for(held, d * c..(d + 1) * c)?;
    drop(links);
    Ok((wait, touches))
}
