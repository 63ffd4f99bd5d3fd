//! Convergence reference for `mf`: the same planted data, initial features, shuffle and
//! hyper-parameters trained three ways, test RMSE per epoch beside the noise floor:
//! - `serial`: one worker on the CPU (the f64 twin, storage rounding mirrored),
//! - `lockstep s`: s batch-Hogwild! workers simulated on the CPU, each step all read then
//!   all write (what real concurrency should cost),
//! - `gpu s`: the device with s workers.
//!
//! If `gpu s` is far above `lockstep s`, the device loses more than the races explain (a
//! kernel or memory-visibility bug); if `lockstep s` is far above `serial`, s is too many
//! workers for the problem (the Hogwild! condition s ≪ n), not a bug.
//!
//! `cargo run --release --example mf_reference -- --users 48019 --items 1777 \
//!   --ratings 1004805 --workers 1,64,686 --epochs 20 --precision f16`
//! (Netflix's density and hyper-parameters at a tenth of its users and items). Flags:
//! --users --items --ratings --rank --k --workers (comma list) --epochs --lambda --alpha
//! --beta --batch --precision f16|f32 --seed --no-cpu --no-gpu --incoherent --json.

use wgsparse::gen::planted_ratings;
use wgsparse::io::Ratings;
use wgsparse::mf::{cpu, Options, Precision, Trainer};
use wgsparse::Gpu;

struct Args {
    users: usize,
    items: usize,
    ratings: usize,
    rank: usize,
    workers: Vec<u32>,
    epochs: usize,
    options: Options,
    cpu: bool,
    gpu: bool,
    json: bool,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        users: 4_802,
        items: 1_777,
        ratings: 100_000,
        rank: 16,
        workers: vec![1, 64],
        epochs: 20,
        options: Options {
            k: 128,
            ..Default::default()
        },
        cpu: true,
        gpu: true,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        let num = |v: String| v.parse::<f64>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--users" => a.users = num(value()?)? as usize,
            "--items" => a.items = num(value()?)? as usize,
            "--ratings" => a.ratings = num(value()?)? as usize,
            "--rank" => a.rank = num(value()?)? as usize,
            "--k" => a.options.k = num(value()?)? as usize,
            "--epochs" => a.epochs = num(value()?)? as usize,
            "--lambda" => a.options.lambda = num(value()?)? as f32,
            "--alpha" => a.options.alpha = num(value()?)? as f32,
            "--beta" => a.options.beta = num(value()?)? as f32,
            "--batch" => a.options.batch = num(value()?)? as u32,
            "--seed" => a.options.seed = num(value()?)? as u64,
            "--workers" => {
                a.workers = value()?
                    .split(',')
                    .map(|w| w.trim().parse().map_err(|e| format!("--workers {w}: {e}")))
                    .collect::<Result<_, _>>()?
            }
            "--precision" => {
                a.options.precision = match value()?.as_str() {
                    "f16" => Precision::F16,
                    "f32" => Precision::F32,
                    p => return Err(format!("--precision {p}: f16 or f32")),
                }
            }
            "--no-cpu" => a.cpu = false,
            "--no-gpu" => a.gpu = false,
            "--incoherent" => a.options.coherent = false,
            "--json" => a.json = true,
            f => return Err(format!("unknown flag {f}")),
        }
    }
    Ok(a)
}

/// Per-epoch test RMSE of `workers` simulated in lockstep from the trainer's initial state.
fn lockstep(t: &Trainer, workers: usize, options: &Options, epochs: usize) -> Vec<f64> {
    let (mut p, mut q) = t.device_features().expect("features");
    let bands = t.device_samples().expect("samples");
    let test = t.device_test_samples().expect("test samples");
    let mut states = t.worker_states().expect("states");
    states.truncate(workers);
    let lambda = t.device_lambda() as f64;
    let (k, f) = (options.k, options.batch as usize);
    (0..epochs)
        .map(|e| {
            let c = cpu::Coeffs {
                lr: options.learning_rate(e) as f64,
                lambda,
                half: options.precision == Precision::F16,
            };
            for s in &bands {
                let batches = (s.len() / 3).div_ceil(workers * f);
                cpu::hogwild_lockstep(s, &mut p, &mut q, k, &mut states, (batches, f), c);
            }
            cpu::rmse(&test, &p, &q, k, t.sigma()).expect("test ratings")
        })
        .collect()
}

