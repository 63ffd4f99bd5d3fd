//! The tuner's search around the launch model's configuration ([`tune_knobs`]): one knob at
//! a time past the (VS, workgroup size) search, each stage screening its candidates and
//! timing its fastest few.

use super::{run_once, screen, tune_reps, tuned_options, OnStep, Screened, Tuned, TUNE_BIG_NNZ};
use crate::fused::bench::Operands;
use crate::fused::GATHER_TILE_DEFAULT;
use crate::fused::{
    reorder, split, stream, transpose, Atomics, Matrix, Options, Plan, Reorder, UnitTiles, Variant,
};
use crate::gpu::Gpu;
use crate::tune::Finalists;
use crate::Result;

/// Column panels the tuner times on the `transpose` variant's pick (on an H100 at KDD2010,
/// `full`: 1 panel 8.41 ms, 2 8.15, 4 8.34, 8 9.96 in the plan's row order; in the caller's,
/// 1 panel 7.45, 2 7.65, 4 8.36). Each candidate transposes X again (22 s on the host there),
/// so 4, never the fastest, is left out.
const TUNE_PANELS: [u32; 1] = [2];

/// The fastest of the candidates around the launch model's configuration (`model`'s plan),
/// with every candidate's options in the order timed (the model's first). Each stage
/// screens its candidates one by one, then times its fastest few in turn
/// ([`Finalists::decide`]): first (VS, workgroup size, fused or sorted), then the long-row
/// threshold at the winner.
pub(super) fn tune_knobs<'a>(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    model: &Plan,
    ops: &Operands,
    on_step: Option<OnStep<'a>>,
) -> Result<((Plan, Tuned), Screened<'a>)> {
    let with = |t: &Tuned| tuned_options(x, options, t);
    let (m, n) = x.shape();
    let once = |plan: &Plan| run_once(gpu, plan, ops);
    let mc = model.config;
    let tuned_of = |c: &crate::fused::Config, long_row: Option<u32>| Tuned {
        sorted: c.variant == Variant::Sorted,
        long_row,
        split: (c.variant == Variant::Split).then_some(c.row_tile),
        transpose: c.variant == Variant::Transpose,
        gather_epl: (c.variant == Variant::Transpose).then_some(c.tile / c.workgroup.max(1)),
        ..Tuned::at(c.vs, c.workgroup, c.tl)
    };
    let mut timed = Screened::new(on_step);
    // On a large X (the KDD2010 shape: 424M entries) every timed run costs real time and a
    // candidate with another hot-column count re-ranks X: a few candidates, fewer repetitions.
    let big = x.nnz() > TUNE_BIG_NNZ;
    let reps = tune_reps(x);
    let mut finalists: Finalists<(Plan, Tuned)> = Finalists::default();
    let first = Plan::new_like(gpu, x, options, model)?;
    finalists.offer(
        screen((gpu, ops, reps), &first, &mut timed, options.clone())?,
        (first, tuned_of(&mc, None)),
    );
    let max_wg = gpu.caps.max_invocations_per_workgroup.min(1024);
    let vss: &[u32] = if big {
        &[mc.vs]
    } else {
        &[mc.vs / 2, mc.vs, mc.vs * 2]
    };
    let mut wgs: Vec<u32> = if big {
        vec![mc.workgroup / 2, mc.workgroup]
    } else {
        vec![
            mc.workgroup / 4,
            mc.workgroup / 2,
            mc.workgroup,
            mc.workgroup * 2,
            // Dense: on an H100 at 500k × 200 the launch model's sweep found 512 (four times
            // the paper's 128) 8% faster, the same vectors summing w in fewer workgroups.
            mc.workgroup * 4,
            // Sorted: the largest tiles (longest runs) and fewest workgroups to flush.
            1024,
        ]
    };
    wgs.sort_unstable();
    wgs.dedup();
    // Sorted takes any column count (wide keys beyond a packed key: KDD2010's 29.9M).
    let sorts: &[bool] = match x {
        Matrix::Sparse(_) => &[false, true],
        _ => &[false],
    };
    // The last sorted candidate when it is not a finalist: the next one at its workgroup
    // size (its tile size) reuses its tiles instead of sorting X again (the workgroup size
    // is the outer loop); a sorted finalist serves the same way.
    let mut last_sorted: Option<Plan> = None;
    for (wg, vs, &sorted) in wgs
        .iter()
        .copied()
        .flat_map(|wg| vss.iter().map(move |&vs| (wg, vs)))
        .filter(|&(w, vs)| vs >= 1 && (32..=max_wg).contains(&w) && w >= vs)
        .flat_map(|(wg, vs)| sorts.iter().map(move |p| (wg, vs, p)))
        // On a large X each tile size sorts X again on the host: sorted at one size alone.
        .filter(|&(w, _, &sorted)| !(big && sorted && Some(&w) != wgs.last()))
    {
        let sorted_like = last_sorted.as_ref().or_else(|| {
            finalists
                .iter()
                .map(|(p, _)| p)
                .find(|p| p.config.variant == Variant::Sorted && p.config.workgroup == wg)
        });
        let like = sorted_like.filter(|_| sorted).unwrap_or(model);
        let cand = Tuned {
            sorted,
            ..Tuned::at(vs, wg, n.div_ceil(vs as usize).max(1) as u32)
        };
        let Ok(plan) = Plan::new_like(gpu, x, &with(&cand), like) else {
            continue;
        };
        if plan.config == mc {
            continue;
        }
        let ms = screen((gpu, ops, reps), &plan, &mut timed, with(&cand))?;
        let tuned = tuned_of(&plan.config, None);
        let back = finalists.offer(ms, (plan, tuned)).map(|(p, _)| p);
        if let Some(p) = back.filter(|p| p.config.variant == Variant::Sorted) {
            last_sorted = Some(p);
        } else if sorted {
            last_sorted = None;
        }
    }
    // The column split (X read twice, the scatter by runs of a column): a few row tiles at two
    // workgroup sizes, the row pass at one row per vector (the model's VS, half and twice it)
    // and at Eq. 5's C, and the 32-bit keys beside the 16-bit layout (at the model's row
    // tile), on sparse X whose columns fit its keys (not on a large X: each (row tile,
    // workgroup size, layout) lays X out again on the host; the row-pass candidates share a
    // layout).
    if matches!(x, Matrix::Sparse(_)) && !big {
        let max_rt = split::max_row_tile(n).unwrap_or(0);
        for wg in [256, 1024]
            .into_iter()
            .filter(|&w| w <= max_wg && w >= mc.vs)
        {
            let eq5 = crate::fused::config::split_model_c(gpu, m, mc.vs, wg, options.subgroups);
            let rows = [
                (mc.vs, None, None),
                (mc.vs, Some(eq5), None),
                (mc.vs / 2, None, None),
                (mc.vs * 2, None, None),
                (mc.vs, None, Some(false)),
            ];
            for rt in split::TUNE_ROW_TILES.into_iter().filter(|&t| t <= max_rt) {
                let mut like: Option<Plan> = None;
                let mut seen = vec![];
                // 32-bit keys at the model's row tile only (one more layout per workgroup size).
                let default_rt = split::default_row_tile(n) == Some(rt);
                let cands = rows
                    .into_iter()
                    .filter(|&(v, _, k)| (1..=32).contains(&v) && (k.is_none() || default_rt));
                for (vs, c, k) in cands {
                    let cand = Tuned {
                        split: Some(rt),
                        c,
                        split_key16: k,
                        ..Tuned::at(vs, wg, 1)
                    };
                    let base = like.as_ref().unwrap_or(model);
                    let Ok(plan) = Plan::new_like(gpu, x, &with(&cand), base) else {
                        continue;
                    };
                    if plan.config.variant != Variant::Split || seen.contains(&plan.config) {
                        continue;
                    }
                    seen.push(plan.config);
                    let ms = screen((gpu, ops, reps), &plan, &mut timed, with(&cand))?;
                    let tuned = Tuned {
                        c,
                        split_key16: k,
                        ..tuned_of(&plan.config, None)
                    };
                    // The next candidate shares this layout (the plan may leave as a finalist).
                    if like.is_none() {
                        like = Some(Plan::new_like(gpu, x, &with(&cand), &plan)?);
                    }
                    finalists.offer(ms, (plan, tuned));
                }
            }
        }
    }
    let pick = |f: Finalists<(Plan, Tuned)>| -> Result<((Plan, Tuned), f64)> {
        f.decide(gpu, |(p, _)| once(p))?
            .ok_or_else(|| crate::Error::Option("no configuration fits this adapter".into()))
    };
    // One knob at a time past the (VS, workgroup size) search: the incumbent against each
    // candidate whose plan builds (and, where `same` is given, whose configuration differs
    // from it), every timed candidate recorded.
    let refine = |timed: &mut Screened<'_>,
                  incumbent: ((Plan, Tuned), f64),
                  cands: &mut dyn Iterator<Item = Tuned>,
                  same: Option<crate::fused::Config>|
     -> Result<((Plan, Tuned), f64)> {
        let ((plan, t), seconds) = incumbent;
        let mut finalists = Finalists::default();
        finalists.offer(seconds * 1e3, (plan, t));
        // A transpose plan at hand (a finalist, else the last one screened out): a transpose
        // candidate built like it shares its Xᵀ, panels and re-indexed X where they match (at
        // the KDD2010 shape a host transpose and upload of 3.4 GB each); others, the model's
        // layouts.
        let mut spare: Option<Plan> = None;
        for cand in cands {
            let like = finalists
                .iter()
                .map(|(p, _)| p)
                .chain(spare.as_ref())
                .find(|p| cand.transpose && p.config.variant == Variant::Transpose)
                .unwrap_or(model);
            let Ok(plan) = Plan::new_like(gpu, x, &with(&cand), like) else {
                continue;
            };
            if same == Some(plan.config) {
                continue;
            }
            let ms = screen((gpu, ops, reps), &plan, timed, with(&cand))?;
            let back = finalists.offer(ms, (plan, cand)).map(|(p, _)| p);
            if let Some(p) = back.filter(|p| p.config.variant == Variant::Transpose) {
                spare = Some(p);
            }
        }
        pick(finalists)
    };
    let mut best = pick(finalists)?;
    // Then Xᵀ materialized, where w is beyond workgroup memory: two gathers instead of a
    // scatter whose adds spread over all of w (the KDD2010 shape's 29.9M columns): in row
    // tiles, and by rows at the gathers' own VS (on the H200 at KDD2010: tiles of 4 × 256
    // entries 6.81 ms, rows at VS 4 9.30, at the fused kernel's VS 16 9.68).
    if matches!(x, Matrix::Sparse(_)) && !mc.workgroup_w && options.workgroup_w != Some(true) {
        let t = best.0 .1;
        let mu = x.nnz() as f64 / m.max(1) as f64;
        let gathers = Tuned {
            vs: transpose::gather_vs(mu),
            sorted: false,
            split: None,
            c: None,
            split_key16: None,
            stream: None,
            transpose: true,
            regs: None,
            prefetch: Some(false),
            ..t
        };
        let (epl, wg) = GATHER_TILE_DEFAULT;
        let tiles = Tuned {
            workgroup: wg,
            gather_epl: Some(epl),
            ..gathers
        };
        // The tiles' pipeline over resident workgroups (slower at KDD2010 on an H100: 9.73
        // against 8.25 ms).
        let mut cands = [
            tiles,
            Tuned {
                prefetch: Some(true),
                ..tiles
            },
            Tuned {
                workgroup: mc.workgroup,
                gather_epl: Some(0),
                ..gathers
            },
        ]
        .into_iter();
        best = refine(&mut timed, best, &mut cands, None)?;
        // Then, where the gathers won, each summed over column panels: a slice of the
        // vector at a time for the cache ([`crate::fused::Config::panels`]).
        let t = best.0 .1;
        if t.transpose && options.panels.is_none() {
            let mut cands = TUNE_PANELS.into_iter().map(|p| Tuned {
                panels: Some(p),
                ..t
            });
            best = refine(&mut timed, best, &mut cands, None)?;
        }
        // And on re-indexed columns, Xᵀ's rows in the plan's order (hot columns' rows
        // first, w permuted back) against the default, the caller's order (hot and cold rows
        // mixed in the pass, w written in place; on an H100 at KDD2010 7.32 ms `full` against
        // the plan's order's best, 8.02 over 2 panels).
        let t = best.0 .1;
        if t.transpose && best.0 .0.config.reorder && options.xt_caller.is_none() {
            let mut cands = std::iter::once(Tuned {
                xt_caller: Some(false),
                ..t
            });
            best = refine(&mut timed, best, &mut cands, None)?;
        }
    }
    // Then the `fused` kernel's rows per vector at half and twice the model's (the schedule
    // estimate's pick among multiples of Eq. 5's C).
    let (c, t) = (best.0 .0.config, best.0 .1);
    if c.variant == Variant::Fused && options.rows_per_vector.is_none() && !big {
        let c0 = c.rows_per_vector;
        let mut cands = [c0 / 2, c0 * 2]
            .into_iter()
            .filter(move |&k| k >= 1 && k != c0)
            .map(|k| Tuned { c: Some(k), ..t });
        best = refine(&mut timed, best, &mut cands, Some(c))?;
    }
    // Then the long-row threshold at the best (VS, workgroup size): a power-law X's heavy
    // rows cost more in one vector or in the chunked path depending on the device.
    if matches!(x, Matrix::Sparse(_)) && options.long_row.is_none() {
        let (c, t) = (best.0 .0.config, best.0 .1);
        let candidates: &[u32] = if big { &[1024] } else { &[256, 1024, u32::MAX] };
        let mut cands = candidates.iter().map(|&l| Tuned {
            long_row: Some(l),
            ..t
        });
        best = refine(&mut timed, best, &mut cands, Some(c))?;
    }
    // Then the column re-indexing, where `Auto`'s rule is near its edge (the large-n path,
    // the top columns' share within a factor of 2 of its threshold): the other choice timed.
    if options.reorder == Reorder::Auto && reorder::unsure(&best.0 .0) {
        let (c, t) = (best.0 .0.config, best.0 .1);
        let mut cands = std::iter::once(Tuned {
            reorder: Some(!c.reorder),
            ..t
        });
        best = refine(&mut timed, best, &mut cands, Some(c))?;
    }
    // Then the hot copies, where w is in workgroup memory: on power-law X every vector adds
    // to the same few hot columns' words.
    let hot_free = options.hot_cols.is_none() && options.workgroup_w != Some(false);
    let c = best.0 .0.config;
    if c.variant == Variant::Fused && c.workgroup_w && hot_free {
        let t = best.0 .1;
        let mut cands = HOT_COPIES.into_iter().map(|h| Tuned {
            hot_copies: Some(h),
            ..t
        });
        best = refine(&mut timed, best, &mut cands, None)?;
    }
    let (c, t) = (best.0 .0.config, best.0 .1);
    // Dense `fused`: last the rows in flight per vector (loads of several rows issued before
    // their reductions) at the best (VS, workgroup size).
    if c.dense {
        if c.variant != Variant::Fused || options.rows_in_flight.is_some() {
            return Ok((best.0, timed));
        }
        let mut cands = TUNE_ROWS_IN_FLIGHT.into_iter().map(|r| Tuned {
            rows_in_flight: Some(r),
            ..t
        });
        return Ok((refine(&mut timed, best, &mut cands, None)?.0, timed));
    }
    // Last the entries held in registers from the dot product to the scatter, then the row
    // pipeline (the next row's loads in flight) at each register count: on the H200 at
    // 500k × 4,096 it helped regs 2 (0.248 → 0.190 ms) and slowed regs 4 (0.204 → 0.238).
    if options.regs.is_some() || options.prefetch || big {
        return Ok((best.0, timed));
    }
    if c.variant == Variant::Fused {
        let mut cands = TUNE_REGS.into_iter().map(|k| Tuned { regs: Some(k), ..t });
        best = refine(&mut timed, best, &mut cands, None)?;
        let t = best.0 .1;
        let mut cands = TUNE_REGS.into_iter().map(|k| Tuned {
            regs: Some(k),
            prefetch: Some(true),
            ..t
        });
        best = refine(&mut timed, best, &mut cands, None)?;
    }
    // And the pipeline on whole-subgroup vectors in the largest workgroups, whatever won so
    // far: latency-bound rows gain more from loads in flight than they lose to idle lanes (on
    // the H200 the fastest sparse configuration at n = 1,024 and 4,096, 0.079 and 0.194 ms,
    // where the model's VS is 8 and 32).
    if options.vs.is_none() && options.workgroup.is_none() {
        let wide = Tuned {
            vs: WIDE_PIPELINE.0,
            workgroup: WIDE_PIPELINE.1,
            sorted: false,
            split: None,
            c: None,
            split_key16: None,
            long_row: None,
            hot_copies: None,
            transpose: false,
            gather_epl: None,
            ..best.0 .1
        };
        let mut cands = WIDE_PIPELINE.2.into_iter().map(|k| Tuned {
            regs: Some(k),
            prefetch: Some(true),
            ..wide
        });
        best = refine(&mut timed, best, &mut cands, None)?;
    }
    // Last the row tiles streamed in CSR order, at a few workgroup sizes and entries per
    // invocation: on the H200 at 500k × 1,024 (rows of ≈ 10 entries) 0.060 ms against the
    // row kernel's 0.078, at × 4,096 within 3% of it (job C of BENCHMARKS' thirteenth
    // measurements).
    let stream_fits = mc.workgroup_w && options.workgroup_w != Some(false);
    if stream_fits && options.workgroup.is_none() && options.long_row.is_none() {
        let base = Tuned {
            sorted: false,
            split: None,
            c: None,
            split_key16: None,
            long_row: None,
            hot_copies: None,
            regs: None,
            prefetch: None,
            transpose: false,
            gather_epl: None,
            ..best.0 .1
        };
        // Each (workgroup size, entries) at the launch model's grid and at a few workgroups
        // per compute unit, the grids sharing its layout: searched jointly, since the best
        // size at the model's grid need not be the best at its own (on an H100 at 500k × 200
        // the model's grid picked 256 × 8, tuned to 264 workgroups 0.0243 ms, where 256 × 4 at
        // 528 took 0.0194; the model counts 228 KiB of workgroup memory per unit where
        // `wgsparse calibrate` measured 48 KiB).
        let units = crate::gpu::Residency::of(&gpu.caps).units;
        let ((plan, t), seconds) = best;
        let mut finalists = Finalists::default();
        finalists.offer(seconds * 1e3, (plan, t));
        // The fastest stream candidate: its screening time, the trimmed rows of its layout.
        let mut fastest: Option<Fastest> = None;
        for (wg, epl) in TUNE_STREAM {
            let cand = Tuned {
                workgroup: wg,
                stream: Some(epl),
                ..base
            };
            if let Ok(plan) = Plan::new_like(gpu, x, &with(&cand), model) {
                let ctx = (gpu, x, options, ops, reps);
                let f = time_stream_grids(ctx, units, (plan, cand), &mut finalists, &mut timed)?;
                if fastest.as_ref().is_none_or(|b| f.0 < b.0) {
                    fastest = Some(f);
                }
            }
        }
        // Then the fastest size's tiles cut at fewer rows, at every grid again: less
        // workgroup memory, so more workgroups resident (on an H100 at 500k × 1,024, 256 × 4:
        // 0.0532 ms at 792 workgroups, 0.0488 with tiles of at most 160 rows; BENCHMARKS.md,
        // twenty-ninth measurements).
        let trimmed = fastest
            .filter(|_| options.row_tile.is_none())
            .and_then(|(_, rows, t)| {
                let cand = Tuned {
                    stream_rows: Some(rows?),
                    stream_groups: None,
                    ..t
                };
                Plan::new_like(gpu, x, &with(&cand), model)
                    .ok()
                    .map(|p| (p, cand))
            });
        if let Some(layout) = trimmed {
            let ctx = (gpu, x, options, ops, reps);
            time_stream_grids(ctx, units, layout, &mut finalists, &mut timed)?;
        }
        let ctx = (gpu, x, options, ops, reps);
        time_stream_copies(ctx, units, &mut finalists, &mut timed)?;
        time_unit_tiles(ctx, units, &mut finalists, &mut timed)?;
        best = pick(finalists)?;
    }
    Ok((best.0, timed))
}

