//! `wgsparse mf predict`: ratings of (user, item) pairs from a saved model, with the RMSE
//! over the pairs that carry a rating.

use std::path::Path;
use std::process::ExitCode;

use serde_json::json;

use wgsparse::mf::Model;
use wgsparse::{Error, Result};

pub(super) fn predict(path: &Path, libmf: bool, pairs: &Path, as_json: bool) -> Result<ExitCode> {
    let model = if libmf {
        Model::load_libmf(path)?
    } else {
        Model::load(path)?
    };
    let index = |ids: &Option<Vec<String>>| {
        ids.as_ref().map(|v| {
            v.iter()
                .enumerate()
                .map(|(i, s)| (s.clone(), i as u32))
                .collect::<std::collections::HashMap<_, _>>()
        })
    };
    let (users, items) = (index(&model.user_ids), index(&model.item_ids));
    let text = std::fs::read_to_string(pairs).map_err(|e| Error::io(pairs, e))?;
    let mut rows = vec![];
    let (mut sse, mut rated) = (0f64, 0usize);
    for (n, line) in text.lines().enumerate() {
        let ln = n as u64 + 1;
        let f: Vec<&str> = line
            .split([' ', '\t', ','])
            .filter(|s| !s.is_empty())
            .collect();
        if f.is_empty() || f[0].starts_with('#') {
            continue;
        }
        if !(2..=4).contains(&f.len()) {
            return Err(Error::parse(pairs, ln, "expected `user item [rating]`"));
        }
        let lookup = |map: &Option<std::collections::HashMap<String, u32>>, s: &str, what| {
            match map {
                Some(m) => m.get(s).copied(),
                None => s.parse::<u32>().ok(),
            }
            .ok_or_else(|| Error::parse(pairs, ln, format!("{what} {s:?} is not in the model")))
        };
        let (u, i) = (lookup(&users, f[0], "user")?, lookup(&items, f[1], "item")?);
        let p = model
            .predict(u, i)
            .map_err(|e| Error::parse(pairs, ln, e.to_string()))?;
        if let Some(r) = f.get(2) {
            let r: f32 = r
                .parse()
                .ok()
                .filter(|r: &f32| r.is_finite())
                .ok_or_else(|| Error::parse(pairs, ln, format!("rating {r:?} is not a number")))?;
            sse += (r as f64 - p as f64).powi(2);
            rated += 1;
        }
        rows.push((f[0].to_string(), f[1].to_string(), p));
    }
    let rmse = (rated > 0).then(|| (sse / rated as f64).sqrt());
    if as_json {
        let preds: Vec<_> = rows
            .iter()
            .map(|(u, i, p)| json!({"user": u, "item": i, "prediction": p}))
            .collect();
        println!("{}", json!({ "predictions": preds, "rmse": rmse }));
    } else {
        for (u, i, p) in &rows {
            println!("{u}\t{i}\t{p}");
        }
        if let Some(r) = rmse {
            eprintln!("RMSE over {rated} rated pairs: {r:.4}");
        }
    }
    Ok(ExitCode::SUCCESS)
}
