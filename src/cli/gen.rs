//! `wgsparse gen`: write generated data sets in the standard formats.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Subcommand;
use serde_json::json;

use wgsparse::gen::{self, CtrModel};
use wgsparse::io::{self, LibSvm, Ratings};
use wgsparse::sddmm::suite;
use wgsparse::Result;

/// Arguments of `wgsparse gen`.
#[derive(clap::Args)]
pub struct GenArgs {
    #[command(subcommand)]
    what: What,
    /// Print one JSON object describing what was written.
    #[arg(long, global = true)]
    json: bool,
}

/// Seed and destination of a generated sparse matrix.
#[derive(clap::Args)]
struct MatrixOut {
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output file (.mtx) or folder (with --raw).
    #[arg(long)]
    out: PathBuf,
    /// Write raw little-endian CSR arrays into the folder --out.
    #[arg(long)]
    raw: bool,
}

#[derive(Subcommand)]
enum What {
    /// A power-law sparse matrix (Matrix Market, or raw arrays with --raw).
    PowerLaw {
        #[arg(long)]
        rows: usize,
        #[arg(long)]
        cols: usize,
        #[arg(long)]
        nnz: usize,
        /// Zipf exponent of row and column degrees.
        #[arg(long, default_value_t = 1.1)]
        alpha: f64,
        #[command(flatten)]
        to: MatrixOut,
    },
    /// A benchmark-suite matrix by name (nytimes, pubmed-lite, web-google, enron, nips, …).
    Suite {
        name: String,
        #[arg(long, default_value_t = 1.0)]
        scale: f64,
        #[command(flatten)]
        to: MatrixOut,
    },
    /// A RadiX-Net-like DNN layer (GraphChallenge TSV): exactly --per-row nonzeros per row and column.
    Radix {
        #[arg(long)]
        n: usize,
        #[arg(long, default_value_t = 32)]
        per_row: usize,
        #[arg(long, default_value_t = 1.0 / 16.0)]
        value: f32,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        out: PathBuf,
    },
    /// Planted-rank ratings with Zipf degrees, split into train and test rating files.
    Ratings {
        #[arg(long)]
        users: usize,
        #[arg(long)]
        items: usize,
        #[arg(long)]
        ratings: usize,
        #[arg(long, default_value_t = 16)]
        rank: usize,
        #[arg(long, default_value_t = 0.1)]
        test_fraction: f64,
        /// Standard deviation of the rating noise (Netflix's best models leave about 0.85).
        #[arg(long, default_value_t = gen::RATING_NOISE)]
        noise: f64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long)]
        train: PathBuf,
        #[arg(long)]
        test: PathBuf,
        /// Write 12-byte binary records {i32 u, i32 v, f32 r} instead of text.
        #[arg(long)]
        binary: bool,
    },
    /// Zipf CTR data with labels from a planted LR (or FM with --fm K) model (LIBSVM).
    Ctr {
        #[arg(long)]
        samples: usize,
        #[arg(long)]
        features: usize,
        #[arg(long, default_value_t = 20)]
        nnz_per_sample: usize,
        /// Plant an FM of this many factors instead of LR.
        #[arg(long)]
        fm: Option<usize>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Write a raw CSR folder with labels.f32 (for `wide train` and the peers) instead of
        /// a LIBSVM file.
        #[arg(long)]
        raw: bool,
        #[arg(long)]
        out: PathBuf,
    },
}

/// Runs `wgsparse gen`.
pub fn run(args: GenArgs) -> Result<ExitCode> {
    let summary = match args.what {
        What::PowerLaw {
            rows,
            cols,
            nnz,
            alpha,
            to,
        } => {
            let m = gen::power_law(rows, cols, nnz, alpha, to.seed)?;
            write_matrix(&m, &to)?;
            json!({ "kind": "power-law", "out": to.out, "nrows": m.nrows, "ncols": m.ncols, "nnz": m.nnz() })
        }
        What::Suite { name, scale, to } => {
            let m = suite::find(&name)?.generate(scale, to.seed)?;
            write_matrix(&m, &to)?;
            json!({ "kind": name, "out": to.out, "nrows": m.nrows, "ncols": m.ncols, "nnz": m.nnz() })
        }
        What::Radix {
            n,
            per_row,
            value,
            seed,
            out,
        } => {
            let m = gen::radix_net_layer(n, per_row, value, seed)?;
            io::write_graphchallenge_tsv(&out, &m)?;
            json!({ "kind": "radix", "out": out, "n": n, "nnz": m.nnz() })
        }
        What::Ratings {
            users,
            items,
            ratings,
            rank,
            test_fraction,
            noise,
            seed,
            train,
            test,
            binary,
        } => {
            let p = gen::planted_ratings_with_noise(
                users,
                items,
                ratings,
                rank,
                test_fraction,
                noise,
                seed,
            )?;
            let (tr, te): (Ratings, Ratings) = ((&p.train).into(), (&p.test).into());
            if binary {
                io::write_ratings_binary(&train, &tr)?;
                io::write_ratings_binary(&test, &te)?;
            } else {
                io::write_ratings(&train, &tr)?;
                io::write_ratings(&test, &te)?;
            }
            json!({ "kind": "ratings", "train": train, "test": test, "n_train": tr.len(), "n_test": te.len(),
                "noise": noise, "noise_floor": p.noise_floor() })
        }
        What::Ctr {
            samples,
            features,
            nnz_per_sample,
            fm,
            seed,
            raw,
            out,
        } => {
            let model = match fm {
                Some(k) => CtrModel::Fm { k },
                None => CtrModel::Lr,
            };
            let d = gen::zipf_ctr(samples, features, nnz_per_sample, model, seed)?;
            let positives = d.labels.iter().filter(|&&l| l > 0.5).count();
            if raw {
                io::write_csr_binary(&out, &d.features)?;
                wgsparse::wide::write_labels(&out, &d.labels)?;
            } else {
                io::write_libsvm(
                    &out,
                    &LibSvm {
                        labels: d.labels,
                        features: d.features,
                    },
                )?;
            }
            json!({ "kind": "ctr", "out": out, "samples": samples, "positives": positives })
        }
    };
    if args.json {
        println!("{summary}");
    } else {
        println!("wrote {summary}");
    }
    Ok(ExitCode::SUCCESS)
}

fn write_matrix(m: &wgsparse::sparse::Csr, to: &MatrixOut) -> Result<()> {
    if to.raw {
        io::write_csr_binary(&to.out, m)
    } else {
        io::write_matrix_market(&to.out, m)
    }
}