/// Four copies of w on each stream finalist where the caller left the copies open (by
/// compare-exchange where native adds were open: the faster under copies), then the fastest
/// of them at [`stream_grids`] too, each offered to `finalists` and recorded in `timed`.
/// Copies pay where adds meet on few words, and which size and grid wins with them differs:
/// on an H100 at 500k × 200, 256 × 4 on 528 workgroups ran 0.0195 ms with one copy and 0.0170
/// with four, 128 × 4 on 792 0.0205 and 0.0187; at 500k × 1,024 the finalists' grids of five
/// and six workgroups a unit leave room for two copied workgroups an SM, where 512 × 4 with
/// four copies on 264 workgroups ran 0.0487 against the pick's 0.0523 with one
/// (BENCHMARKS.md, thirty-first and thirty-second measurements). Copies that do not fit are
/// skipped.
fn time_stream_copies(
    (gpu, x, options, ops, reps): (&Gpu, Matrix, &Options, &Operands, usize),
    units: u32,
    finalists: &mut Finalists<(Plan, Tuned)>,
    timed: &mut Screened<'_>,
) -> Result<()> {
    if options.wg_copies.is_some() {
        return Ok(());
    }
    let cas = options.wg_atomics == Atomics::Auto && gpu.caps.wg_f32_atomics;
    let with = |t: &Tuned| tuned_options(x, options, t);
    let rivals: Vec<(Plan, Tuned)> = finalists
        .iter()
        .filter(|(p, _)| p.config.variant == Variant::Stream && p.config.wg_copies == 1)
        .filter_map(|(p, t)| {
            let c = Tuned {
                wg_copies: Some(4),
                wg_cas: cas.then_some(true).or(t.wg_cas),
                ..*t
            };
            Plan::new_like(gpu, x, &with(&c), p).ok().map(|p| (p, c))
        })
        .collect();
    let ctx = (gpu, x, options, ops, reps);
    time_with_grids(ctx, units, rivals, finalists, timed)
}

