//! Helpers of the `mf` tests: small planted problems, the capability paths, the one-worker
//! parity against the serial CPU twin, and the convergence options.

use wgsparse::gen::{planted_ratings, PlantedRatings};
use wgsparse::io::Ratings;
use wgsparse::mf::{cpu, Options, Precision, Trainer};
use wgsparse::Gpu;

/// A small planted problem: `users × items`, `n` ratings of rank 3, 10% held out.
pub fn planted(users: usize, items: usize, n: usize, seed: u64) -> PlantedRatings {
    planted_ratings(users, items, n, 3, 0.1, seed).unwrap()
}

pub fn sets(p: &PlantedRatings) -> (Ratings, Ratings) {
    ((&p.train).into(), (&p.test).into())
}

/// The planted model's test RMSE: the noise floor.
pub fn noise_floor(p: &PlantedRatings) -> f64 {
    p.noise_floor().expect("test ratings")
}

/// (name, device, options changes) of every capability path.
pub fn paths() -> Vec<(&'static str, &'static Gpu, bool, bool)> {
    vec![
        ("subgroups + native f16", super::gpu(), true, true),
        ("subgroups + packed f16", super::gpu(), true, false),
        ("workgroup + native f16", super::gpu(), false, true),
        (
            "no features: workgroup + packed f16",
            super::gpu_plain(),
            true,
            true,
        ),
    ]
}

/// One worker, fixed PCG starts: the GPU epochs equal the serial CPU twin's (f16 rounding
/// mirrored), band by band.
pub fn parity(gpu: &Gpu, options: Options, data: &PlantedRatings, epochs: usize) -> f32 {
    let (train, _) = sets(data);
    let half = options.precision == Precision::F16;
    let k = options.k;
    let mut t = Trainer::new(gpu, &train, None, options.clone()).unwrap();
    let (mut p, mut q) = t.device_features().unwrap();
    let mut state = t.worker_states().unwrap()[0];
    let bands = t.device_samples().unwrap();
    let lambda = t.device_lambda() as f64;
    let mut b = wgsparse::gpu::Batch::new(gpu);
    t.record(&mut b, epochs).unwrap();
    b.submit().unwrap();
    for e in 0..epochs {
        let c = cpu::Coeffs {
            lr: options.learning_rate(e) as f64,
            lambda,
            half,
        };
        for s in &bands {
            let batches = (s.len() / 3).div_ceil(options.batch as usize);
            cpu::hogwild(
                s,
                &mut p,
                &mut q,
                k,
                &mut state,
                (batches, options.batch as usize),
                c,
            );
        }
    }
    assert_eq!(t.worker_states().unwrap()[0], state, "PCG streams differ");
    rel_diff(&t, &p, &q)
}

/// Largest difference between the device's P, Q and the twin's `p`, `q`, relative to the
/// twin's largest value.
pub fn rel_diff(t: &Trainer, p: &[f32], q: &[f32]) -> f32 {
    let (gp, gq) = t.device_features().unwrap();
    let scale = p.iter().chain(q).fold(0f32, |m, x| m.max(x.abs()));
    let diff = gp
        .iter()
        .zip(p)
        .chain(gq.iter().zip(q))
        .fold(0f32, |m, (a, b)| {
            assert!(a.is_finite(), "non-finite feature");
            m.max((a - b).abs())
        });
    diff / scale
}

/// Trains `epochs` epochs on `data` and returns the per-epoch test RMSE.
pub fn train(gpu: &Gpu, data: &PlantedRatings, options: Options, epochs: usize) -> Vec<f64> {
    let (train, test) = sets(data);
    let mut t = Trainer::new(gpu, &train, Some(&test), options).unwrap();
    let m = t.fit(epochs, |_| {}).unwrap();
    m.iter().map(|e| e.rmse.unwrap()).collect()
}

pub fn converge_options() -> Options {
    Options {
        k: 32,
        lambda: 0.02,
        alpha: 0.05,
        beta: 0.1,
        workers: Some(16),
        batch: 32,
        ..Default::default()
    }
}

/// 40,000 planted ratings on 400 × 300 (about 1/3 dense).
pub fn medium() -> PlantedRatings {
    planted(400, 300, 40_000, 5)
}
