//! `pocketbench devices show ID`: one profile whole, each fact and
//! parameter with its source, and for a profile based on another, what it
//! took from it.

use clap::Args;
use pocketbench::device::{Device, Devices};
use serde::Serialize;

use super::Code;

/// Arguments of `devices show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Device id.
    #[arg(value_name = "ID")]
    pub id: String,
    /// Print JSON.
    #[arg(long)]
    pub json: bool,
}

/// One fact or parameter.
#[derive(Serialize)]
struct Entry {
    key: String,
    value: String,
    source: String,
    /// Taken from the profile it is based on.
    inherited: bool,
}

#[derive(Serialize)]
struct Parent {
    id: String,
    origin: String,
    /// Its calibration points taken.
    points_inherited: usize,
    /// Why its points were left with it.
    points_left: Option<String>,
}

#[derive(Serialize)]
struct Shown {
    id: String,
    name: String,
    origin: String,
    based_on: Option<Parent>,
    engine: String,
    engine_class: String,
    engine_class_label: String,
    calibration: String,
    points: usize,
    fit: Vec<String>,
    facts: Vec<Entry>,
    model: Vec<Entry>,
    /// Other keys taken whole from the parent (`transport`, `budgets`).
    inherited: Vec<String>,
    /// Its published points, counted against issue 44's goal.
    published: pocketbench::calibrate::published::Coverage,
    /// Every calibration point, with its class and citation.
    calibration_points: Vec<ShownPoint>,
    /// Its other engine classes and what their points make of them.
    classes: Vec<pocketbench::calibrate::classes::ClassFit>,
    /// What its predictions' 90% intervals rest on.
    intervals: pocketbench::interval::Basis,
}

#[derive(Serialize)]
struct ShownPoint {
    index: usize,
    model: String,
    class: String,
    held_out: bool,
    figures: String,
    citation: Option<pocketbench::device::Citation>,
    ran_on: Option<pocketbench::device::RanOn>,
    unstated: Vec<String>,
}

fn shown_point(p: &pocketbench::device::CalPoint) -> ShownPoint {
    let figures = [
        p.decode_tok_s.map(|v| format!("decode {v} tok/s")),
        p.prefill_tok_s.map(|v| format!("prefill {v} tok/s")),
        p.peak_memory.map(|v| format!("peak memory {:.0} MB", v / 1e6)),
        p.package.map(|v| format!("package {:.0} MB", v / 1e6)),
        p.energy_j.map(|v| format!("energy {v} J")),
    ];
    ShownPoint {
        index: p.index,
        model: p.label.clone(),
        class: p.class.clone(),
        held_out: p.holdout,
        figures: figures.into_iter().flatten().collect::<Vec<_>>().join(", "),
        citation: p.citation.clone(),
        ran_on: p.ran_on.clone(),
        unstated: p.unstated.iter().map(|u| u.key().to_string()).collect(),
    }
}