/// Times `rivals`, then the fastest of them at [`stream_grids`] (planned on its layout before
/// it is offered), offering each to `finalists` and recording it in `timed`.
fn time_with_grids(
    (gpu, x, options, ops, reps): (&Gpu, Matrix, &Options, &Operands, usize),
    units: u32,
    rivals: Vec<(Plan, Tuned)>,
    finalists: &mut Finalists<(Plan, Tuned)>,
    timed: &mut Screened<'_>,
) -> Result<()> {
    let with = |t: &Tuned| tuned_options(x, options, t);
    let mut runs = vec![];
    for (plan, tuned) in rivals {
        let ms = screen((gpu, ops, reps), &plan, timed, with(&tuned))?;
        runs.push((ms, plan, tuned));
    }
    let regrid = runs
        .iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, plan, tuned)| stream_grids(gpu, x, options, units, (plan, *tuned)))
        .unwrap_or_default();
    for (ms, plan, tuned) in runs {
        finalists.offer(ms, (plan, tuned));
    }
    for (plan, tuned) in regrid {
        let ms = screen((gpu, ops, reps), &plan, timed, with(&tuned))?;
        finalists.offer(ms, (plan, tuned));
    }
    Ok(())
}

/// Stream finalists with [`UNIT_TILE_BASES`] tries unit tiles on, where the caller left them
/// open: the two fastest stream finalists with 4 and 8 entries a lane (their workgroup
/// size, copies, adds and grid kept; the fastest also with 16-bit keys where they fit and the
/// caller left them open: a tile's bytes count for more without its barriers), then the
/// fastest of those at [`stream_grids`] too, each
/// offered to `finalists` and recorded in `timed`. Unit tiles trade the workgroup's barriers
/// in every tile for shuffles within a subgroup: on an H100 at 500k × 4,096 streaming X with
/// no adds at all took 0.079–0.088 ms of the stream kernel's 0.155, half the copy roofline,
/// whatever its residency (BENCHMARKS.md, thirtieth measurements). There they lost on every
/// input, slower even with no adds (thirty-third measurements); they stay timed for devices
/// whose barriers cost more.
fn time_unit_tiles(
    (gpu, x, options, ops, reps): (&Gpu, Matrix, &Options, &Operands, usize),
    units: u32,
    finalists: &mut Finalists<(Plan, Tuned)>,
    timed: &mut Screened<'_>,
) -> Result<()> {
    if options.unit_tiles != UnitTiles::Off || !gpu.caps.subgroups {
        return Ok(());
    }
    let with = |t: &Tuned| tuned_options(x, options, t);
    // 16-bit keys where the caller left them open and X's columns fit: on the fastest base.
    let key16s: &[Option<bool>] = if options.key16.is_none() && stream::fits16(x.shape().1) {
        &[None, Some(true)]
    } else {
        &[None]
    };
    let bases = finalists
        .iter()
        .filter(|(p, _)| p.config.variant == Variant::Stream && p.config.unit == 0)
        .take(UNIT_TILE_BASES);
    let mut rivals = vec![];
    for (i, (p, t)) in bases.enumerate() {
        let key16s = if i == 0 { key16s } else { &key16s[..1] };
        for epl in [4, 8] {
            for &key16 in key16s {
                let c = Tuned {
                    unit_tiles: Some(true),
                    stream: Some(epl),
                    split_key16: key16.or(t.split_key16),
                    prefetch: Some(false),
                    stream_rows: None,
                    wg_fixed: None,
                    stream_groups: t.stream_groups.or(Some(p.config.groups)),
                    ..*t
                };
                if let Ok(plan) = Plan::new_like(gpu, x, &with(&c), p) {
                    rivals.push((plan, c));
                }
            }
        }
    }
    let ctx = (gpu, x, options, ops, reps);
    time_with_grids(ctx, units, rivals, finalists, timed)
}

