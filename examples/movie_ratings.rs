//! Matrix factorization of movie ratings by SGD (cuMF_SGD's batch-Hogwild!): planted ratings
//! in MovieLens-100K's shape, trained on the GPU with the test RMSE after every epoch, then
//! saved, loaded back and used to predict — and the GPU's RMSE checked against the host's.
//!
//! Run with `cargo run --release --example movie_ratings` (no data files needed; on a machine
//! with no GPU, Mesa's software Vulkan device, lavapipe, is enough).

use wgsparse::mf::{Model, Options, Trainer};
use wgsparse::{gen, Gpu};

fn main() -> wgsparse::Result<()> {
    let gpu = match Gpu::new() {
        Ok(gpu) => gpu,
        Err(e) => {
            eprintln!("movie_ratings example: cannot open a GPU: {e}");
            std::process::exit(1);
        }
    };
    println!("adapter: {} ({})", gpu.caps.adapter_name, gpu.caps.backend);

    // 943 users × 1,682 movies, 100,000 ratings in [1, 5] from a rank-8 model plus noise,
    // Zipf user activity and movie popularity; 10% held out.
    let data = gen::planted_ratings(943, 1_682, 100_000, 8, 0.1, 2026)?;
    let (train, test) = ((&data.train).into(), (&data.test).into());

    let options = Options {
        k: 32,
        lambda: 0.02,
        alpha: 0.05,
        beta: 0.1,
        ..Default::default()
    };
    let mut trainer = Trainer::new(&gpu, &train, Some(&test), options)?;
    println!(
        "{} ratings, {} workers × {} lanes, σ = {:.3}",
        train.len(),
        trainer.workers(),
        trainer.lanes().0,
        trainer.sigma()
    );
    let metrics = trainer.fit(15, |m| {
        println!(
            "epoch {:2}  lr {:.4}  test RMSE {:.4}  {:.2} M updates/s",
            m.epoch,
            m.lr,
            m.rmse.unwrap_or(f64::NAN),
            m.updates_per_s / 1e6
        );
    })?;

    let model = trainer.model()?;
    let path = std::env::temp_dir().join("movie_ratings.wgmf");
    model.save(&path)?;
    let model = Model::load(&path)?;
    let (host_rmse, skipped) = model.rmse(&test);
    let gpu_rmse = metrics.last().and_then(|m| m.rmse).unwrap_or(f64::NAN);
    let host_rmse = host_rmse.unwrap_or(f64::NAN);
    println!(
        "saved and reloaded {}: host RMSE {host_rmse:.4} ({skipped} skipped)",
        path.display()
    );
    for k in 0..3 {
        let (u, i) = (test.users[k], test.items[k]);
        println!(
            "user {u} movie {i}: rated {:.2}, predicted {:.2}",
            test.values[k],
            model.predict(u, i)?
        );
    }
    if (gpu_rmse - host_rmse).abs() > 1e-3 * host_rmse {
        eprintln!("GPU RMSE {gpu_rmse} and host RMSE {host_rmse} disagree");
        std::process::exit(1);
    }
    Ok(())
}
