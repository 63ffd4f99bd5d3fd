//! One multi-device epoch: a host thread per device runs its G·c steps, queuing each trained
//! Q block's copy behind the training and sending the previous one on while the device
//! trains (see the module above).

use std::sync::mpsc;
use std::time::Instant;

use super::{DeviceEpoch, MultiTrainer, Shard};
use crate::gpu::{Batch, StagedCopy};
use crate::mf::blocks::{self, Touch};
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

/// A device thread's failure: its own error, or that a neighbour stopped passing Q blocks
/// (secondary: the neighbour's error is the one to report).
enum Failure {
    Own(Error),
    Neighbour(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Own(e)
    }
}

/// The first device's own error, else the first error.
fn first_error<T>(results: Vec<std::result::Result<T, Failure>>) -> Result<Vec<T>> {
    let mut out = Vec::with_capacity(results.len());
    let mut secondary = None;
    let mut own = None;
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
    match own.or(secondary) {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

impl MultiTrainer<'_> {
    /// Trains one epoch: G·c steps, all devices at once, Q blocks passed as they are done.
    pub(super) fn train_epoch(&mut self) -> Result<(Vec<DeviceEpoch>, Vec<Touch>)> {
        let (g, c) = (self.grid.g, self.grid.c);
        let epoch = self.epoch;
        let lr = self.options.learning_rate(epoch);
        let lambda = (self.options.lambda as f64 / self.sigma) as f32;
        let f = self.options.batch;
        let words = self.words();
        let grid = &self.grid;
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
                    let updates = updates[d];
                    scope.spawn(move || -> std::result::Result<_, Failure> {
                        let start = Instant::now();
                        let mut wait = 0.0;
                        let mut touches = vec![];
                        let mut pending: Option<Pending> = None;
                        for step in 0..g * c {
                            let j = blocks::column_block(d, step, g, c);
                            if sh.held[j].is_none() {
                                // Send what is done before blocking: a neighbour may wait on it.
                                if let Some(p) = pending.take() {
                                    send(sh, p, &tx, d)?;
                                }
                                let t = Instant::now();
                                while sh.held[j].is_none() {
                                    receive(sh, &rx, grid, words, d)?;
                                }
                                wait += t.elapsed().as_secs_f64();
                            }
                            let version = sh.held[j].take().unwrap_or(0);
                            let gpu = sh.gpu;
                            let mut batch = Batch::new(gpu);
                            let pass = Pass {
                                gpu,
                                layout: &sh.layout,
                                p: &sh.p,
                                q: &sh.q,
                                rng: &sh.rng,
                                counters: sh.counters.as_ref(),
                                batch: f,
                                lambda,
                            };
                            kernels::record_hogwild(&mut batch, &pass, &sh.blocks[j], lr)?;
                            batch.submit_nowait()?;
                            touches.push(Touch {
                                epoch,
                                step,
                                device: d,
                                row_block: d,
                                col_block: j,
                                version,
                            });
                            if g == 1 {
                                sh.held[j] = Some(version + 1);
                                continue;
                            }
                            let rows = grid.col_range(j);
                            let slot = step % 2;
                            let next = Pending {
                                block: j,
                                version: version + 1,
                                slot,
                                copy: sh.staging[slot].copy_from(
                                    gpu,
                                    &sh.q,
                                    rows.start * words..rows.end * words,
                                )?,
                            };
                            if let Some(p) = pending.replace(next) {
                                send(sh, p, &tx, d)?;
                            }
                        }
                        if let Some(p) = pending.take() {
                            send(sh, p, &tx, d)?;
                        }
                        // Between epochs device d holds its own c column blocks.
                        let t = Instant::now();
                        while sh.held[d * c..(d + 1) * c].iter().any(Option::is_none) {
                            receive(sh, &rx, grid, words, d)?;
                        }
                        wait += t.elapsed().as_secs_f64();
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
        let per_device = first_error(results)?;
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

/// The error a device reports when its neighbour stopped (the neighbour's own error is the
/// one to report).
fn lost(d: usize) -> Failure {
    Failure::Neighbour(Error::Gpu {
        kernel: "mf multi-device pass".into(),
        message: format!("device {d}: a neighbour stopped passing Q blocks"),
    })
}

/// Waits for `p`'s copy and sends the block on.
fn send(
    sh: &Shard,
    p: Pending,
    tx: &mpsc::Sender<Message>,
    d: usize,
) -> std::result::Result<(), Failure> {
    let data = sh.staging[p.slot].collect(sh.gpu, p.copy)?;
    tx.send((p.block, p.version, data)).map_err(|_| lost(d))
}

/// Receives one column block from the next device and writes it into this device's Q.
fn receive(
    sh: &mut Shard,
    rx: &mpsc::Receiver<Message>,
    grid: &blocks::Grid,
    words: usize,
    d: usize,
) -> std::result::Result<(), Failure> {
    let (block, version, data) = rx.recv().map_err(|_| lost(d))?;
    sh.q.write_at(sh.gpu, grid.col_range(block).start * words, &data)?;
    sh.held[block] = Some(version);
    Ok(())
}
