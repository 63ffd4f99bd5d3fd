//! The device commands: `info` (the adapter, its capabilities, limits and the residency the
//! launch models use), `roofline` (the denominators of every report) and `calibrate` (the
//! residency, measured and stored).

use std::process::ExitCode;

use serde_json::json;

use super::table;
use wgsparse::{report, Gpu, Result};

/// `wgsparse roofline`'s options.
#[derive(clap::Args)]
pub(super) struct RooflineArgs {
    /// MiB copied each way (capped by the device's binding limit).
    #[arg(long, default_value_t = 1024)]
    mib: u64,
    /// Timed repetitions.
    #[arg(long, default_value_t = 20)]
    reps: usize,
    /// Operations per scatter run: atomic adds and plain loads at random words of a 4 MiB
    /// array and of one of `--mib` MiB, and of a workgroup's 16 KiB and 1 KiB arrays (0
    /// skips the scatter rows) [default: 2^26, or 2^22 on a software (CPU) adapter].
    #[arg(long)]
    scatter_ops: Option<u32>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// `wgsparse calibrate`'s options.
#[derive(clap::Args)]
pub(super) struct CalibrateArgs {
    /// Store the result for this adapter and driver, for the launch models to take from now
    /// on (on an H100 the fused pattern's `auto` picked slower plans with it: BENCHMARKS.md,
    /// twenty-second measurements).
    #[arg(long)]
    save: bool,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `wgsparse info`.
pub(super) fn info(as_json: bool) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let c = &gpu.caps;
    let (residency, source) = wgsparse::gpu::Residency::with_source(c);
    if as_json {
        println!(
            "{}",
            json!({ "caps": c, "residency": residency, "residency_source": source })
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = table(&["property", "value"]);
    let yes = |b: bool| if b { "yes" } else { "no" }.to_string();
    let rows: Vec<(&str, String)> = vec![
        ("adapter", c.adapter_name.clone()),
        (
            "backend / type",
            format!("{} / {}", c.backend, c.device_type),
        ),
        ("driver", c.driver.clone()),
        ("subgroups", yes(c.subgroups)),
        (
            "subgroup size",
            format!("{}–{}", c.subgroup_min_size, c.subgroup_max_size),
        ),
        ("f16 (SHADER_F16)", yes(c.f16)),
        ("f32 atomics", yes(c.f32_atomics)),
        (
            "timestamps (in passes)",
            format!(
                "{} ({})",
                yes(c.timestamps),
                yes(c.timestamps_inside_passes)
            ),
        ),
        (
            "workgroup storage",
            format!("{} B", c.max_workgroup_storage_bytes),
        ),
        (
            "invocations / workgroup",
            c.max_invocations_per_workgroup.to_string(),
        ),
        (
            "workgroups / dimension",
            c.max_workgroups_per_dimension.to_string(),
        ),
        (
            "storage binding",
            format!(
                "{} B, offsets in steps of {} B",
                c.max_storage_binding_bytes, c.storage_offset_alignment
            ),
        ),
        ("buffer", format!("{} B", c.max_buffer_bytes)),
        (
            "L2 assumed by models",
            format!("{} B (WGSPARSE_L2_BYTES)", c.l2_bytes),
        ),
        (
            "L1 (per compute unit)",
            format!("{} B (WGSPARSE_L1_BYTES)", c.l1_bytes),
        ),
        (
            "loop cap (per invocation)",
            c.loop_cap.map_or("none".into(), |k| {
                format!("{k} iterations (probed; loops end silently beyond)")
            }),
        ),
        (
            "residency (launch models)",
            format!(
                "{} units of {} invocations, {} B (+ {} B a workgroup), {} workgroups ({})",
                residency.units,
                residency.threads_per_unit,
                residency.shared_per_unit,
                residency.shared_reserved,
                residency.groups_per_unit,
                match source {
                    wgsparse::gpu::ResidencySource::Default =>
                        "defaults; `wgsparse calibrate` measures",
                    wgsparse::gpu::ResidencySource::Calibrated => "calibrated",
                    wgsparse::gpu::ResidencySource::Environment => "environment overrides",
                }
            ),
        ),
    ];
    for (k, v) in rows {
        t.add_row(vec![k.to_string(), v]);
    }
    println!("{t}");
    Ok(ExitCode::SUCCESS)
}

/// Runs `wgsparse calibrate`.
pub(super) fn calibrate(a: CalibrateArgs) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let before = wgsparse::gpu::Residency::with_source(&gpu.caps);
    let c = wgsparse::gpu::calibrate::calibrate(&gpu)?;
    let saved = if a.save { Some(c.save(&gpu)?) } else { None };
    if a.json {
        println!(
            "{}",
            json!({ "calibration": c, "before": before.0, "before_source": before.1,
                    "saved": saved })
        );
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = table(&["invocations", "workgroup memory", "resident workgroups"]);
    for p in &c.probes {
        t.add_row(vec![
            p.workgroup.to_string(),
            format!("{} B", p.shared),
            p.peak.to_string(),
        ]);
    }
    println!("residency probes on {} ({})\n{t}", c.adapter, c.driver);
    let r = c.residency;
    println!(
        "{} units of {} invocations, {} B of workgroup memory ({} B set aside a workgroup) and \
         {} workgroups each",
        r.units, r.threads_per_unit, r.shared_per_unit, r.shared_reserved, r.groups_per_unit
    );
    match saved {
        Some(p) => println!("stored in {}", p.display()),
        None => println!("not stored (--save stores it)"),
    }
    Ok(ExitCode::SUCCESS)
}

/// Runs `wgsparse roofline`.
pub(super) fn roofline(a: RooflineArgs) -> Result<ExitCode> {
    let gpu = Gpu::new()?;
    let r = report::roofline::measure(&gpu, a.mib << 20, a.reps, 200)?;
    let ops = a.scatter_ops.unwrap_or(if gpu.caps.device_type == "Cpu" {
        1 << 22
    } else {
        1 << 26
    });
    let scatter = if ops > 0 {
        report::scatter::measure_suite(&gpu, a.mib << 20, ops, a.reps)?
    } else {
        Vec::new()
    };
    if a.json {
        println!("{}", json!({ "roofline": r, "scatter": scatter }));
        return Ok(ExitCode::SUCCESS);
    }
    let mut t = table(&[
        "adapter",
        "bytes moved",
        "copy GB/s (best)",
        "copy GB/s (median)",
        "read GB/s (best)",
        "read GB/s (median)",
        "µs / dispatch",
        "timing",
    ]);
    t.add_row(vec![
        r.adapter.clone(),
        r.bytes_moved.to_string(),
        format!("{:.1}", r.copy_gbps),
        format!("{:.1}", r.copy_gbps_median),
        format!("{:.1}", r.read_gbps),
        format!("{:.1}", r.read_gbps_median),
        format!("{:.2}", r.dispatch_us),
        r.timing.clone(),
    ]);
    println!("{t}");
    if !scatter.is_empty() {
        let mut t = table(&[
            "memory",
            "op",
            "target",
            "run",
            "G ops/s (best)",
            "G ops/s (median)",
        ]);
        for s in &scatter {
            let op = match (s.op.as_str(), s.native) {
                ("add", false) => "f32 add (compare-exchange)".to_string(),
                ("add", true) => "f32 add".to_string(),
                ("add-u32", _) => "u32 add".to_string(),
                (op, _) => op.to_string(),
            };
            let target = if s.target_bytes >= 1 << 20 {
                format!("{} MiB", s.target_bytes >> 20)
            } else {
                format!("{} KiB", s.target_bytes >> 10)
            };
            t.add_row(vec![
                s.memory.clone(),
                op,
                target,
                s.run.to_string(),
                format!("{:.1}", s.gops),
                format!("{:.1}", s.gops_median),
            ]);
        }
        println!("{t}");
    }
    Ok(ExitCode::SUCCESS)
}
