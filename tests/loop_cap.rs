//! The device's loop cap (`gpu::loop_cap`): on a software device (lavapipe) the probe finds a
//! cap below its trip count, and the cap it reports is the device's own (a second probe
//! agrees); GPUs are not probed.

mod common;

use std::time::Instant;

use wgsparse::gpu::loop_cap;

#[test]
fn a_software_device_reports_its_loop_cap_and_a_gpu_none() {
    let gpu = common::gpu();
    let caps = &gpu.caps;
    if !loop_cap::probed(&caps.device_type) {
        assert_eq!(caps.loop_cap, None, "{} was not probed", caps.adapter_name);
        return;
    }
    let start = Instant::now();
    let again = loop_cap::probe(gpu).unwrap();
    let ms = start.elapsed().as_secs_f64() * 1e3;
    eprintln!(
        "{}: loop cap {:?}, probe {ms:.2} ms (pipeline cached)",
        caps.adapter_name, caps.loop_cap
    );
    assert_eq!(again, caps.loop_cap, "two probes disagree");
    if caps.adapter_name.to_lowercase().contains("llvmpipe") {
        let cap = caps
            .loop_cap
            .expect("llvmpipe ends loops early: the probe must see it");
        assert!(
            (1_000..loop_cap::PROBE_TRIPS).contains(&cap),
            "implausible cap {cap}"
        );
    }
}