fn main() {
    let a = parse().unwrap_or_else(|e| {
        eprintln!("mf_reference: {e}");
        std::process::exit(2)
    });
    let data = planted_ratings(a.users, a.items, a.ratings, a.rank, 0.014, 1).unwrap_or_else(|e| {
        eprintln!("mf_reference: {e}");
        std::process::exit(2)
    });
    let (train, test): (Ratings, Ratings) = ((&data.train).into(), (&data.test).into());
    let floor = data.noise_floor().unwrap_or(f64::NAN);
    let gpu = Gpu::new().unwrap_or_else(|e| {
        eprintln!("mf_reference: {e}");
        std::process::exit(1)
    });
    let mut series: Vec<(String, Vec<f64>)> = vec![];
    for (i, &w) in a.workers.iter().enumerate() {
        let options = Options {
            workers: Some(w),
            ..a.options.clone()
        };
        let mut t = Trainer::new(&gpu, &train, Some(&test), options.clone()).unwrap_or_else(|e| {
            eprintln!("mf_reference: {e}");
            std::process::exit(1)
        });
        if a.cpu {
            if i == 0 && w != 1 {
                series.push(("serial".into(), lockstep(&t, 1, &options, a.epochs)));
            }
            let name = if w == 1 {
                "serial".to_string()
            } else {
                format!("lockstep {w}")
            };
            series.push((name, lockstep(&t, w as usize, &options, a.epochs)));
        }
        if a.gpu {
            let m = t.fit(a.epochs, |_| {}).unwrap_or_else(|e| {
                eprintln!("mf_reference: {e}");
                std::process::exit(1)
            });
            series.push((
                format!("gpu {w}"),
                m.iter().map(|e| e.rmse.unwrap_or(f64::NAN)).collect(),
            ));
        }
    }
    if a.json {
        let obj: serde_json::Map<String, serde_json::Value> = series
            .iter()
            .map(|(n, r)| (n.clone(), serde_json::json!(r)))
            .collect();
        println!(
            "{}",
            serde_json::json!({
                "adapter": gpu.caps.adapter_name, "users": a.users, "items": a.items,
                "train": train.len(), "k": a.options.k, "precision": a.options.precision,
                "coherent": a.options.coherent && gpu.caps.coherent,
                "lambda": a.options.lambda, "alpha": a.options.alpha, "beta": a.options.beta,
                "noise_floor": floor, "rmse": obj,
            })
        );
        return;
    }
    println!(
        "{} users × {} items, {} train / {} test ratings, rank {}, k {}, {:?}, λ {} α {} β {}, \
         adapter {} (coherent P/Q: {}); noise floor {floor:.4}",
        a.users,
        a.items,
        train.len(),
        test.len(),
        a.rank,
        a.options.k,
        a.options.precision,
        a.options.lambda,
        a.options.alpha,
        a.options.beta,
        gpu.caps.adapter_name,
        a.options.coherent && gpu.caps.coherent
    );
    print!("epoch");
    for (n, _) in &series {
        print!(" | {n:>12}");
    }
    println!();
    for e in 0..a.epochs {
        print!("{:5}", e + 1);
        for (_, r) in &series {
            print!(" | {:12.4}", r[e]);
        }
        println!();
    }
    print!("/floor");
    for (_, r) in &series {
        print!(" | {:12.3}", r[a.epochs - 1] / floor);
    }
    println!();
}
