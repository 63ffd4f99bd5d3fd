//! The tiny shader preprocessor: `#import`, `#ifdef`/`#ifndef`/`#else`/`#endif`, and hoisting
//! of `enable` directives. Only what WGSL `override` constants cannot express goes through it
//! (element type, optional features, shared imports); everything numeric is an override.

use std::collections::BTreeSet;

use crate::gpu::shaders;
use crate::{Error, Result};

/// Expands shader `name` (e.g. `sddmm/naive`) with the given defines into plain WGSL.
pub fn preprocess(name: &str, defines: &[&str]) -> Result<String> {
    preprocess_with(name, defines, &[])
}

/// [`preprocess`] with extra sources: each `(name, source)` in `sources` stands for the
/// shader of that name (it replaces a file of the same name under `shaders/`), so a caller
/// can splice WGSL from outside the crate (e.g. a user-defined wide model) into a kernel.
pub fn preprocess_with(name: &str, defines: &[&str], sources: &[(&str, &str)]) -> Result<String> {
    let mut imported = BTreeSet::new();
    let mut enables = BTreeSet::new();
    let mut body = String::new();
    let ctx = Ctx { defines, sources };
    expand(name, &ctx, &mut imported, &mut enables, &mut body)?;
    let mut out = String::new();
    for e in &enables {
        out.push_str(e);
        out.push('\n');
    }
    out.push_str(&body);
    Ok(out)
}

fn err(name: &str, line: usize, message: impl Into<String>) -> Error {
    Error::Shader {
        kernel: name.to_string(),
        message: format!("line {}: {}", line + 1, message.into()),
    }
}

struct Ctx<'a> {
    defines: &'a [&'a str],
    sources: &'a [(&'a str, &'a str)],
}

fn expand(
    name: &str,
    ctx: &Ctx,
    imported: &mut BTreeSet<String>,
    enables: &mut BTreeSet<String>,
    out: &mut String,
) -> Result<()> {
    let defines = ctx.defines;
    let source = ctx
        .sources
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, s)| *s)
        .or_else(|| shaders::source(name))
        .ok_or_else(|| Error::Shader {
            kernel: name.to_string(),
            message: "no such shader in shaders/".into(),
        })?;
    // Each frame: (this branch is taken, an enclosing branch is taken, #else seen).
    let mut stack: Vec<(bool, bool, bool)> = Vec::new();
    let active = |stack: &[(bool, bool, bool)]| stack.iter().all(|&(on, _, _)| on);
    for (n, line) in source.lines().enumerate() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            let directive = words.next().unwrap_or("");
            let arg = words.next();
            match (directive, arg) {
                ("ifdef", Some(d)) | ("ifndef", Some(d)) => {
                    let outer = active(&stack);
                    let has = defines.contains(&d);
                    stack.push((has == (directive == "ifdef"), outer, false));
                }
                ("else", None) => match stack.last_mut() {
                    Some(frame) if !frame.2 => {
                        frame.0 = !frame.0;
                        frame.2 = true;
                    }
                    _ => return Err(err(name, n, "#else without #ifdef")),
                },
                ("endif", None) => {
                    stack
                        .pop()
                        .ok_or_else(|| err(name, n, "#endif without #ifdef"))?;
                }
                ("import", Some(module)) => {
                    if active(&stack) && imported.insert(module.to_string()) {
                        expand(module, ctx, imported, enables, out)?;
                    }
                }
                _ => return Err(err(name, n, format!("unknown directive `{t}`"))),
            }
            continue;
        }
        if !active(&stack) {
            continue;
        }
        if t.starts_with("enable ") {
            enables.insert(t.to_string());
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !stack.is_empty() {
        return Err(err(name, source.lines().count(), "missing #endif"));
    }
    Ok(())
}

/// The names used in `#ifdef`/`#ifndef` by shader `name` and everything it imports.
pub fn defines_used(name: &str) -> Result<BTreeSet<String>> {
    let mut seen = BTreeSet::new();
    let mut found = BTreeSet::new();
    let mut todo = vec![name.to_string()];
    while let Some(n) = todo.pop() {
        if !seen.insert(n.clone()) {
            continue;
        }
        let source = shaders::source(&n).ok_or_else(|| Error::Shader {
            kernel: n.clone(),
            message: "no such shader in shaders/".into(),
        })?;
        for line in source.lines() {
            let mut words = line.split_whitespace();
            match (words.next(), words.next()) {
                (Some("#ifdef") | Some("#ifndef"), Some(d)) => {
                    found.insert(d.to_string());
                }
                (Some("#import"), Some(m)) => todo.push(m.to_string()),
                _ => {}
            }
        }
    }
    Ok(found)
}

/// Parses and validates WGSL with naga (all capabilities), returning naga's annotated
/// message on failure.
pub fn validate(kernel: &str, wgsl: &str) -> Result<naga::Module> {
    validate_with_info(kernel, wgsl).map(|(module, _)| module)
}

/// [`validate`], also returning naga's validation results (what its backends write from).
pub fn validate_with_info(
    kernel: &str,
    wgsl: &str,
) -> Result<(naga::Module, naga::valid::ModuleInfo)> {
    let module = naga::front::wgsl::parse_str(wgsl).map_err(|e| Error::Shader {
        kernel: kernel.to_string(),
        message: e.emit_to_string_with_path(wgsl, kernel),
    })?;
    let info = naga::valid::Validator::new(
        naga::valid::ValidationFlags::all(),
        naga::valid::Capabilities::all(),
    )
    .validate(&module)
    .map_err(|e| Error::Shader {
        kernel: kernel.to_string(),
        message: e.emit_to_string_with_path(wgsl, kernel),
    })?;
    Ok((module, info))
}
