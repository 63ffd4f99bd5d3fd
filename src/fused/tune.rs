//! The autotuner behind `auto`: times the fused kernel at the model's (VS, workgroup size) and its
//! neighbours on random full-pattern operands (on sparse X both the `Fused` kernel and the
//! column-sorted tiles, [`Variant::Sorted`], and the column split, [`Variant::Split`], at a few row
//! tiles and two workgroup sizes), Xᵀ materialized ([`Variant::Transpose`]) where w is beyond
//! workgroup memory (where it wins, also over column panels and with Xᵀ's rows in the caller's
//! order), then the long-row threshold at the best of those (on dense X the rows in flight per
//! vector instead), the column re-indexing where `auto`'s rule is near its edge
//! ([`crate::fused::reorder`]), keeps the fastest, and caches it per adapter and shape bucket
//! (`fused-tune.json`, see [`crate::tune::TuneCache`]). C comes from the model (Eq. 5) for each VS
//! and workgroup size; where the `fused` kernel wins, half and twice it are timed too.

use serde::{Deserialize, Serialize};

use crate::fused::bench::{measure_runs, Operands};
use crate::fused::{Atomics, Matrix, Options, Pattern, Plan, Reorder, UnitTiles, Variant};
use crate::gpu::Gpu;
use crate::tune::{Finalists, TuneCache};
use crate::Result;

mod knobs;
use knobs::tune_knobs;

/// One candidate the tuner screened ([`Plan::tuning`]).
#[derive(Clone, Debug, Serialize)]
pub struct TuneStep {
    /// Its plan's configuration ([`crate::fused::Config::describe`]).
    pub config: String,
    /// Host seconds its plan took to build (layouts shared with an earlier candidate's cost
    /// none: at the KDD2010 shape a transpose of X is tens of seconds).
    pub build_s: f64,
    /// Its screening median, milliseconds.
    pub ms: f64,
}

/// A screened candidate: the options it was planned with (what [`tune`] reports) and its step.
struct Timed {
    options: Options,
    step: TuneStep,
}

/// Hears of each candidate as it is screened: its place in the order (from 1) and its step
/// (the CLI's spinner, where a tuning takes minutes: at the KDD2010 shape, over two).
pub type OnStep<'a> = &'a dyn Fn(usize, &TuneStep);

/// The candidates screened so far, each told to the observer as it lands.
struct Screened<'a> {
    timed: Vec<Timed>,
    on_step: Option<OnStep<'a>>,
}

impl<'a> Screened<'a> {
    fn new(on_step: Option<OnStep<'a>>) -> Self {
        Screened {
            timed: vec![],
            on_step,
        }
    }

    fn push(&mut self, t: Timed) {
        if let Some(tell) = self.on_step {
            tell(self.timed.len() + 1, &t.step);
        }
        self.timed.push(t);
    }
}

/// Screens `plan` (planned with `options`): its median over `reps` timed runs, recorded in
/// `timed`.
fn screen(
    (gpu, ops, reps): (&Gpu, &Operands, usize),
    plan: &Plan,
    timed: &mut Screened<'_>,
    options: Options,
) -> Result<f64> {
    let ms = measure_runs(gpu, plan, ops, reps, None, busy_runs(gpu, plan))?.ms;
    let step = TuneStep {
        config: plan.config.describe(),
        build_s: plan.build_seconds(),
        ms,
    };
    timed.push(Timed { options, step });
    Ok(ms)
}

/// Stored entries up to which each timed submission of the tuner holds [`BUSY_RUNS`] runs back
/// to back ([`busy_runs`]).
const BUSY_NNZ: usize = 1 << 22;
/// Runs per timed submission on X of at most [`BUSY_NNZ`] entries.
const BUSY_RUNS: usize = 8;

/// Runs per timed submission when the tuner times `plan` on `gpu`: on a GPU and an X of at
/// most 2²² entries, 8 back to back. A run there takes tens of microseconds against the host's
/// quarter millisecond per submission, so one run per submission leaves the GPU idle between
/// runs: at 500k × 200 on an H100 the same candidate screened twice in one tuning ran 0.0161
/// and 0.0178 ms, and 0.0194 in another, more than near candidates differ; back to back it
/// ran 0.0144 (BENCHMARKS.md, thirty-eighth measurements). A software device (the host's
/// threads, milliseconds a run) times one run a submission.
pub fn busy_runs(gpu: &Gpu, plan: &Plan) -> usize {
    if plan.nnz <= BUSY_NNZ && gpu.caps.device_type != "Cpu" {
        BUSY_RUNS
    } else {
        1
    }
}