/// Stream finalists (fastest first) on which [`time_unit_tiles`] tries unit tiles.
const UNIT_TILE_BASES: usize = 2;

/// A stream candidate's screening time, the rows its layout's tiles would be trimmed to
/// ([`trimmed_rows`]) and its knobs.
type Fastest = (f64, Option<u32>, Tuned);

/// Screens the stream candidate `cand` (planned as `plan`) at the launch model's grid and at
/// [`stream_grids`], offering each to `finalists` and recording it in `timed`; returns the
/// fastest of them.
fn time_stream_grids(
    (gpu, x, options, ops, reps): (&Gpu, Matrix, &Options, &Operands, usize),
    units: u32,
    (plan, cand): (Plan, Tuned),
    finalists: &mut Finalists<(Plan, Tuned)>,
    timed: &mut Screened<'_>,
) -> Result<Fastest> {
    let grids = stream_grids(gpu, x, options, units, (&plan, cand));
    let mut fastest: Option<Fastest> = None;
    for (p, tuned) in std::iter::once((plan, cand)).chain(grids) {
        let ms = screen(
            (gpu, ops, reps),
            &p,
            timed,
            tuned_options(x, options, &tuned),
        )?;
        if fastest.as_ref().is_none_or(|f| ms < f.0) {
            fastest = Some((ms, trimmed_rows(x, &p), tuned));
        }
        finalists.offer(ms, (p, tuned));
    }
    Ok(fastest.expect("the candidate itself is timed"))
}

