//! `report.html`: one self-contained page (inline SVG charts drawn with
//! plotters, inline CSS, a few lines of inline JS, no fetch of any kind),
//! a pure function of the stored report. Every string that comes from a
//! sweep file, a profile, a scores file or a device is escaped.

mod charts;
mod compare;
mod scatter;
pub mod soak;
mod studies;

use std::fmt::Write;

use super::{Exporter, ReportError, SweepReport};
use crate::record::{Provenance, Record};
use crate::units::ParamCount;
use charts::Figure;

/// Rows of the results table at most; the rest are in results.jsonl.
pub const MAX_TABLE_ROWS: usize = 2_000;
pub use crate::markup::escape;

/// Writes `report.html`.
#[derive(Debug, Default, Clone, Copy)]
pub struct ReportHtml;

const CSS: &str = "
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1d1d1f;background:#fafafa}
main{max-width:1320px;margin:0 auto;padding:12px 16px 48px}
h1{font-size:1.5em;margin:.4em 0}h2{font-size:1.2em;margin:1.6em 0 .5em;border-bottom:1px solid #ddd}
h3{font-size:1em;margin:.2em 0}
.muted{color:#666}.warn{background:#fff4e5;border:1px solid #f0b35a;padding:8px 12px;border-radius:6px;margin:8px 0}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:12px}
.card,figure{background:#fff;border:1px solid #e3e3e3;border-radius:8px;padding:10px 12px;margin:0}
.grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,560px),1fr));gap:12px}
figure figcaption{font-size:.85em;color:#555}
svg.chart{width:100%;height:auto;display:block}svg.ci{vertical-align:middle}td.why{white-space:normal;min-width:320px}
.badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:.8em;font-weight:600;margin-right:4px}
.pass{background:#e3f5ea;color:#176b3a}.fail{background:#fde8e8;color:#a11d1d}.na{background:#eee;color:#555}
td.contended{background:#fff4e5}
table{border-collapse:collapse;font-size:.85em;width:100%;background:#fff}
th,td{border-bottom:1px solid #eee;padding:3px 6px;text-align:left;white-space:nowrap}
td.n,th.n{text-align:right}th{cursor:pointer;position:sticky;top:0;background:#f3f3f3}
.scroll{overflow:auto;max-height:70vh;border:1px solid #e3e3e3;border-radius:8px}
input[type=search]{width:min(100%,420px);padding:6px 8px;margin:6px 0;font-size:1em}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:.9em}dt{font-weight:600}dd{margin:0;word-break:break-word}
";

const JS: &str = "
(function(){
  var t=document.getElementById('results');
  if(t){
    var body=t.tBodies[0];
    Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){
      th.addEventListener('click',function(){
        var asc=th.dataset.dir!=='asc';th.dataset.dir=asc?'asc':'desc';
        var num=th.classList.contains('n');
        var rows=Array.prototype.slice.call(body.rows);
        rows.sort(function(a,b){
          var x=a.cells[i].dataset.v||a.cells[i].textContent,y=b.cells[i].dataset.v||b.cells[i].textContent;
          var c=num?(parseFloat(x)-parseFloat(y)):x.localeCompare(y);
          return asc?c:-c;
        });
        rows.forEach(function(r){body.appendChild(r);});
      });
    });
    var f=document.getElementById('filter');
    f.addEventListener('input',function(){
      var q=f.value.toLowerCase();
      Array.prototype.forEach.call(body.rows,function(r){
        r.style.display=r.textContent.toLowerCase().indexOf(q)<0?'none':'';
      });
    });
  }
  document.body.dataset.ready='1';
})();
";

fn badge(v: &crate::budget::Verdict, what: &str) -> String {
    use crate::budget::Status;
    let unsure = if v.certainty == Some(crate::budget::Certainty::Uncertain) { ", uncertain" } else { "" };
    match (v.status, v.margin) {
        (Status::Pass, Some(m)) => {
            format!("<span class=\"badge pass\">{what} pass {:+.0}%{unsure}</span>", m * 100.0)
        }
        (Status::Fail, Some(m)) => {
            format!("<span class=\"badge fail\">{what} FAIL {:+.0}%{unsure}</span>", m * 100.0)
        }
        _ => format!("<span class=\"badge na\">{what} n/a</span>"),
    }
}

fn figure_html(s: &mut String, f: &Figure) {
    let _ = write!(
        s,
        "<figure><h3>{}</h3>{}<figcaption>{}</figcaption></figure>",
        escape(&f.title),
        f.svg,
        escape(&f.note)
    );
}

fn record_line(r: &Record) -> String {
    format!(
        "{} ({}, {} params): {:.0} tok/s, {:.0} MB, time to first token {}, {}, capability {:.1}, {}",
        r.config_name,
        r.config_id,
        ParamCount(r.params_total as f64),
        r.decode_tok_s,
        r.peak_mem_increase_mb,
        super::ttft_text(r),
        super::energy_text(r),
        r.capability,
        r.provenance_label()
    )
}

fn summary_cards(s: &mut String, report: &SweepReport) {
    s.push_str("<div class=\"cards\">");
    for d in &report.outcome.devices {
        let recs: Vec<&Record> = report.outcome.results.iter().filter(|r| r.device == d.device).collect();
        let measured = recs.iter().filter(|r| r.provenance == Provenance::Measured).count();
        let find = |id: &Option<String>| id.as_ref().and_then(|id| recs.iter().find(|r| &r.config_id == id));
        let _ = write!(
            s,
            "<div class=\"card\"><h3>{} <span class=\"muted\">({}, {})</span></h3>",
            escape(&d.name),
            escape(&d.device),
            escape(&d.engine)
        );
        let energy = d
            .budget_energy_j
            .map_or("energy not budgeted (no battery)".to_string(), |e| format!("energy &le; {e:.2} J/run"));
        let _ = write!(
            s,
            "<p>Budgets: decode &ge; {:.0} tok/s, peak memory &le; {:.0} MB, {energy}.</p>\
             <p>{} of {} feasible, {} on the frontier; {} measured, {} predicted.</p>",
            d.budget_decode_tok_s,
            d.budget_memory_mb,
            d.feasible,
            d.configs,
            d.frontier,
            measured,
            recs.len() - measured
        );
        // Measurements first: a verdict they contradict never heads the card.
        let agreement = d.agreement.as_ref();
        if let Some(c) = agreement.and_then(|a| a.contradiction()) {
            let _ = write!(s, "<p class=\"fail\"><b>Measured:</b> {}.</p>", escape(&c));
        }
        if let Some(a) = agreement {
            let class = if a.suspect { "warn" } else { "muted" };
            let _ = write!(s, "<p class=\"{class}\"><b>Measured against predicted:</b> {}.</p>", escape(&a.describe()));
        }
        let suspect = agreement.is_some_and(crate::agreement::Agreement::doubts_predictions);
        for (label, id) in [("Best feasible", &d.best_feasible), ("Largest feasible", &d.largest_feasible)] {
            match find(id) {
                Some(r) => {
                    let mut line = record_line(r);
                    if suspect && r.provenance == Provenance::Predicted {
                        line.push_str(" (suspect: see the measurements above)");
                    }
                    let _ = write!(
                        s,
                        "<p><b>{label}:</b> {}<br>{}{}{}</p>",
                        escape(&line),
                        badge(&r.budgets.decode, "decode"),
                        badge(&r.budgets.memory, "memory"),
                        badge(&r.budgets.energy, "energy")
                    );
                }
                None => {
                    let _ = write!(s, "<p><b>{label}:</b> none meets every budget.</p>");
                }
            }
        }
        if let Some(loo) = &d.leave_one_out {
            let class = if loo.starts_with("the points disagree") { "warn" } else { "muted" };
            let _ = write!(s, "<p class=\"{class}\"><b>Leave-one-out:</b> {}.</p>", escape(loo));
        }
        if let Some(i) = &d.intervals {
            let class = if i.contains("LOW confidence") { "warn" } else { "muted" };
            let _ = write!(s, "<p class=\"{class}\"><b>Predictions:</b> {}.</p>", escape(i));
        }
        if let Some(p) = &d.published {
            let _ = write!(s, "<p class=\"muted\"><b>Published points:</b> {}.</p>", escape(p));
        }
        let cal = &d.calibration;
        let odd = needs_calibration(cal);
        let _ = write!(s, "<p class=\"{}\">Calibration: {}</p></div>", if odd { "warn" } else { "muted" }, escape(cal));
    }
    s.push_str("</div>");
}

/// A cell's ` title="90% lo-hi"` where a prediction has an interval.
fn ninety_title(lo: Option<f64>, hi: Option<f64>, decimals: usize) -> String {
    crate::report::spread(lo, hi, decimals).map_or(String::new(), |s| format!(" title=\"90% interval {s}\""))
}

/// A measurement's output fingerprint; red when its repetitions disagree.
fn output_cell(m: &crate::record::Measurement) -> String {
    match (&m.output, m.invalid()) {
        (None, _) => "<td class=\"muted\">not hashed</td>".into(),
        (Some(o), None) => format!("<td><code>{}</code></td>", escape(&o.tokens_hash)),
        (Some(_), Some(why)) => format!("<td class=\"fail\" title=\"{}\">INVALID</td>", escape(&why)),
    }
}

/// Clean, contended, drifted and retaken repetitions, the precision
/// reached, and the bandwidth the repetitions' passes read.
fn samples_cell(m: &crate::record::Measurement) -> String {
    let Some(s) = &m.probe.sampling else { return "<td class=\"muted\">n/a</td>".into() };
    let precision = s.precision_reached.map_or(String::new(), |p| format!(", ±{:.1}%", p * 100.0));
    let bandwidth = match (&m.decode_efficiency, m.moment_bandwidth_gb_s) {
        (Some(e), Some([lo, hi])) => {
            format!("; {:.0}% of the moment's bandwidth ({lo:.0}-{hi:.0} GB/s)", e.median * 100.0)
        }
        _ => String::new(),
    };
    let text = format!(
        "{} clean, {} contended, {} drifted, {} retaken{precision}{bandwidth}",
        s.clean, s.contended, s.drifted, s.retaken
    );
    let class = if m.contended || m.drifted { " class=\"contended\"" } else { "" };
    format!("<td{class}>{}</td>", escape(&text))
}

fn error_table(s: &mut String, measured: &[&Record]) {
    s.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>device</th><th>configuration</th>\
         <th class=\"n\">decode predicted</th><th class=\"n\">measured</th><th class=\"n\">error</th>\
         <th class=\"n\">prefill predicted</th><th class=\"n\">measured</th><th class=\"n\">error</th>\
         <th class=\"n\">TTFT ms predicted</th><th class=\"n\">measured</th><th class=\"n\">error</th>\
         <th class=\"n\">peak MB predicted</th><th class=\"n\">measured</th><th class=\"n\">error</th>\
         <th class=\"n\">p99 ITL ms</th><th>output</th><th>samples</th><th>measured by</th></tr></thead><tbody>",
    );
    for r in measured {
        let Some(m) = &r.measurement else { continue };
        let p = &m.predicted;
        let err = |pred: f64, meas: f64| {
            if meas != 0.0 {
                format!("{:+.1}%", (pred / meas - 1.0) * 100.0)
            } else {
                "n/a".into()
            }
        };
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.1}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{:.0}</td><td class=\"n\">{:.0}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{:.0}</td><td class=\"n\">{:.0}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{:.1}</td><td class=\"n\">{:.1}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td>{}{}<td class=\"muted\">{}</td></tr>",
            escape(&r.device),
            escape(&r.config_name),
            p.decode_tok_s,
            r.decode_tok_s,
            err(p.decode_tok_s, r.decode_tok_s),
            p.prefill_tok_s,
            r.prefill_tok_s,
            err(p.prefill_tok_s, r.prefill_tok_s),
            p.ttft_ms,
            r.ttft_ms,
            if p.ttft_ms > 0.0 { err(p.ttft_ms, r.ttft_ms) } else { "n/a".into() },
            p.peak_mem_increase_mb,
            r.peak_mem_increase_mb,
            err(p.peak_mem_increase_mb, r.peak_mem_increase_mb),
            m.itl.map_or("n/a".into(), |l| format!("{:.2}", l.p99_ms)),
            output_cell(m),
            samples_cell(m),
            escape(&measured_by(r))
        );
    }
    s.push_str("</tbody></table></div><p class=\"muted\">Error = predicted / measured - 1.</p>");
}