fn entries(d: &Device, table: &toml::Table, section: &str) -> Vec<Entry> {
    let Some(toml::Value::Table(t)) = table.get(section) else { return Vec::new() };
    let inherited = |key: &str| d.based_on().is_some_and(|b| b.inherits(key));
    t.iter()
        .filter_map(|(k, v)| {
            let v = v.as_table()?;
            let key = format!("{section}.{k}");
            let value = match v.get("value") {
                Some(x) => x.as_str().map_or_else(|| x.to_string(), str::to_string),
                // A battery: its capacity, voltage or energy.
                None => v
                    .iter()
                    .filter(|(k, _)| *k != "source")
                    .map(|(k, x)| format!("{k} {}", x.as_str().map_or_else(|| x.to_string(), str::to_string)))
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            let source = v.get("source").and_then(|s| s.as_str()).unwrap_or_default().to_string();
            Some(Entry { inherited: inherited(&key), key, value, source })
        })
        .collect()
}

fn shown(d: &Device) -> pocketbench::Result<Shown> {
    let table = toml::Table::try_from(d.profile()).map_err(|e| pocketbench::Error::Output(std::io::Error::other(e)))?;
    let p = d.profile();
    Ok(Shown {
        id: d.id().to_string(),
        name: p.device.name.clone(),
        origin: d.origin().to_string(),
        based_on: d.based_on().map(|b| Parent {
            id: b.parent.clone(),
            origin: b.parent_origin.clone(),
            points_inherited: b.points,
            points_left: b.points_left.clone(),
        }),
        engine: p.engine.name.clone(),
        engine_class: p.engine.class().to_string(),
        engine_class_label: d.class_label(),
        calibration: d.calibration_label(),
        points: d.points().len(),
        fit: p.model.fit.iter().map(|f| f.key().to_string()).collect(),
        facts: entries(d, &table, "facts"),
        model: entries(d, &table, "model"),
        inherited: d
            .based_on()
            .map(|b| {
                b.inherited
                    .iter()
                    .filter(|k| !["facts", "model"].iter().any(|s| *k == s || k.starts_with(&format!("{s}."))))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default(),
        published: pocketbench::calibrate::published::coverage(d),
        calibration_points: {
            let mut all: Vec<ShownPoint> = d.points().iter().chain(d.class_points()).map(shown_point).collect();
            all.sort_by_key(|p| p.index);
            all
        },
        classes: pocketbench::calibrate::classes::classes(d),
        intervals: pocketbench::interval::basis(d).clone(),
    })
}

/// Run `devices show`.
pub fn run(a: &ShowArgs, devices: &Devices) -> pocketbench::Result<Code> {
    let s = shown(devices.get(&a.id)?)?;
    if a.json {
        outln!("{}", super::pretty(&s)?);
        return Ok(Code::Ok);
    }
    outln!("{}: {}", s.id, s.name);
    outln!("  profile      {}", s.origin);
    if let Some(b) = &s.based_on {
        outln!("  based on     `{}` ({}): every entry marked * below is its", b.id, b.origin);
        match &b.points_left {
            Some(why) => outln!("               its calibration points are not taken ({why})"),
            None => outln!("               {} of its calibration points taken", b.points_inherited),
        }
        if !s.inherited.is_empty() {
            outln!("               also taken: {}", s.inherited.join(", "));
        }
    }
    outln!("  engine       {} (class {})", s.engine, s.engine_class);
    outln!("  calibration  {}", s.calibration);
    outln!("  fitted       {}", if s.fit.is_empty() { "nothing".into() } else { s.fit.join(", ") });
    for (title, list) in [("facts", &s.facts), ("model", &s.model)] {
        outln!("  {title}");
        let w = list.iter().fold(0, |w, e| w.max(e.key.len() - title.len() - 1));
        let wv = list.iter().fold(0, |w, e| w.max(e.value.len()));
        for e in list {
            outln!(
                "  {} {:<w$}  {:<wv$}  {}",
                if e.inherited { '*' } else { ' ' },
                &e.key[title.len() + 1..],
                e.value,
                e.source
            );
        }
    }
    if let Some(w) = devices.get(&a.id)?.warnings() {
        for line in w.to_string().lines() {
            outln!("  warning      {line}");
        }
    }
    outln!("  predictions  {}", s.intervals.describe());
    match s.published.points {
        0 => outln!("  points       {} calibration point(s), none published", s.calibration_points.len()),
        _ => outln!("  points       {}", s.published.describe()),
    }
    for p in &s.calibration_points {
        let mut notes = vec![p.class.clone()];
        if p.held_out {
            notes.push("held out".into());
        }
        if let Some(r) = &p.ran_on {
            notes.push(format!(
                "ran on: {} ({}, {})",
                r.device,
                r.chip,
                if r.relation == pocketbench::device::ChipRelation::SameChip { "same chip" } else { "nearest chip" }
            ));
        }
        if !p.unstated.is_empty() {
            notes.push(format!("not stated: {}", p.unstated.join(", ")));
        }
        outln!("    [{}] {}: {} ({})", p.index, p.model, p.figures, notes.join("; "));
        if let Some(c) = &p.citation {
            outln!("        {}, {}{}", c.place, c.date, c.url.as_ref().map_or(String::new(), |u| format!(", {u}")));
        }
    }
    if !s.classes.is_empty() {
        outln!("  classes      {} (the profile's own)", s.engine_class_label);
        for c in &s.classes {
            outln!("               {}", c.describe(&s.engine_class_label));
        }
    }
    Ok(Code::Ok)
}