/// The stream candidate `cand` (planned as `plan`) at a few workgroups per compute unit, each
/// plan sharing its layout, where the caller left the grid open and the grid changes the
/// configuration.
fn stream_grids(
    gpu: &Gpu,
    x: Matrix,
    options: &Options,
    units: u32,
    (plan, cand): (&Plan, Tuned),
) -> Vec<(Plan, Tuned)> {
    if options.groups.is_some() {
        return vec![];
    }
    let with = |t: &Tuned| tuned_options(x, options, t);
    TUNE_STREAM_GRIDS
        .into_iter()
        .filter_map(|k| {
            let g = Tuned {
                stream_groups: Some(units.saturating_mul(k)),
                ..cand
            };
            let p = Plan::new_like(gpu, x, &with(&g), plan).ok()?;
            (p.config != plan.config).then_some((p, g))
        })
        .collect()
}

/// Rows a stream tile may hold for the trimmed candidate: half again a tile's mean rows,
/// rounded up to a multiple of 32, where that is below the fullest tile of `plan`'s layout
/// (`None`: not stream, or no fewer).
fn trimmed_rows(x: Matrix, plan: &Plan) -> Option<u32> {
    let rows_max = plan.stream_rows_max()?;
    let (m, _) = x.shape();
    let mu = x.nnz() as f64 / m.max(1) as f64;
    let mean = plan.config.tile as f64 / mu.max(1.0);
    let rows = ((1.5 * mean / 32.0).ceil() as u32).max(1) * 32;
    (rows < rows_max).then_some(rows)
}