/// Who measured a record and with which memory meter: the probe's engine,
/// or the app's XCTest on a farm, and VmHWM or phys_footprint.
fn measured_by(r: &Record) -> String {
    let memory = r.meter_of(&crate::provenance::MethodKey::PeakMemIncreaseMb);
    let meter = match memory {
        Some(crate::provenance::Meter::PhysFootprint) => "memory by phys_footprint",
        Some(crate::provenance::Meter::VmHwm) => "memory by VmHWM",
        _ => "memory as its method says",
    };
    format!("{}; {meter}", r.produced_by)
}

fn results_table(s: &mut String, report: &SweepReport) {
    let all = &report.outcome.results;
    let _ = write!(
        s,
        "<input type=\"search\" id=\"filter\" placeholder=\"Filter rows (device, configuration, provenance...)\" aria-label=\"filter\">"
    );
    if all.len() > MAX_TABLE_ROWS {
        let _ = write!(
            s,
            "<p class=\"muted\">The first {MAX_TABLE_ROWS} of {} results (device by device, in plan order); results.jsonl has every one.</p>",
            all.len()
        );
    }
    s.push_str(
        "<div class=\"scroll\"><table id=\"results\"><thead><tr><th>device</th><th>configuration</th><th>id</th>\
         <th class=\"n\">params</th><th class=\"n\">capability</th><th class=\"n\">decode tok/s</th><th class=\"n\">decode 90%</th><th class=\"n\">prefill tok/s</th>\
         <th class=\"n\">TTFT ms</th><th class=\"n\">peak MB</th><th class=\"n\">J/run</th><th class=\"n\">J/run range</th>\
         <th class=\"n\">energy in prefill</th><th>feasible</th><th>frontier</th>\
         <th>figures</th></tr></thead><tbody>",
    );
    for r in all.iter().take(MAX_TABLE_ROWS) {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td class=\"n\" data-v=\"{}\">{}</td><td class=\"n\">{:.1}</td>\
             <td class=\"n\">{:.0}</td><td class=\"n\">{}</td><td class=\"n\"{}>{:.0}</td><td class=\"n\"{}>{:.0}</td><td class=\"n\"{}>{:.1}</td>\
             <td class=\"n\">{:.2}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&r.device),
            escape(&r.config_name),
            escape(&r.config_id),
            r.params_total,
            ParamCount(r.params_total as f64),
            r.capability,
            r.decode_tok_s,
            {
                let b = &r.bounds;
                let low = if b.low_confidence == Some(true) { " <b>low confidence</b>" } else { "" };
                crate::report::spread(b.decode_tok_s_low, b.decode_tok_s_high, 0).map_or(String::new(), |s| s + low)
            },
            ninety_title(r.bounds.prefill_tok_s_low, r.bounds.prefill_tok_s_high, 0),
            r.prefill_tok_s,
            ninety_title(r.ttft_ms_low, r.ttft_ms_high, 0),
            r.ttft_ms,
            ninety_title(r.bounds.peak_mem_increase_mb_low, r.bounds.peak_mem_increase_mb_high, 1),
            r.peak_mem_increase_mb,
            r.energy_j_per_run,
            match (r.energy_j_per_run_low, r.energy_j_per_run_high) {
                (Some(lo), Some(hi)) => format!("{lo:.2}-{hi:.2}"),
                _ => String::new(),
            },
            r.prefill_energy_share.map_or(String::new(), |s| format!("{:.0}%", s * 100.0)),
            {
                let v = &r.budgets;
                let unsure: Vec<&str> = [("decode", v.decode), ("memory", v.memory), ("energy", v.energy)]
                    .into_iter()
                    .filter(|(_, v)| v.certainty == Some(crate::budget::Certainty::Uncertain))
                    .map(|(k, _)| k)
                    .collect();
                let yes = if r.feasible { "yes" } else { "no" };
                match unsure.is_empty() {
                    true => yes.to_string(),
                    false => format!("{yes} ({} uncertain)", unsure.join(", ")),
                }
            },
            if r.on_frontier { "yes" } else { "" },
            escape(r.provenance_label())
        );
    }
    s.push_str("</tbody></table></div>");
}

