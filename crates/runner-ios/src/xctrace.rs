//! Energy from an Instruments recording: `xcrun xctrace record --template
//! 'Power Profiler' --device UDID --attach BUNDLE --time-limit Ns --output
//! X.trace`, then `xcrun xctrace export --input X.trace --xpath
//! '/trace-toc/run[@number="1"]/data/table[@schema="SCHEMA"]'`, which
//! prints one table as XML. The power over the run's window is integrated
//! and the idle power measured just before is taken off.
//!
//! The XML is xctrace's generic table export (the same for every
//! instrument; described from real exports in
//! sundresh/WindowsProfilingTools, `ProfileAnalyzer/Docs/InstrumentsTraceXML.md`):
//! `<trace-query-result><node><schema name=...><col><mnemonic/><name/>
//! <engineering-type/></col>...</schema><row>...</row>...</node>`. Each row
//! holds one element per column, in the schema's order; an element is the
//! value (its text, with a human-readable `fmt` attribute such as `1.25 W`),
//! or `ref="N"` to an earlier element with `id="N"`, or `<sentinel/>` for
//! none.
//!
//! No Power Profiler export was found in public, so its table and column
//! names are not assumed: the power column is the one whose values' `fmt`
//! carries a power unit (W, mW, µW), or the one the caller names; the time
//! column is the first whose engineering type ends in `-time` (nanoseconds
//! from the start of the recording).

use std::collections::HashMap;

use crate::export::ExportError;

/// One column of an exported table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// `time`, `power`: what `--power-column` names.
    pub mnemonic: String,
    /// `Sample Time`.
    pub name: String,
    /// `sample-time`.
    pub engineering_type: String,
}

/// A value in a row: its raw text and its human-readable form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// The element's text (a number for numeric types).
    pub text: String,
    /// Its `fmt` attribute (`1.25 W`, `00:01.250.000`).
    pub fmt: Option<String>,
}

/// A row, where it was in the file, and its cells (None: a sentinel).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// 1-based line of the `<row>`.
    pub line: usize,
    /// One per column.
    pub cells: Vec<Option<Cell>>,
}

/// One exported table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The schema's name.
    pub schema: String,
    /// Its columns.
    pub columns: Vec<Column>,
    /// Its rows.
    pub rows: Vec<Row>,
}

fn child_text(n: roxmltree::Node<'_, '_>, tag: &str) -> String {
    n.children().find(|c| c.has_tag_name(tag)).and_then(|c| c.text()).unwrap_or_default().trim().to_string()
}

/// Read `xctrace export --xpath` output (one table); `file` names it in
/// errors.
pub fn parse(file: &str, text: &str) -> Result<Table, ExportError> {
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let p = e.pos();
        let hint = if matches!(e, roxmltree::Error::UnexpectedEndOfStream) { " (truncated?)" } else { "" };
        ExportError::new(file, "", format!("not well-formed XML{hint}: {e}")).at(p.row as usize, p.col as usize)
    })?;
    let pos = |n: roxmltree::Node<'_, '_>| doc.text_pos_at(n.range().start);
    let located = |n: roxmltree::Node<'_, '_>, key: &str, message: String| {
        let p = pos(n);
        ExportError::new(file, key, message).at(p.row as usize, p.col as usize)
    };
    let root = doc.root_element();
    if !root.has_tag_name("trace-query-result") {
        let hint = if root.has_tag_name("trace-toc") {
            ": this is the table of contents (--toc); export one table with --xpath"
        } else {
            ""
        };
        return Err(located(
            root,
            "",
            format!("the root is <{}>, not xctrace's <trace-query-result>{hint}", root.tag_name().name()),
        ));
    }
    let node = root
        .children()
        .find(|n| n.has_tag_name("node"))
        .ok_or_else(|| located(root, "node", "no <node>: the xpath matched no table".into()))?;
    let schema = node
        .children()
        .find(|n| n.has_tag_name("schema"))
        .ok_or_else(|| located(node, "schema", "the table has no <schema>".into()))?;
    let columns: Vec<Column> = schema
        .children()
        .filter(|c| c.has_tag_name("col"))
        .map(|c| Column {
            mnemonic: child_text(c, "mnemonic"),
            name: child_text(c, "name"),
            engineering_type: child_text(c, "engineering-type"),
        })
        .collect();
    if columns.is_empty() {
        return Err(located(schema, "schema", "the schema has no columns".into()));
    }
    // Every element with an id, for the refs that follow it.
    let mut ids: HashMap<&str, Cell> = HashMap::new();
    let mut rows = Vec::new();
    for row in node.children().filter(|n| n.has_tag_name("row")) {
        let mut cells = Vec::new();
        for e in row.children().filter(|n| n.is_element()) {
            for d in e.descendants().filter(|d| d.is_element()) {
                if let Some(id) = d.attribute("id") {
                    let cell = Cell {
                        text: d.text().unwrap_or_default().trim().to_string(),
                        fmt: d.attribute("fmt").map(str::to_string),
                    };
                    ids.insert(id, cell);
                }
            }
            let cell = if e.has_tag_name("sentinel") {
                None
            } else if let Some(r) = e.attribute("ref") {
                Some(ids.get(r).cloned().ok_or_else(|| {
                    located(e, &format!("ref={r}"), "refers to no earlier element with that id".into())
                })?)
            } else {
                Some(Cell {
                    text: e.text().unwrap_or_default().trim().to_string(),
                    fmt: e.attribute("fmt").map(str::to_string),
                })
            };
            cells.push(cell);
        }
        if cells.len() != columns.len() {
            return Err(located(
                row,
                "row",
                format!("{} values for the schema's {} columns", cells.len(), columns.len()),
            ));
        }
        rows.push(Row { line: pos(row).row as usize, cells });
    }
    Ok(Table { schema: schema.attribute("name").unwrap_or_default().to_string(), columns, rows })
}

