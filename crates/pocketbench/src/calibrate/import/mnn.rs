//! MNN's `llm_bench` outputs: its markdown table (the default, printed to
//! stdout) and its `-j FILE` JSON.
//!
//! The table's columns (`transformers/llm/engine/tools/llm_bench.cpp`,
//! `markdownPrinter`) are `model`, `modelSize`, `backend`, `threads`,
//! `precision` and the settings that vary, then either `test` and `t/s`
//! (`pp512`, `tg128`: one speed a row, "mean ± sd") or, with `-kv true`,
//! `llm_demo` and `speed(tok/s)` (`prompt=P<br>decode=G` and the prefill
//! and decode speeds, "mean ± sd<br>mean ± sd"). A `tg` test decodes after
//! a one-token context; a `ppP+tgG` row times both together and is refused.
//! The table records neither the build nor the CPU, and names the model by
//! its configuration's name only: the shape is given by hand (`--preset`,
//! `--shape`).

use std::path::Path;

use crate::external::mnn_llm_bench::{self, Kind};

use super::rows::{speed, At, ImportError, ModelRef, Row, Speeds, Spread};

/// The build, which MNN's outputs do not record.
const BUILD: &str = "MNN llm_bench (its output does not record the build)";

/// Every row of the table in `text`.
pub fn markdown_rows(file: &Path, text: &str) -> Result<Vec<Row>, ImportError> {
    let lines: Vec<(usize, &str)> = text.lines().enumerate().map(|(i, l)| (i + 1, l.trim())).collect();
    let Some(h) = lines.iter().position(|(_, l)| l.starts_with('|') && cells(l).iter().any(|c| c == "modelSize"))
    else {
        return Err(ImportError::file(file, "no MNN llm_bench table: no header row with a `modelSize` column"));
    };
    let header = cells(lines[h].1);
    let column = |name: &str| header.iter().position(|c| c == name);
    let (test, rate) = match (column("test"), column("t/s"), column("llm_demo"), column("speed(tok/s)")) {
        (Some(t), Some(r), _, _) => (t, r),
        (_, _, Some(t), Some(r)) => (t, r),
        _ => {
            return Err(ImportError::file(
                file,
                "the table has neither `test` and `t/s` nor `llm_demo` and `speed(tok/s)` columns",
            )
            .at_line(lines[h].0))
        }
    };
    let need = |name: &str| {
        column(name)
            .ok_or_else(|| ImportError::file(file, format!("the table has no `{name}` column")).at_line(lines[h].0))
    };
    let (model, size, backend, threads) = (need("model")?, need("modelSize")?, need("backend")?, need("threads")?);
    let body = lines[h + 1..].iter().skip_while(|(_, l)| l.starts_with("| -") || l.starts_with("|-"));
    let mut rows = Vec::new();
    for (line, l) in body.take_while(|(_, l)| l.starts_with('|')) {
        let at = At { file: file.to_path_buf(), row: rows.len() + 1, line: Some(*line) };
        let c = cells(l);
        let get = |i: usize, name: &str| {
            c.get(i).filter(|v| !v.is_empty()).cloned().ok_or_else(|| at.error(Some(name), "missing"))
        };
        let speeds = speeds(&at, &header[test], &get(test, &header[test])?, &header[rate], &get(rate, &header[rate])?)?;
        let threads_text = get(threads, "threads")?;
        let threads = threads_text
            .parse()
            .map_err(|_| at.error(Some("threads"), format!("`{threads_text}` is not a thread count")))?;
        let backend = get(backend, "backend")?;
        let settings = header
            .iter()
            .enumerate()
            .filter(|(_, name)| {
                !["model", "modelSize", "backend", "threads", "test", "t/s", "llm_demo", "speed(tok/s)"]
                    .contains(&name.as_str())
            })
            .filter_map(|(i, name)| c.get(i).map(|v| format!("{name} {v}")))
            .collect();
        rows.push(Row {
            speeds,
            reps: None,
            model: ModelRef {
                file: None,
                label: format!("{} ({})", get(model, "model")?, get(size, "modelSize")?),
                params: None,
                storage: None,
            },
            threads: Some(threads),
            build: Some(BUILD.into()),
            cpu: None,
            gpu: backend != "CPU",
            backend,
            settings,
            at,
        });
    }
    if rows.is_empty() {
        return Err(ImportError::file(file, "the MNN llm_bench table has no rows").at_line(lines[h].0));
    }
    Ok(rows)
}

fn cells(line: &str) -> Vec<String> {
    let inner = line.trim().trim_start_matches('|').trim_end_matches('|');
    inner.split('|').map(|c| c.trim().to_string()).collect()
}