fn facts(s: &mut String, report: &SweepReport) {
    let _ = write!(
        s,
        "<p>Report {} (schema {}) from <code>{}</code>.</p>",
        escape(&report.tool),
        report.schema_version,
        escape(&report.sweep_file)
    );
    s.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>run</th><th>command</th><th>when (UTC)</th><th>status</th>\
         <th>pocketbench</th><th>machine</th><th>build</th></tr></thead><tbody>",
    );
    for (i, r) in report.runs.iter().enumerate() {
        let (machine, build) = host_cells(&r.host);
        let _ = write!(
            s,
            "<tr><td class=\"n\">{}</td><td><code>{}</code></td><td>{} to {}</td><td>{}</td><td>{}, commit {}</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            escape(&r.command_line),
            escape(&r.started_at),
            escape(r.ended_at.as_deref().unwrap_or("killed or running")),
            escape(&r.status),
            escape(&r.harness_version),
            escape(r.git_commit.as_deref().unwrap_or("unknown")),
            escape(&machine),
            escape(&build),
        );
    }
    s.push_str("</tbody></table></div>");
    s.push_str(
        "<div class=\"scroll\"><table><thead><tr><th>device</th><th>its predictions rest on</th></tr></thead><tbody>",
    );
    for d in &report.outcome.devices {
        let _ = write!(s, "<tr><td>{}</td><td>{}</td></tr>", escape(&d.device), escape(&d.calibration));
    }
    s.push_str("</tbody></table></div>");
}

