//! Mutation fuzzing of every reader (Matrix Market, LIBSVM, text and binary ratings,
//! GraphChallenge TSV, IDX images and labels, MF models in both formats, raw CSR) on stable Rust: valid seed files are
//! mutated (bit flips, byte overwrites, truncations, huge and malformed numbers, repeated
//! and deleted ranges, interesting 32-bit words) and each mutant is read back. A reader may
//! accept a mutant (its result must then validate) or reject it with an `Error`; a panic is
//! a crash and fails the run, its input saved for a regression test.
//!
//! The suite runs each reader for `WGSPARSE_FUZZ_SECONDS` (default 1) seconds. The long run,
//! one reader at a time on one core:
//!
//! ```sh
//! WGSPARSE_FUZZ_SECONDS=3600 WGSPARSE_FUZZ_READER=matrix-market \
//!   cargo test --release --test fuzz_readers -- --ignored --nocapture --test-threads 1
//! ```
//!
//! `WGSPARSE_FUZZ_READER` is one of the names in [`TARGETS`] or `all`; `WGSPARSE_FUZZ_SEED`
//! picks the random stream; crashing inputs go to `WGSPARSE_FUZZ_OUT` (default
//! `target/fuzz-crashes`).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use wgsparse::io;
use wgsparse::sparse::Csr;

/// An input slower than this is saved (as `slowest-READER-SEED`) beside the crashes.
const SLOW: Duration = Duration::from_millis(500);

/// Largest mutant, in bytes.
const MAX_LEN: usize = 1 << 20;

/// One reader: its name, the files one input consists of, and how to read them.
struct Target {
    name: &'static str,
    files: &'static [&'static str],
    binary: bool,
    read: fn(&Path) -> wgsparse::Result<()>,
}

fn csr_ok(m: Csr) -> wgsparse::Result<()> {
    m.validate()
}

const TARGETS: &[Target] = &[
    Target {
        name: "matrix-market",
        files: &["in.mtx"],
        binary: false,
        read: |d| csr_ok(io::read_matrix_market(d.join("in.mtx"))?),
    },
    Target {
        name: "libsvm",
        files: &["in.svm"],
        binary: false,
        read: |d| csr_ok(io::read_libsvm(d.join("in.svm"))?.features),
    },
    Target {
        name: "ratings",
        files: &["in.ratings"],
        binary: false,
        read: |d| {
            let mut ids = io::IdMap::new();
            io::read_ratings(d.join("in.ratings"), &mut ids)?.to_coo()?;
            Ok(())
        },
    },
    Target {
        name: "ratings-binary",
        files: &["in.bin"],
        binary: true,
        read: |d| {
            io::read_ratings_binary(d.join("in.bin"))?.to_coo()?;
            Ok(())
        },
    },
    Target {
        name: "tsv",
        files: &["in.tsv"],
        binary: false,
        read: |d| {
            let p = d.join("in.tsv");
            let inferred = io::read_graphchallenge_tsv_infer(&p);
            let given = io::read_graphchallenge_tsv(&p, 40, 30);
            csr_ok(inferred?)?;
            csr_ok(given?)
        },
    },
    Target {
        name: "idx-images",
        files: &["in.idx"],
        binary: true,
        read: |d| {
            let im = io::read_idx_images(d.join("in.idx"))?;
            im.to_dense()?;
            Ok(())
        },
    },
    Target {
        name: "idx-labels",
        files: &["in.idx"],
        binary: true,
        read: |d| io::read_idx_labels(d.join("in.idx")).map(|_| ()),
    },
    Target {
        name: "mf-model",
        files: &["in.wgmf"],
        binary: true,
        read: |d| wgsparse::mf::Model::load(d.join("in.wgmf")).map(|_| ()),
    },
    Target {
        name: "mf-libmf",
        files: &["in.libmf"],
        binary: false,
        read: |d| wgsparse::mf::Model::load_libmf(d.join("in.libmf")).map(|_| ()),
    },
    Target {
        name: "raw-csr",
        files: &["meta.json", "row_ptr.u32", "col_idx.u32", "values.f32"],
        binary: true,
        read: |d| csr_ok(io::read_csr_binary(d)?),
    },
];

