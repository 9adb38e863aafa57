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
    calibration: String,
    points: usize,
    fit: Vec<String>,
    facts: Vec<Entry>,
    model: Vec<Entry>,
    /// Other keys taken whole from the parent (`transport`, `budgets`).
    inherited: Vec<String>,
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
    Ok(Code::Ok)
}