/// Workgroups per compute unit the tuner tries for the stream variant's grid (on an H100 at
/// 500k × 1,024 five and six a unit beat four by 9%).
const TUNE_STREAM_GRIDS: [u32; 5] = [2, 4, 5, 6, 8];

/// The stream variant's (workgroup size, entries per invocation) the tuner tries (1,024
/// invocations: two workgroups fill an SM where its 48 KiB hold two copies of w).
const TUNE_STREAM: [(u32, u32); 7] = [
    (128, 4),
    (128, 8),
    (256, 4),
    (256, 8),
    (512, 4),
    (512, 8),
    (1024, 4),
];

/// The wide-vector row pipeline the tuner tries on sparse X: (VS, workgroup size, regs).
const WIDE_PIPELINE: (u32, u32, [u32; 2]) = (32, 1024, [1, 2]);

/// Rows in flight per vector the tuner tries beside 1 (dense `fused`).
const TUNE_ROWS_IN_FLIGHT: [u32; 2] = [2, 4];

/// Entries per lane in registers the tuner tries (sparse `fused`).
const TUNE_REGS: [u32; 2] = [2, 4];

/// Hot columns per vector's copy the tuner tries (sparse, w in workgroup memory).
const HOT_COPIES: [u32; 2] = [16, 64];