/// "12.34 ± 0.56" (the sd is optional).
fn spread(at: &At, field: &str, text: &str) -> Result<Spread, ImportError> {
    let mut parts = text.split('±').map(str::trim);
    let bad = || at.error(Some(field), format!("`{text}` is not a speed (\"mean ± sd\")"));
    let mean: f64 = parts.next().and_then(|m| m.parse().ok()).ok_or_else(bad)?;
    let sd = match parts.next() {
        Some(s) => Some(s.parse().map_err(|_| bad())?),
        None => None,
    };
    Ok(Spread { mean: speed(at, field, mean)?, sd })
}

fn speeds(at: &At, test_field: &str, test: &str, rate_field: &str, rate: &str) -> Result<Speeds, ImportError> {
    let num = |s: &str| s.trim().parse::<u32>().ok();
    if test_field == "llm_demo" {
        // prompt=P<br>decode=G, then "A ± B<br>C ± D".
        let parts: Vec<&str> = test.split("<br>").collect();
        let value = |key: &str| parts.iter().find_map(|p| p.trim().strip_prefix(key).and_then(num));
        let (Some(prompt), Some(gen)) = (value("prompt="), value("decode=")) else {
            return Err(at.error(Some(test_field), format!("`{test}` is not `prompt=P<br>decode=G`")));
        };
        let speeds: Vec<&str> = rate.split("<br>").collect();
        let [p, d] = speeds.as_slice() else {
            return Err(at.error(Some(rate_field), format!("`{rate}` is not `prefill ± sd<br>decode ± sd`")));
        };
        return Ok(Speeds::Both {
            prompt,
            gen,
            prefill: spread(at, rate_field, p)?,
            decode: spread(at, rate_field, d)?,
        });
    }
    let r = spread(at, rate_field, rate)?;
    let pp = test.strip_prefix("pp");
    match (pp.and_then(|t| t.split_once("+tg")), pp.and_then(num), test.strip_prefix("tg").and_then(num)) {
        (Some((p, g)), _, _) => Err(at.error(
            Some(test_field),
            format!("pp{p}+tg{g} times the prompt and the decode together, and its one speed is neither: import a table with `-kv true` (its llm_demo rows time each), or its pp{p} and tg{g} tests"),
        )),
        (None, Some(prompt), _) => Ok(Speeds::Prefill { prompt, rate: r }),
        (None, None, Some(gen)) => Ok(Speeds::Decode { depth: 1, gen, rate: r }),
        _ => Err(at.error(Some(test_field), format!("`{test}` is not ppN, tgN or ppN+tgN"))),
    }
}

/// Every test of an `llm_bench -j` file.
pub fn json_rows(file: &Path, text: &str) -> Result<Vec<Row>, ImportError> {
    let report = mnn_llm_bench::parse(text)
        .map_err(|e| ImportError::file(file, format!("not MNN llm_bench -j output: {e}")).at_line(e.line().max(1)))?;
    let mut rows = Vec::new();
    for (i, t) in report.results.iter().enumerate() {
        let at = At { file: file.to_path_buf(), row: i + 1, line: None };
        let rate = |field: &str, v: Option<f64>| -> Result<Spread, ImportError> {
            let v = v.ok_or_else(|| at.error(Some(field), "missing"))?;
            Ok(Spread { mean: speed(&at, field, v)?, sd: None })
        };
        let speeds = match t.kind {
            Kind::Prefill => Speeds::Prefill { prompt: t.prompt_len, rate: rate("tps", t.tps)? },
            Kind::Decode => Speeds::Decode { depth: 1, gen: t.generate_len, rate: rate("tps", t.tps)? },
            Kind::PrefillAndDecode => Speeds::Both {
                prompt: t.prompt_len,
                gen: t.generate_len,
                prefill: rate("prefill_tps", t.prefill_tps)?,
                decode: rate("decode_tps", t.decode_tps)?,
            },
        };
        rows.push(Row {
            speeds,
            reps: None,
            model: ModelRef {
                file: None,
                label: format!("{} ({:.2} GiB)", report.model, report.model_size),
                params: None,
                storage: None,
            },
            threads: Some(report.threads),
            build: Some(BUILD.into()),
            cpu: None,
            gpu: report.backend != "CPU",
            backend: report.backend.clone(),
            settings: vec![format!("precision {}", report.precision), format!("memory {}", report.memory)],
            at,
        });
    }
    if rows.is_empty() {
        return Err(ImportError::file(file, "no tests in this MNN llm_bench -j output"));
    }
    Ok(rows)
}