/// Valid inputs for `target`, written by the library's writers (plus hand-written text
/// variants the writers do not produce).
fn seeds(target: &Target, dir: &Path) -> Vec<Vec<Vec<u8>>> {
    let s = wgsparse::gen::power_law(40, 30, 120, 1.1, 5).unwrap();
    let one = |name: &str| vec![std::fs::read(dir.join(name)).unwrap()];
    let text = |t: &str| vec![t.as_bytes().to_vec()];
    let coo = s.to_coo();
    let ratings = io::Ratings {
        users: coo.rows,
        items: coo.cols,
        values: coo.values,
        n_users: s.nrows,
        n_items: s.ncols,
    };
    match target.name {
        "matrix-market" => {
            io::write_matrix_market(dir.join("s.mtx"), &s).unwrap();
            vec![
                one("s.mtx"),
                text("%%MatrixMarket matrix coordinate pattern symmetric\n% c\n3 3 2\n2 1\n3 3\n"),
                text("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 1 -1.5e3\n"),
            ]
        }
        "libsvm" => {
            let data = io::LibSvm {
                labels: (0..s.nrows).map(|i| (i % 2) as f32).collect(),
                features: s.clone(),
            };
            io::write_libsvm(dir.join("s.svm"), &data).unwrap();
            vec![
                one("s.svm"),
                text("+1 qid:3 0:1.5 7:2 # comment\n-1 3:1e-3\n\n1 2:4\n"),
            ]
        }
        "ratings" => {
            io::write_ratings(dir.join("r.tsv"), &ratings).unwrap();
            vec![
                one("r.tsv"),
                text(
                    "userId,movieId,rating,timestamp\n1,31,2.5,1260759144\n1,1029,3.0,1260759179\n",
                ),
                text("# comment\nu1 i1 5\nu2  i1\t4 99\n"),
            ]
        }
        "ratings-binary" => {
            io::write_ratings_binary(dir.join("r.bin"), &ratings).unwrap();
            vec![one("r.bin")]
        }
        "tsv" => {
            io::write_graphchallenge_tsv(dir.join("s.tsv"), &s).unwrap();
            vec![one("s.tsv")]
        }
        "idx-images" => {
            let im = io::IdxImages {
                count: 3,
                rows: 4,
                cols: 5,
                pixels: (0..60).map(|i| (i * 7) as u8).collect(),
            };
            io::write_idx_images(dir.join("i.idx"), &im).unwrap();
            vec![one("i.idx")]
        }
        "idx-labels" => {
            io::write_idx_labels(dir.join("l.idx"), &[1, 2, 3, 9]).unwrap();
            vec![one("l.idx")]
        }
        "raw-csr" => {
            let raw = dir.join("raw-seed");
            io::write_csr_binary(&raw, &s).unwrap();
            let files = target.files.iter();
            vec![files.map(|f| std::fs::read(raw.join(f)).unwrap()).collect()]
        }
        "mf-model" | "mf-libmf" => {
            let model = wgsparse::mf::Model {
                k: 3,
                n_users: 4,
                n_items: 2,
                p: (0..12).map(|i| i as f32 * 0.25 - 1.0).collect(),
                q: (0..6).map(|i| 0.5 - i as f32 * 0.125).collect(),
                user_ids: Some(vec!["u1".into(), "u2".into(), "u3".into(), "u4".into()]),
                item_ids: Some(vec!["i1".into(), "i2".into()]),
            };
            model.save(dir.join("m.wgmf")).unwrap();
            model.save_libmf(dir.join("m.libmf")).unwrap();
            vec![one(if target.name == "mf-model" {
                "m.wgmf"
            } else {
                "m.libmf"
            })]
        }
        other => panic!("no seeds for {other}"),
    }
}

/// Text tokens a mutation inserts or substitutes for a number.
const TOKENS: &[&[u8]] = &[
    b"0",
    b"1",
    b"-1",
    b"+",
    b"-0",
    b"65536",
    b"4294967295",
    b"4294967296",
    b"2147483648",
    b"18446744073709551615",
    b"18446744073709551616",
    b"99999999999999999999999999",
    b"1e39",
    b"-1e39",
    b"1e-50",
    b"nan",
    b"inf",
    b"0x10",
    b"1.5.2",
    b"%",
    b"%%MatrixMarket",
    b"#",
    b":",
    b"0:",
    b":1",
    b"qid:",
    b",",
    b"\t",
    b" ",
    b"\n",
    b"\r\n",
    b"\r",
    b"\0",
    b"\xff\xfe",
    b"\xc3\xa9",
];

/// 32-bit words a mutation writes into binary inputs (little- or big-endian).
const WORDS: &[u32] = &[
    0,
    1,
    2,
    3,
    0x7f,
    0xff,
    0x803,
    0x801,
    0xffff,
    0x1_0000,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_fffe,
    0xffff_ffff,
    0x7fc0_0000, // NaN
    0x7f80_0000, // +Inf
];