/// Stored entries above which the tuner times only the model and one neighbour.
const TUNE_BIG_NNZ: usize = 1 << 26;

/// The fused pattern's autotune cache (`fused-tune.json`).
fn cache() -> Option<TuneCache> {
    TuneCache::named("fused-tune.json")
}

#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
struct Tuned {
    vs: u32,
    workgroup: u32,
    tl: u32,
    /// The `sorted` variant (absent in caches written before it existed).
    #[serde(default)]
    sorted: bool,
    /// Sparse: the long-row threshold (`None`: the launch model's; absent in older caches).
    #[serde(default)]
    long_row: Option<u32>,
    /// Sparse, w in workgroup memory: hot columns copied per vector (`None`: none; absent in
    /// older caches).
    #[serde(default)]
    hot_copies: Option<u32>,
    /// Sparse `fused`: entries per lane held in registers (`None`: none; absent in older
    /// caches).
    #[serde(default)]
    regs: Option<u32>,
    /// Sparse `fused` with regs: the row pipeline (`None`: off; absent in older caches).
    #[serde(default)]
    prefetch: Option<bool>,
    /// The `split` variant at this row tile (`None`: not split; absent in older caches).
    #[serde(default)]
    split: Option<u32>,
    /// Rows per vector: `split`'s row pass (`None`: one row per vector where the grid
    /// allows) or the `fused` kernel's (`None`: Eq. 5's); absent in older caches.
    #[serde(default)]
    c: Option<u32>,
    /// `split`, and `stream` with unit tiles: the 16-bit layout (`None`: the options' choice,
    /// for `split` where it applies; absent in older caches).
    #[serde(default)]
    split_key16: Option<bool>,
    /// Dense: rows in flight per vector (`None`: 1; absent in older caches).
    #[serde(default)]
    rows_in_flight: Option<u32>,
    /// Sparse: columns re-indexed by entry count (`None`: `Auto`'s rule; absent in older
    /// caches).
    #[serde(default)]
    reorder: Option<bool>,
    /// The `stream` variant with this many entries per invocation (`None`: not stream;
    /// absent in older caches).
    #[serde(default)]
    stream: Option<u32>,
    /// The `transpose` variant (absent in older caches).
    #[serde(default)]
    transpose: bool,
    /// `transpose`: entries per invocation of its row tiles (`Some(0)`: the row kernel;
    /// `None`: not transpose, or the variant's default; absent in older caches).
    #[serde(default)]
    gather_epl: Option<u32>,
    /// `stream`: its grid (`None`: the launch model's; absent in older caches).
    #[serde(default)]
    stream_groups: Option<u32>,
    /// The workgroup adds by compare-exchange loops where native ones were open (`None`:
    /// the options' kind; absent in older caches).
    #[serde(default)]
    wg_cas: Option<bool>,
    /// `stream`: fixed-point sums of w where the caller left them open (`None`: the options'
    /// choice; absent in older caches).
    #[serde(default)]
    wg_fixed: Option<bool>,
    /// `stream`: rows a tile holds at most (`None`: what workgroup memory allows; absent in
    /// older caches).
    #[serde(default)]
    stream_rows: Option<u32>,
    /// `stream`: copies of w in workgroup memory (`None`: the options' choice; absent in
    /// older caches).
    #[serde(default)]
    wg_copies: Option<u32>,
    /// `stream`: tiles taken by units of the least subgroup size (`None`: the options'
    /// choice; absent in older caches).
    #[serde(default)]
    unit_tiles: Option<bool>,
    /// `transpose`: column panels per gather (`None`: one; absent in older caches).
    #[serde(default)]
    panels: Option<u32>,
    /// `transpose` on re-indexed columns: Xᵀ's rows in the caller's order (`None`: the
    /// options' choice; absent in older caches).
    #[serde(default)]
    xt_caller: Option<bool>,
}

impl Tuned {
    /// VS, workgroup size and TL, every other knob left to the options (the `fused` kernel).
    fn at(vs: u32, workgroup: u32, tl: u32) -> Self {
        Tuned {
            vs,
            workgroup,
            tl,
            sorted: false,
            long_row: None,
            hot_copies: None,
            regs: None,
            prefetch: None,
            split: None,
            c: None,
            split_key16: None,
            rows_in_flight: None,
            reorder: None,
            stream: None,
            transpose: false,
            gather_epl: None,
            stream_groups: None,
            wg_cas: None,
            wg_fixed: None,
            stream_rows: None,
            wg_copies: None,
            unit_tiles: None,
            panels: None,
            xt_caller: None,
        }
    }
}

