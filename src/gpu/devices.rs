//! Host threads for work on several devices: one scoped thread per device (wgpu gives each
//! device its own queue, and each device's host work overlaps the others'), results in
//! device order, the first error returned.

use crate::Result;

/// Runs `f` for every element of `devices` (whatever a caller keeps per device), with its
/// owned item from `items`, each on a thread of its own, and collects the results in order.
/// A panicking thread panics the caller.
pub fn each_with<S: Sync, U: Send, T: Send>(
    devices: &[S],
    items: Vec<U>,
    f: impl Fn(usize, &S, U) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = devices
            .iter()
            .zip(items)
            .enumerate()
            .map(|(d, (device, item))| {
                let f = &f;
                scope.spawn(move || f(d, device, item))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a device thread panicked"))
            .collect()
    })
}

/// [`each_with`] without items.
pub fn each<S: Sync, T: Send>(
    devices: &[S],
    f: impl Fn(usize, &S) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    each_with(devices, vec![(); devices.len()], |d, device, ()| {
        f(d, device)
    })
}