/// A run's host, as the store keeps it (the probe's host facts as JSON),
/// in two cells: the machine, and the build that measured on it. A host
/// that is not such JSON (an older store) is shown as it was written.
fn host_cells(host: &str) -> (String, String) {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(host) else {
        return (host.to_string(), String::new());
    };
    let m = &v["machine"];
    let text = |x: &serde_json::Value| x.as_str().unwrap_or("?").to_string();
    let gib = m["memory_bytes"].as_f64().map_or(String::new(), |b| format!(", {:.1} GiB", b / (1u64 << 30) as f64));
    let machine = format!(
        "{}, {} CPUs{gib}, {} (kernel {}), fingerprint {}",
        text(&m["cpu"]),
        m["logical_cpus"].as_u64().map_or("?".into(), |n| n.to_string()),
        text(&m["os"]),
        text(&m["kernel"]),
        text(&v["fingerprint"]),
    );
    let b = &v["build"];
    let build = format!(
        "{} build, {}, {} kernels, {}",
        text(&b["profile"]),
        text(&b["rustc"]),
        text(&v["kernels"]),
        text(&b["target"])
    );
    (machine, build)
}

impl Exporter for ReportHtml {
    fn file_name(&self) -> &'static str {
        "report.html"
    }

    fn render(&self, report: &SweepReport) -> Result<String, ReportError> {
        let fail = |message: String| ReportError::Render { what: "report.html", message };
        let o = &report.outcome;
        let mut s = String::with_capacity(1 << 20);
        let _ = write!(
            s,
            "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
             <title>pocketbench: {}</title><style>{CSS}</style></head><body><main>",
            escape(&report.sweep)
        );
        let measured: Vec<&Record> = o.results.iter().filter(|r| r.provenance == Provenance::Measured).collect();
        intro(&mut s, report, &measured);
        if let Some(v) = &report.comparison {
            compare::section(&mut s, v);
        }
        s.push_str("<h2>Devices</h2>");
        summary_cards(&mut s, report);

        charts_html(&mut s, report, &measured).map_err(fail)?;
        failures_html(&mut s, report);
        s.push_str("<h2>Every result</h2>");
        results_table(&mut s, report);
        s.push_str("<h2>How this was made</h2>");
        facts(&mut s, report);
        let _ = writeln!(s, "</main><script>{JS}</script></body></html>");
        Ok(s)
    }
}