/// The tuner's revision in its cache keys: entries tuned before a revision are tuned again
/// (2: the row pipeline among the candidates; 3: the stream variant; 4: workgroup adds in
/// flight; 5: those dropped, slower everywhere on an H200, and the transpose variant; 6: the
/// transpose variant's row tiles; 7: their pipeline; 8: the stream variant's grid; 9:
/// workgroups up to four times the model's, and the fused kernel's C at half and twice
/// Eq. 5's; 10: the candidates around the refitted model, [`super::plan::fused_vs`] and
/// dense workgroups of 128 at n ≤ 32; 11: the fused kernel's C from the schedule estimate,
/// [`super::schedule`]; 12: dense workgroups of 512 past n = 32 and the fewest lanes past 32
/// per row; 13: the fused kernel's workgroups aimed at 32 vectors, [`super::plan::FUSED_VECTORS`];
/// 14: native adds into workgroup memory where the device has them; 15: the stream kernel's
/// fixed-point sums of w; 16: its workgroup sizes and grids searched jointly; 17: grids of 5
/// and 6 workgroups a unit, workgroups of 1,024, and the fastest size's tiles cut at fewer
/// rows; 18: copies of w in the stream kernel's workgroup memory; 19: the fastest copied
/// finalist at every stream grid; 20: the stream kernel's unit tiles; 21: the transpose
/// variant's column panels, 2 and 4, and Xᵀ's rows in the caller's order; 22: that order the
/// default, the plan's order the candidate; 23: a small X timed with runs back to back,
/// [`busy_runs`], and 2 panels alone).
const REVISION: u32 = 23;

/// The cache key: adapter, kind and a shape bucket (log₂ of m, n and the stored entries), the
/// column re-indexing when the caller fixed it (the other knobs were tuned on that layout),
/// whether the workgroup adds may be native (the picks differ with their cost), and the
/// fixed-point sums, copies of w and unit tiles when the caller fixed them.
fn key(gpu: &Gpu, x: Matrix, options: &Options) -> String {
    let lg = |v: usize| usize::BITS - v.max(1).leading_zeros();
    let (m, n) = x.shape();
    let wg_native = gpu.caps.wg_f32_atomics && options.wg_atomics != Atomics::Cas;
    format!(
        "{}|r{REVISION}|{}|m{}|n{}|nnz{}{}{}{}{}{}",
        gpu.caps.adapter_name,
        if matches!(x, Matrix::Dense(_)) {
            "dense"
        } else {
            "sparse"
        },
        lg(m),
        lg(n),
        lg(x.nnz()),
        match options.reorder {
            Reorder::Auto => "",
            Reorder::On => "|reorder-on",
            Reorder::Off => "|reorder-off",
        },
        if wg_native { "|wg-native" } else { "" },
        match options.wg_fixed {
            None => "",
            Some(true) => "|fixed-on",
            Some(false) => "|fixed-off",
        },
        options
            .wg_copies
            .map_or(String::new(), |c| format!("|copies-{c}")),
        match options.unit_tiles {
            UnitTiles::Off => String::new(),
            UnitTiles::Subgroup => "|units-on".into(),
            UnitTiles::Lanes(k) => format!("|units-{k}"),
        }
    )
}

/// Times the candidates for `x` afresh (no cache read or written): returns the pick and the
/// options of every candidate timed, for callers that check the pick (tuner honesty).
pub fn tune(gpu: &Gpu, x: Matrix, options: &Options) -> Result<(Plan, Vec<Options>)> {
    let model = Plan::new(gpu, x, options)?;
    let (t, pick, timed) = tune_with(gpu, x, options, &model, None)?;
    let mut plan = Plan::new_like(gpu, x, &tuned_options(x, options, &t), &pick)?;
    let (options, steps) = timed.into_iter().map(|t| (t.options, t.step)).unzip();
    plan.tuning = Some(Vec::into(steps));
    Ok((plan, options))
}

