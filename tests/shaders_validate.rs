//! No GPU needed: every shader variant preprocesses and passes naga validation, and the
//! embedded table lists every .wgsl file on disk.

use std::collections::BTreeSet;
use std::path::Path;

use wgsparse::gpu::{preprocess, shaders};

fn wgsl_files(dir: &Path, prefix: &str, out: &mut BTreeSet<String>) {
    for entry in std::fs::read_dir(dir).expect("shaders/ is readable") {
        let path = entry.expect("dir entry").path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            wgsl_files(&path, &format!("{prefix}{name}/"), out);
        } else if let Some(stem) = name.strip_suffix(".wgsl") {
            out.insert(format!("{prefix}{stem}"));
        }
    }
}

#[test]
fn table_lists_every_shader_file() {
    let mut on_disk = BTreeSet::new();
    wgsl_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders"),
        "",
        &mut on_disk,
    );
    let table: BTreeSet<String> = shaders::ALL.iter().map(|(n, _)| n.to_string()).collect();
    assert_eq!(
        on_disk, table,
        "src/gpu/shaders.rs must list every file under shaders/"
    );
}

/// Define masks over n defines: up to 9 defines every combination; beyond, none, every one
/// and pair of them, and all of them but at most one (the pairs cover each define's
/// interplay with another), listed directly rather than filtered from all 2ⁿ.
fn masks(n: u32) -> Vec<u32> {
    if n <= 9 {
        return (0..(1u32 << n)).collect();
    }
    let all = (1u32 << n) - 1;
    let mut m = vec![0, all];
    for i in 0..n {
        m.push(1 << i);
        m.push(all & !(1 << i));
        for j in i + 1..n {
            m.push((1 << i) | (1 << j));
        }
    }
    m
}

#[test]
fn every_variant_validates() {
    let mut checked = 0;
    for name in shaders::kernels() {
        let defines: Vec<String> = preprocess::defines_used(name)
            .unwrap()
            .into_iter()
            .collect();
        assert!(defines.len() <= 31, "{name}: too many defines to enumerate");
        let n = defines.len() as u32;
        for mask in masks(n) {
            let on: Vec<&str> = defines
                .iter()
                .enumerate()
                .filter(|(i, _)| mask & (1 << i) != 0)
                .map(|(_, d)| d.as_str())
                .collect();
            let wgsl =
                preprocess::preprocess(name, &on).unwrap_or_else(|e| panic!("{name} {on:?}: {e}"));
            preprocess::validate(name, &wgsl).unwrap_or_else(|e| panic!("{name} {on:?}:\n{e}"));
            checked += 1;
        }
    }
    assert!(checked >= 12, "only {checked} variants checked");
}

#[test]
fn preprocessor_rejects_bad_directives() {
    // Unknown shader names and malformed nesting are errors, not panics.
    assert!(preprocess::preprocess("no/such", &[]).is_err());
    for (name, source) in shaders::ALL {
        // Every library expands on its own.
        if !source.contains("@compute") {
            preprocess::preprocess(name, &[]).unwrap();
        }
    }
}