#[cfg(test)]
mod tests;

/// The title, what was swept, the provenance counts, and the devices whose
/// predictions are not a calibration of them.
fn intro(s: &mut String, report: &SweepReport, measured: &[&Record]) {
    let o = &report.outcome;
    // The memory meters the measured records name (VmHWM on Linux and
    // Android, phys_footprint in the iOS app).
    let mut meters: Vec<&str> = measured
        .iter()
        .filter_map(|r| r.meter_of(&crate::provenance::MethodKey::PeakMemIncreaseMb))
        .map(|m| if m == crate::provenance::Meter::PhysFootprint { "phys_footprint" } else { "VmHWM" })
        .collect();
    meters.sort_unstable();
    meters.dedup();
    let meters = if meters.is_empty() { "VmHWM".to_string() } else { meters.join(" or ") };
    let _ = write!(s, "<h1>Sweep <code>{}</code></h1>", escape(&report.sweep));
    if let Some(d) = &report.description {
        let _ = write!(s, "<p>{}</p>", escape(d));
    }
    let configs = o.devices.first().map_or(0, |d| d.configs);
    let objectives: Vec<String> = report.objectives.iter().map(|o| o.to_string()).collect();
    let _ = write!(
        s,
        "<p>{configs} configurations on {} devices; each judged on a run of {} prompt + {} generated tokens; frontier objectives: {}.</p>\
         <p><b>Provenance:</b> {} record(s) predicted by the calibrated physical model roofline-v1 (each device's calibration is named on its card), {} measured on a device (timer, {meters}; energy as each record's method says). Capability is a proxy score unless a scores file replaced it.</p>",
        o.devices.len(),
        report.prompt_tokens,
        report.gen_tokens,
        escape(&objectives.join(", ")),
        o.results.len() - measured.len(),
        measured.len()
    );
    for d in o.devices.iter().filter(|d| needs_calibration(&d.calibration)) {
        let _ = write!(
            s,
            "<p class=\"warn\">Device {}: its predictions are not a calibration of it as it is now: {}</p>",
            escape(&d.device),
            escape(&d.calibration)
        );
    }
}

