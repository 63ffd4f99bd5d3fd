//! The autotuner behind `auto`: times the fused kernel at the model's (VS, workgroup size)
//! and its neighbours on random full-pattern operands, keeps the fastest, and caches it per
//! adapter and shape bucket (`fused-tune.json`, see [`crate::gpu::cache`]); C always comes
//! from the model (Eq. 5) for the chosen VS and workgroup size.

use serde::{Deserialize, Serialize};

use crate::fused::bench::{measure, Operands};
use crate::fused::{Matrix, Options, Pattern, Plan, Variant};
use crate::gpu::{cache, Gpu};
use crate::Result;

const CACHE_FILE: &str = "fused-tune.json";

#[derive(Clone, Copy, Debug, Deserialize, Serialize)]
struct Tuned {
    vs: u32,
    workgroup: u32,
    tl: u32,
}

/// The cache key: adapter, kind and a shape bucket (log₂ of m, n and the stored entries).
fn key(gpu: &Gpu, x: Matrix) -> String {
    let lg = |v: usize| usize::BITS - v.max(1).leading_zeros();
    let (m, n) = x.shape();
    format!(
        "{}|{}|m{}|n{}|nnz{}",
        gpu.caps.adapter_name,
        if matches!(x, Matrix::Dense(_)) {
            "dense"
        } else {
            "sparse"
        },
        lg(m),
        lg(n),
        lg(x.nnz())
    )
}

/// A plan for `x`: with `options.variant == Auto` and no VS or workgroup size given, the
/// cached configuration for this adapter and shape bucket, or (first time) the fastest of
/// the candidates timed here; otherwise [`Plan::new`].
pub fn autotuned_plan(gpu: &Gpu, x: Matrix, options: &Options) -> Result<Plan> {
    let free = options.variant == Variant::Auto
        && options.vs.is_none()
        && options.workgroup.is_none()
        && options.tl.is_none();
    if !free {
        return Plan::new(gpu, x, options);
    }
    let with = |t: &Tuned| Options {
        variant: Variant::Fused,
        vs: Some(t.vs),
        workgroup: Some(t.workgroup),
        tl: matches!(x, Matrix::Dense(_)).then_some(t.tl),
        ..options.clone()
    };
    let k = key(gpu, x);
    let mut entries: std::collections::BTreeMap<String, Tuned> = cache::load_cache(CACHE_FILE);
    let model = Plan::new(gpu, x, options)?;
    if let Some(t) = entries.get(&k) {
        if let Ok(plan) = Plan::new_like(gpu, x, &with(t), &model) {
            return Ok(plan);
        }
    }
    let (m, n) = x.shape();
    let ops = Operands::random(gpu, m, n, Pattern::Full, 99)?;
    let mc = model.config;
    let mut best = (measure(gpu, &model, &ops, 5, None)?.ms, mc);
    let max_wg = gpu.caps.max_invocations_per_workgroup.min(1024);
    let vss = [mc.vs / 2, mc.vs, mc.vs * 2];
    let wgs = [
        mc.workgroup / 4,
        mc.workgroup / 2,
        mc.workgroup,
        mc.workgroup * 2,
    ];
    for vs in vss.into_iter().filter(|&v| v >= 1) {
        for wg in wgs
            .into_iter()
            .filter(|&w| (32..=max_wg).contains(&w) && w >= vs)
        {
            let tl = n.div_ceil(vs as usize).max(1) as u32;
            let Ok(plan) = Plan::new_like(
                gpu,
                x,
                &with(&Tuned {
                    vs,
                    workgroup: wg,
                    tl,
                }),
                &model,
            ) else {
                continue;
            };
            if plan.config == mc {
                continue;
            }
            let ms = measure(gpu, &plan, &ops, 5, None)?.ms;
            if ms < best.0 {
                best = (ms, plan.config);
            }
        }
    }
    let c = best.1;
    let t = Tuned {
        vs: c.vs,
        workgroup: c.workgroup,
        tl: c.tl,
    };
    entries.insert(k, t);
    cache::store_cache(CACHE_FILE, &entries)?;
    Plan::new_like(gpu, x, &with(&t), &model)
}
