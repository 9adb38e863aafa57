//! `soak.html`: one soak's page, a pure function of its record (the
//! `soak.json` beside it): the verdict, the throttle curve, the
//! temperature curve, every window, and how it was made. Self-contained
//! like `report.html`: inline SVG and CSS, no fetch, and one line of
//! script that marks the page loaded (as `report.html`'s does). Every
//! string read from the device (sensor names, facts) is escaped.

use std::fmt::Write;

use super::charts::{self, Figure};
use super::{escape, figure_html, CSS};
use crate::record::Record;

/// The page of `r`, a record with a soak.
pub fn page(r: &Record) -> Result<String, String> {
    let m = r.measurement.as_ref().ok_or("the record is a prediction, not a soak")?;
    let soak = m.probe.soak.as_ref().ok_or("the record's measurement has no soak")?;
    let name = format!("{} on {}", r.config_name, r.device);
    let mut s = String::with_capacity(64 << 10);
    let _ = write!(
        s,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>pocketbench soak: {}</title><style>{CSS}</style></head><body><main>\
         <h1>Sustained load: {}</h1>",
        escape(&name),
        escape(&name)
    );
    let badge = if soak.throttled {
        "<span class=\"badge fail\">throttled</span>".to_string()
    } else if soak.drop.is_some() {
        "<span class=\"badge pass\">not throttled</span>".to_string()
    } else {
        "<span class=\"badge na\">throttling n/a</span>".to_string()
    };
    let _ = write!(s, "<p id=\"verdict\">{badge} {}</p>", escape(&soak.describe()));
    if let Some(why) = m.invalid() {
        let _ = write!(
            s,
            "<p class=\"warn\" style=\"background:#fde8e8;border-color:#a11d1d\"><b>INVALID</b>: {}</p>",
            escape(&why)
        );
    }
    if !soak.temperature_readable {
        s.push_str(
            "<p class=\"warn\">Temperature not readable: the device has no thermal zone or hwmon sensor the probe \
             could read, so the curve is drawn from speed alone, and a fall in it may be the machine (a shared \
             host's bandwidth moves) rather than heat.</p>",
        );
    }
    let contended = soak.windows.iter().filter(|w| w.window.contended).count();
    if contended > 0 {
        let _ = write!(
            s,
            "<p class=\"warn\">{contended} of {} windows were contended (steal or other processes' CPU time above \
             the threshold): their speed is the machine's as much as the device's.</p>",
            soak.windows.len()
        );
    }
    s.push_str("<div class=\"grid\">");
    let figures: Vec<Figure> =
        [charts::throttle::speed(soak, &name)?, charts::throttle::temperature(soak)?].into_iter().flatten().collect();
    for f in &figures {
        figure_html(&mut s, f);
    }
    s.push_str("</div><h2>Every window</h2>");
    windows_table(&mut s, soak);
    s.push_str("<h2>How this was made</h2><dl>");
    let host = &m.probe.host;
    let rows = [
        ("measured", format!("{} ({})", r.provenance_label(), r.produced_by)),
        ("soak", m.probe.methods.get("soak").cloned().unwrap_or_default()),
        (
            "workload",
            format!(
                "{} a cycle, {} complete cycle(s), {} thread(s), engine {} ({})",
                m.probe.workload, soak.cycles, m.probe.threads, m.probe.engine, m.probe.engine_version
            ),
        ),
        (
            "over the cycles",
            format!(
                "decode median {:.1} tok/s, prefill median {:.1} tok/s, peak memory increase {:.1} MB (VmHWM or \
                 phys_footprint, as measured), {}",
                r.decode_tok_s,
                r.prefill_tok_s,
                r.peak_mem_increase_mb,
                super::super::energy_text(r)
            ),
        ),
        ("temperature", soak.temperature.clone()),
        (
            "cool-down",
            soak.cooled.as_ref().map_or("none asked, or no thermal zone".into(), |c| {
                format!(
                    "{:.1} C at the start after {:.1} s ({}){}",
                    c.start_c,
                    c.waited_s,
                    c.source,
                    if c.hot { ", still hot at the timeout" } else { "" }
                )
            }),
        ),
        (
            "machine",
            format!(
                "{}, {} CPUs, {} (kernel {}), fingerprint {}",
                host.cpu, host.logical_cpus, host.os, host.kernel, host.fingerprint
            ),
        ),
    ];
    for (k, v) in rows {
        let _ = write!(s, "<dt>{}</dt><dd>{}</dd>", escape(k), escape(&v));
    }
    s.push_str("</dl></main><script>document.body.dataset.ready='1';</script></body></html>\n");
    Ok(s)
}

fn windows_table(s: &mut String, soak: &crate::probe::soak::Soak) {
    s.push_str(
        "<div class=\"scroll\"><table id=\"windows\"><thead><tr><th class=\"n\">#</th><th class=\"n\">from s</th>\
         <th class=\"n\">seconds</th><th class=\"n\">decode steps</th><th class=\"n\">decode tok/s</th>\
         <th class=\"n\">prompt tokens</th><th class=\"n\">temperature C</th><th>sensor</th><th class=\"n\">MHz</th>\
         <th>CPUs</th><th>contended</th></tr></thead><tbody>",
    );
    for (i, w) in soak.windows.iter().enumerate() {
        let cpus: Vec<String> = w.window.thread_cpus.iter().map(u32::to_string).collect();
        let _ = write!(
            s,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{:.2}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td>\
             <td>{}</td><td{}>{}</td></tr>",
            i + 1,
            w.start_s,
            w.seconds,
            w.decode_tokens,
            w.decode_tok_s.map_or("-".into(), |t| format!("{t:.1}")),
            w.prefill_tokens,
            w.celsius.map_or("-".into(), |c| format!("{c:.1}")),
            escape(w.sensor.as_deref().unwrap_or("not readable")),
            w.window.mhz.map_or("-".into(), |m| format!("{m:.0}")),
            cpus.join(" "),
            if w.window.contended { " class=\"contended\"" } else { "" },
            if w.window.contended { "yes" } else { "" }
        );
    }
    s.push_str("</tbody></table></div>");
}