/// Every chart: the frontiers, size against the budgets, the depth and
/// vocabulary studies where the plan has them, predicted against measured.
fn charts_html(s: &mut String, report: &SweepReport, measured: &[&Record]) -> Result<(), String> {
    let o = &report.outcome;
    s.push_str("<h2>Pareto frontiers</h2><div class=\"grid\">");
    for d in &o.devices {
        let recs: Vec<&Record> = o.results.iter().filter(|r| r.device == d.device).collect();
        figure_html(s, &charts::frontier::figure(d, &recs)?);
    }
    s.push_str("</div><h2>Size against the budgets</h2><div class=\"grid\">");
    for m in [charts::scaling::Metric::Decode, charts::scaling::Metric::Memory, charts::scaling::Metric::Energy] {
        figure_html(s, &charts::scaling::figure(m, &o.devices, &o.results)?);
    }
    s.push_str("</div>");
    let first: Vec<&Record> =
        o.devices.first().map_or(Vec::new(), |d| o.results.iter().filter(|r| r.device == d.device).collect());
    if let Some(study) = studies::depth(&first) {
        s.push_str("<h2>Depth study</h2><div class=\"grid\">");
        for cap in [false, true] {
            figure_html(s, &charts::depth::figure(&study, cap, &o.devices, &o.results)?);
        }
        s.push_str("</div>");
    }
    if let Some(study) = studies::vocab(&first) {
        s.push_str("<h2>Vocabulary study</h2><div class=\"grid\">");
        for decode in [false, true] {
            figure_html(s, &charts::vocab::figure(&study, decode, &o.devices, &o.results)?);
        }
        s.push_str("</div>");
    }
    if !measured.is_empty() {
        s.push_str("<h2>Predicted against measured</h2><div class=\"grid\">");
        for mem in [false, true] {
            figure_html(s, &charts::measured::figure(measured, mem)?);
        }
        if let Some(f) = charts::latency::figure(measured)? {
            figure_html(s, &f);
        }
        s.push_str("</div>");
        error_table(s, measured);
    }
    Ok(())
}

fn failures_html(s: &mut String, report: &SweepReport) {
    if report.outcome.failures.is_empty() {
        return;
    }
    s.push_str("<h2>Failed measurements</h2><div class=\"scroll\"><table><thead><tr><th>device</th><th>configuration</th><th class=\"n\">attempts</th><th>reason</th></tr></thead><tbody>");
    for f in &report.outcome.failures {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            escape(&f.device),
            escape(&f.config_name),
            f.attempts,
            escape(&f.failure.to_string())
        );
    }
    s.push_str("</tbody></table></div>");
}

/// Whether a calibration label says the predictions are not a fit of the
/// device as it is now: every such state names the command that fixes it
/// ([`crate::device::Device::calibration_label`]).
fn needs_calibration(label: &str) -> bool {
    label.contains("run `pocketbench calibrate")
}