/// Applies one to four random mutations to `data`.
fn mutate(rng: &mut StdRng, data: &mut Vec<u8>, binary: bool) {
    for _ in 0..rng.random_range(1..=4) {
        let len = data.len();
        let at = |rng: &mut StdRng| rng.random_range(0..=len);
        match rng.random_range(0..9) {
            0 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] ^= 1 << rng.random_range(0..8);
            }
            1 if len > 0 => {
                let i = rng.random_range(0..len);
                data[i] = *[0u8, 0xff, 0x7f, 0x80, b'9', b' ', b'\n']
                    .get(rng.random_range(0..8))
                    .unwrap_or(&rng.random());
            }
            2 => data.truncate(at(rng)),
            3 => {
                let i = at(rng);
                let t = TOKENS[rng.random_range(0..TOKENS.len())];
                data.splice(i..i, t.iter().copied());
            }
            4 => replace_number(rng, data),
            5 if len > 0 => {
                // Repeat a range (a token, a line, a record) up to 1000 times.
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..=64)).min(len);
                let piece = data[a..b].to_vec();
                let times = *[1usize, 2, 10, 1000].get(rng.random_range(0..4)).unwrap();
                let i = at(rng);
                let rep: Vec<u8> = piece
                    .iter()
                    .copied()
                    .cycle()
                    .take(piece.len() * times)
                    .collect();
                data.splice(i..i, rep);
            }
            6 if len > 0 => {
                let a = rng.random_range(0..len);
                let b = (a + rng.random_range(1..=32)).min(len);
                data.drain(a..b);
            }
            7 if len >= 4 => {
                let w = WORDS[rng.random_range(0..WORDS.len())];
                let bytes = if rng.random() {
                    w.to_le_bytes()
                } else {
                    w.to_be_bytes()
                };
                let i = if binary && rng.random() {
                    rng.random_range(0..len / 4) * 4
                } else {
                    rng.random_range(0..=len - 4)
                };
                data[i..i + 4].copy_from_slice(&bytes);
            }
            _ => {
                let i = at(rng);
                let n = rng.random_range(1..=16);
                let junk: Vec<u8> = (0..n).map(|_| rng.random()).collect();
                data.splice(i..i, junk);
            }
        }
    }
    data.truncate(MAX_LEN);
}

/// Replaces a random run of digits with a token (a huge, negative or malformed number).
fn replace_number(rng: &mut StdRng, data: &mut Vec<u8>) {
    let starts: Vec<usize> = (0..data.len())
        .filter(|&i| data[i].is_ascii_digit() && (i == 0 || !data[i - 1].is_ascii_digit()))
        .collect();
    if starts.is_empty() {
        return;
    }
    let a = starts[rng.random_range(0..starts.len())];
    let b = (a..data.len())
        .find(|&i| !data[i].is_ascii_digit())
        .unwrap_or(data.len());
    let t = TOKENS[rng.random_range(0..12)];
    data.splice(a..b, t.iter().copied());
}

/// What one reader's run found.
#[derive(Debug, Default)]
struct Tally {
    inputs: u64,
    accepted: u64,
    rejected: u64,
    crashes: Vec<PathBuf>,
    slowest: Duration,
}

fn crash_dir() -> PathBuf {
    std::env::var_os("WGSPARSE_FUZZ_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/fuzz-crashes"))
}

/// Fuzzes `target` for `budget`, from the random stream `seed`.
fn fuzz(target: &Target, budget: Duration, seed: u64) -> Tally {
    // Inputs may declare any size; a small host budget makes oversized ones errors fast.
    std::env::set_var(wgsparse::limits::HOST_BUDGET_ENV, "256");
    // Memory-backed when the machine has it: the files are rewritten for every input.
    let shm = Path::new("/dev/shm");
    let dir = if shm.is_dir() {
        tempfile::tempdir_in(shm)
    } else {
        tempfile::tempdir()
    }
    .unwrap();
    let seeds = seeds(target, dir.path());
    for s in &seeds {
        write_input(target, dir.path(), s);
        (target.read)(dir.path()).unwrap_or_else(|e| panic!("{}: seed rejected: {e}", target.name));
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut tally = Tally::default();
    let start = Instant::now();
    while start.elapsed() < budget {
        let mut input = seeds[rng.random_range(0..seeds.len())].clone();
        let f = rng.random_range(0..input.len());
        mutate(&mut rng, &mut input[f], target.binary);
        write_input(target, dir.path(), &input);
        let t0 = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(|| (target.read)(dir.path())));
        let took = t0.elapsed();
        if took > tally.slowest {
            tally.slowest = took;
            // Kept for a look when slow enough to matter.
            if took > SLOW {
                save(
                    target,
                    &crash_dir().join(format!("slowest-{}-{seed}", target.name)),
                    &input,
                );
            }
        }
        tally.inputs += 1;
        match outcome {
            Ok(Ok(())) => tally.accepted += 1,
            Ok(Err(_)) => tally.rejected += 1,
            Err(_) => {
                let out = crash_dir().join(format!("{}-{seed}-{}", target.name, tally.inputs));
                save(target, &out, &input);
                tally.crashes.push(out);
            }
        }
    }
    tally
}