/// `options` set to the tuned configuration `t`.
fn tuned_options(x: Matrix, options: &Options, t: &Tuned) -> Options {
    Options {
        variant: if t.split.is_some() {
            Variant::Split
        } else if t.stream.is_some() {
            Variant::Stream
        } else if t.transpose {
            Variant::Transpose
        } else if t.sorted {
            Variant::Sorted
        } else {
            Variant::Fused
        },
        vs: Some(t.vs),
        workgroup: Some(t.workgroup),
        tl: matches!(x, Matrix::Dense(_)).then_some(t.tl),
        long_row: t.long_row.or(options.long_row),
        hot_cols: t.hot_copies.or(options.hot_cols),
        regs: t.regs.or(options.regs),
        prefetch: t.prefetch.unwrap_or(options.prefetch),
        row_tile: t.split.or(t.stream_rows).or(options.row_tile),
        rows_per_vector: t.c.or(options.rows_per_vector),
        key16: t.split_key16.or(options.key16),
        epl: t.stream.or(t.gather_epl).or(options.epl),
        groups: t.stream_groups.or(options.groups),
        wg_atomics: if t.wg_cas == Some(true) {
            Atomics::Cas
        } else {
            options.wg_atomics
        },
        wg_fixed: options.wg_fixed.or(t.wg_fixed),
        wg_copies: options.wg_copies.or(t.wg_copies),
        unit_tiles: match t.unit_tiles {
            Some(true) => UnitTiles::Subgroup,
            _ => options.unit_tiles,
        },
        rows_in_flight: options.rows_in_flight.or(t.rows_in_flight),
        panels: options.panels.or(t.panels),
        xt_caller: options.xt_caller.or(t.xt_caller),
        // The tuner's choice only where the caller left it to `auto`.
        reorder: match (options.reorder, t.reorder) {
            (Reorder::Auto, Some(true)) => Reorder::On,
            (Reorder::Auto, Some(false)) => Reorder::Off,
            (r, _) => r,
        },
        ..options.clone()
    }
}

/// A plan for `x`: with `options.variant == Auto` and no VS or workgroup size given, the
/// cached configuration for this adapter and shape bucket, or (first time) the fastest of
/// the candidates timed here; otherwise [`Plan::new`].
pub fn autotuned_plan(gpu: &Gpu, x: Matrix, options: &Options) -> Result<Plan> {
    autotuned_plan_observed(gpu, x, options, None)
}

/// [`autotuned_plan`], telling `on_step` of each candidate as it is screened (nothing when
/// the configuration comes from the cache).
pub fn autotuned_plan_observed(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    on_step: Option<OnStep<'_>>,
) -> Result<Plan> {
    if options.diag.any() {
        return Err(crate::Error::Option(format!(
            "the autotuner times valid kernels only, not with --diag {}",
            options.diag.names().join(",")
        )));
    }
    let free = options.variant == Variant::Auto
        && options.vs.is_none()
        && options.workgroup.is_none()
        && options.tl.is_none();
    if !free {
        return Plan::new(gpu, x, options);
    }
    let with = |t: &Tuned| tuned_options(x, options, t);
    let k = key(gpu, x, options);
    let cache = cache();
    let model = Plan::new(gpu, x, options)?;
    if let Some(t) = cache.as_ref().and_then(|c| c.get::<Tuned>(&k)) {
        if let Ok(plan) = Plan::new_like(gpu, x, &with(&t), &model) {
            return Ok(plan);
        }
    }
    let (t, pick, timed) = tune_with(gpu, x, options, &model, on_step)?;
    // A cache that cannot be written costs a re-tune next time, not this run.
    if let Some(Err(e)) = cache.map(|c| c.insert(&k, &t)) {
        eprintln!("wgsparse: warning: the tuned configuration was not cached: {e}");
    }
    // Built like the pick's timed plan, sharing its layouts (at the KDD2010 shape the
    // transpose and re-indexing of X, tens of seconds on the host).
    let mut plan = Plan::new_like(gpu, x, &with(&t), &pick)?;
    plan.tuning = Some(timed.into_iter().map(|t| t.step).collect());
    Ok(plan)
}