/// Watts per unit of a power `fmt` (`1.25 W`, `850 mW`), and the number.
fn watts(fmt: &str) -> Option<f64> {
    let fmt = fmt.trim().replace(',', "");
    let (number, unit) = fmt.split_once(char::is_whitespace)?;
    let scale = match unit.trim() {
        "W" => 1.0,
        "mW" => 1e-3,
        "µW" | "uW" => 1e-6,
        "kW" => 1e3,
        _ => return None,
    };
    number.parse::<f64>().ok().map(|v| v * scale)
}

/// A window of the recording, in seconds from its start.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Start, s.
    pub start_s: f64,
    /// End, s.
    pub end_s: f64,
}

/// The energy of a window, net of the idle power.
#[derive(Debug, Clone, PartialEq)]
pub struct PowerEnergy {
    /// The power column used.
    pub column: String,
    /// Joules over the run's window, net of idle.
    pub net_j: f64,
    /// Joules over the run's window, idle included.
    pub gross_j: f64,
    /// The idle power, W.
    pub idle_w: f64,
    /// Samples inside the run's window.
    pub samples: usize,
    /// The median spacing of samples, s: the method's time resolution.
    pub resolution_s: f64,
}

impl Table {
    /// The power samples: (seconds from the start, watts), in time order.
    /// `column` names the power column's mnemonic; None: the one column
    /// whose values carry a power unit.
    pub fn power(&self, file: &str, column: Option<&str>) -> Result<(String, Vec<(f64, f64)>), ExportError> {
        let time =
            self.columns.iter().position(|c| c.engineering_type.ends_with("-time")).ok_or_else(|| {
                ExportError::new(file, "schema", format!("table `{}` has no time column", self.schema))
            })?;
        let is_power = |i: usize| {
            self.rows.iter().filter_map(|r| r.cells[i].as_ref()).any(|c| c.fmt.as_deref().and_then(watts).is_some())
        };
        let p = match column {
            Some(name) => self.columns.iter().position(|c| c.mnemonic == name).ok_or_else(|| {
                let have: Vec<&str> = self.columns.iter().map(|c| c.mnemonic.as_str()).collect();
                ExportError::new(
                    file,
                    name,
                    format!("no such column in `{}` (it has {})", self.schema, have.join(", ")),
                )
            })?,
            None => {
                let found: Vec<usize> = (0..self.columns.len()).filter(|i| is_power(*i)).collect();
                match found.as_slice() {
                    [one] => *one,
                    [] => {
                        return Err(ExportError::new(
                            file,
                            "schema",
                            format!(
                            "no column of `{}` carries a power (W, mW, µW): export the Power Profiler's power table",
                            self.schema
                        ),
                        ))
                    }
                    many => {
                        let names: Vec<&str> = many.iter().map(|i| self.columns[*i].mnemonic.as_str()).collect();
                        return Err(ExportError::new(
                            file,
                            "schema",
                            format!("several power columns ({}): name one", names.join(", ")),
                        ));
                    }
                }
            }
        };
        let mnemonic = self.columns[p].mnemonic.clone();
        let mut out = Vec::with_capacity(self.rows.len());
        for row in &self.rows {
            let (Some(t), Some(w)) = (&row.cells[time], &row.cells[p]) else { continue };
            let at = |m: String| ExportError::new(file, &mnemonic, m).at(row.line, 1);
            let t_ns: f64 = t.text.parse().map_err(|_| at(format!("a time of `{}`, not nanoseconds", t.text)))?;
            let fmt = w.fmt.as_deref().unwrap_or_default();
            let watt = watts(fmt).ok_or_else(|| at(format!("a power of `{fmt}`, not W, mW or µW")))?;
            if !watt.is_finite() || watt < 0.0 {
                return Err(at(format!("a power of {watt} W")));
            }
            out.push((t_ns * 1e-9, watt));
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        Ok((mnemonic, out))
    }
}

/// The integral of a step series (each sample holds until the next) over
/// a window, and the samples in it.
fn integral(samples: &[(f64, f64)], w: Window) -> (f64, usize) {
    let mut joules = 0.0;
    let mut n = 0;
    for (i, &(t, p)) in samples.iter().enumerate() {
        let next = samples.get(i + 1).map_or(t, |s| s.0);
        let (a, b) = (t.max(w.start_s), next.min(w.end_s));
        if b > a {
            joules += p * (b - a);
        }
        if t >= w.start_s && t < w.end_s {
            n += 1;
        }
    }
    (joules, n)
}

/// The run's energy: the power integrated over `run`, less the mean power
/// over `idle` (measured just before) times the run's length.
pub fn energy(
    file: &str,
    column: &str,
    samples: &[(f64, f64)],
    run: Window,
    idle: Window,
) -> Result<PowerEnergy, ExportError> {
    let covered =
        |w: Window| samples.first().is_some_and(|f| f.0 <= w.start_s) && samples.last().is_some_and(|l| l.0 >= w.end_s);
    for (what, w) in [("the run's window", run), ("the idle window", idle)] {
        if w.start_s.is_nan() || w.end_s.is_nan() || w.end_s <= w.start_s {
            return Err(ExportError::new(file, what, format!("{}..{} s is empty", w.start_s, w.end_s)));
        }
        if !covered(w) {
            let span = samples.first().zip(samples.last()).map(|(a, b)| format!("{:.3}..{:.3} s", a.0, b.0));
            return Err(ExportError::new(
                file,
                what,
                format!(
                    "{:.3}..{:.3} s is not inside the recording's samples ({})",
                    w.start_s,
                    w.end_s,
                    span.unwrap_or_else(|| "none".into())
                ),
            ));
        }
    }
    let (gross, n) = integral(samples, run);
    let (idle_j, _) = integral(samples, idle);
    let idle_w = idle_j / (idle.end_s - idle.start_s);
    let mut gaps: Vec<f64> = samples.windows(2).map(|p| p[1].0 - p[0].0).filter(|d| *d > 0.0).collect();
    gaps.sort_by(f64::total_cmp);
    let resolution_s = gaps.get(gaps.len() / 2).copied().unwrap_or(f64::NAN);
    Ok(PowerEnergy {
        column: column.to_string(),
        net_j: gross - idle_w * (run.end_s - run.start_s),
        gross_j: gross,
        idle_w,
        samples: n,
        resolution_s,
    })
}

/// The schemas of the first run's tables in `xctrace export --toc` output:
/// the tables one `--xpath` export each can fetch.
pub fn toc_schemas(file: &str, text: &str) -> Result<Vec<String>, ExportError> {
    let doc = roxmltree::Document::parse(text).map_err(|e| {
        let p = e.pos();
        ExportError::new(file, "", format!("not well-formed XML: {e}")).at(p.row as usize, p.col as usize)
    })?;
    let root = doc.root_element();
    if !root.has_tag_name("trace-toc") {
        return Err(ExportError::new(
            file,
            "",
            format!("the root is <{}>, not xctrace's <trace-toc>", root.tag_name().name()),
        ));
    }
    let run = root
        .children()
        .find(|n| n.has_tag_name("run"))
        .ok_or_else(|| ExportError::new(file, "run", "the trace has no run: the recording held nothing"))?;
    Ok(run
        .descendants()
        .filter(|n| n.has_tag_name("table"))
        .filter_map(|t| t.attribute("schema").map(str::to_string))
        .collect())
}