/// Writes `input`'s files into folder `out`.
fn save(target: &Target, out: &Path, input: &[Vec<u8>]) {
    std::fs::create_dir_all(out).unwrap();
    write_input(target, out, input);
}

fn write_input(target: &Target, dir: &Path, files: &[Vec<u8>]) {
    for (name, bytes) in target.files.iter().zip(files) {
        std::fs::write(dir.join(name), bytes).unwrap();
    }
}

fn env_f64(name: &str) -> Option<f64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

fn run(default_seconds: f64) {
    let seconds = env_f64("WGSPARSE_FUZZ_SECONDS").unwrap_or(default_seconds);
    let seed = env_f64("WGSPARSE_FUZZ_SEED").map_or(1, |s| s as u64);
    let which = std::env::var("WGSPARSE_FUZZ_READER").unwrap_or_else(|_| "all".into());
    let picked: Vec<&Target> = TARGETS
        .iter()
        .filter(|t| which == "all" || which.split(',').any(|w| w == t.name))
        .collect();
    assert!(!picked.is_empty(), "no reader named {which}");
    let mut crashed = Vec::new();
    for t in picked {
        let tally = fuzz(t, Duration::from_secs_f64(seconds), seed);
        eprintln!(
            "fuzz {:<15} {:>6.0} s: {:>9} inputs, {:>8} accepted, {:>9} rejected, {} crashes, slowest {:.1} ms",
            t.name,
            seconds,
            tally.inputs,
            tally.accepted,
            tally.rejected,
            tally.crashes.len(),
            tally.slowest.as_secs_f64() * 1e3
        );
        assert!(
            tally.inputs > 10,
            "{}: only {} inputs ran",
            t.name,
            tally.inputs
        );
        crashed.extend(tally.crashes);
    }
    assert!(crashed.is_empty(), "crashing inputs saved in {crashed:?}");
}

#[test]
fn every_reader_survives_a_short_mutation_run() {
    run(1.0);
}

#[test]
#[ignore = "the long run: WGSPARSE_FUZZ_SECONDS per reader (default 3600)"]
fn every_reader_survives_a_long_mutation_run() {
    run(3600.0);
}

// Crashes the fuzzer found, kept as regression tests.

/// raw-csr (seed 1, input 5167): row offsets that rise past nnz in the middle and come back
/// to nnz at the end made `Csr::validate` index past the column array.
#[test]
fn raw_csr_row_offsets_past_nnz_are_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let s = wgsparse::gen::power_law(40, 30, 120, 1.1, 5).unwrap();
    io::write_csr_binary(dir.path(), &s).unwrap();
    let mut row_ptr = s.row_ptr.clone();
    row_ptr[1] = 200;
    let bytes: Vec<u8> = row_ptr.iter().flat_map(|w| w.to_le_bytes()).collect();
    std::fs::write(dir.path().join("row_ptr.u32"), bytes).unwrap();
    let e = io::read_csr_binary(dir.path()).unwrap_err().to_string();
    assert!(e.contains("row_ptr decreases at row 1"), "{e}");
    let e = Csr::new(2, 3, vec![0, 5, 2], vec![0, 1], vec![1.0, 1.0]).unwrap_err();
    assert!(e.to_string().contains("decreases"), "{e}");
}

/// mf-libmf (seed 1): a LIBMF header declaring billions of rows made `load_libmf` reserve
/// their factors up front (51.5 GB), and the failed allocation aborted the process.
#[test]
fn libmf_header_declaring_huge_sizes_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.libmf");
    std::fs::write(&path, "f 0\nm 4000000000\nn 1\nk 4\nb 0\np0 T 1 2 3 4\n").unwrap();
    let e = wgsparse::mf::Model::load_libmf(&path)
        .unwrap_err()
        .to_string();
    assert!(e.contains("m.libmf") && e.contains("p1"), "{e}");
}