/// [`tune_knobs`], then how the pick adds into workgroup memory, where the caller left it
/// open: the same configuration with compare-exchange loops where it adds natively, and
/// (the stream kernel) with fixed-point sums of w, each timed against it. Native adds win
/// under contention and lose where it is low: on an H100 random adds over 16 KiB ran 334 G/s
/// native against 632 by the loop, the stream kernel at 500k × 4,096 0.157 against 0.167 ms,
/// the `fused` kernel there 0.246 against 0.224. The sums ran slower than float adds on an
/// H100 and an H200 so far (BENCHMARKS.md, twenty-eighth measurements), but integer adds
/// cost what plain loads and stores do there: where float adds cost more, they may win.
/// Returns the pick with its timed plan and the options of every candidate timed.
fn tune_with(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    model: &Plan,
    on_step: Option<OnStep<'_>>,
) -> Result<(Tuned, Plan, Vec<Timed>)> {
    let (m, n) = x.shape();
    let ops = Operands::random(gpu, m, n, Pattern::Full, 99)?;
    let ((pick, t), mut timed) = tune_knobs(gpu, x, options, model, &ops, on_step)?;
    let with = |t: &Tuned| tuned_options(x, options, t);
    let c = &pick.config;
    let mut rivals = vec![];
    if options.wg_atomics == Atomics::Auto && c.wg_native_atomics {
        rivals.push(Tuned {
            wg_cas: Some(true),
            ..t
        });
    }
    if options.wg_fixed.is_none() && c.variant == Variant::Stream && !c.wg_fixed {
        // At the pick's grid, and at the launch model's for the sums' larger footprint
        // (fewer workgroups resident).
        let mut grids = vec![None];
        if t.stream_groups.is_some() {
            grids.insert(0, t.stream_groups);
        }
        for stream_groups in grids {
            // Fixed-point sums keep one copy of w.
            rivals.push(Tuned {
                wg_fixed: Some(true),
                wg_copies: None,
                stream_groups,
                ..t
            });
        }
    }
    if options.wg_copies.is_none() && c.variant == Variant::Stream && !c.wg_fixed {
        // Copies of w (fewer adds contend for a word; the search timed four on each stream
        // finalist): 2 and 4 with native adds and by compare-exchange where both are open
        // (the loop was the faster under copies on an H100), else with the pick's adds, and 4
        // also at half the grid (their footprint leaves fewer workgroups resident). At 500k ×
        // 200, 256 × 4 on 528 workgroups: 0.0195 ms with one copy, 0.0170 with four
        // (BENCHMARKS.md, thirty-first measurements).
        let cas_open = gpu.caps.wg_f32_atomics && options.wg_atomics == Atomics::Auto;
        let kinds: &[bool] = if cas_open { &[false, true] } else { &[false] };
        let mut copies_at: Vec<_> = kinds.iter().map(|&cas| (2, cas, t.stream_groups)).collect();
        // The search timed four at the pick's grid already, by compare-exchange where open.
        if cas_open {
            copies_at.push((4, false, t.stream_groups));
        }
        if options.groups.is_none() {
            copies_at.push((4, cas_open, Some((c.groups / 2).max(1))));
        }
        for (copies, cas, stream_groups) in copies_at {
            let wg_cas = if cas_open {
                cas.then_some(true)
            } else {
                t.wg_cas
            };
            if (Some(copies), wg_cas, stream_groups) == (t.wg_copies, t.wg_cas, t.stream_groups) {
                continue; // the pick itself
            }
            rivals.push(Tuned {
                wg_copies: Some(copies),
                wg_cas,
                stream_groups,
                ..t
            });
        }
    }
    let mut entrants = vec![];
    for tuned in rivals {
        // A rival that does not fit (fixed-point sums beyond workgroup memory) is skipped.
        if let Ok(plan) = Plan::new_like(gpu, x, &with(&tuned), &pick) {
            entrants.push((plan, tuned));
        }
    }
    if entrants.is_empty() {
        return Ok((t, pick, timed.timed));
    }
    entrants.insert(0, (pick, t));
    let mut finalists: Finalists<(Plan, Tuned)> = Finalists::default();
    for (plan, tuned) in entrants {
        let ms = screen((gpu, &ops, tune_reps(x)), &plan, &mut timed, with(&tuned))?;
        finalists.offer(ms, (plan, tuned));
    }
    let ((plan, tuned), _) = finalists
        .decide(gpu, |(plan, _)| run_once(gpu, plan, &ops))?
        .ok_or_else(|| crate::Error::Option("no configuration fits this adapter".into()))?;
    Ok((tuned, plan, timed.timed))
}

/// Timed repetitions of one screening: fewer on a large X (the KDD2010 shape: 424M
/// entries), where every run costs real time.
fn tune_reps(x: Matrix) -> usize {
    if x.nnz() > TUNE_BIG_NNZ {
        2
    } else {
        5
    }
}

/// One timed submission of `plan` on the tuner's operands ([`busy_runs`] runs back to back),
/// the time per run.
fn run_once(gpu: &Gpu, plan: &Plan, ops: &Operands) -> Result<crate::gpu::GpuTime> {
    plan.time_once(gpu, &ops.op(), &ops.w, busy_runs(gpu, plan))
}
