//! The report's comparison view: the gate's verdict against a baseline,
//! failures first, each comparison's medians, ratio with its interval, a
//! bar showing where that interval lies against "no change" and the minimum
//! effect, the corrected p-value and the reason.

use std::fmt::Write;

use super::escape;
use crate::gate::{Comparison, Outcome, Status, Verdict};
use crate::markup::cell;

fn status_badge(c: &Comparison) -> String {
    let (class, text) = if c.fails() {
        ("fail", "FAIL")
    } else {
        match c.status {
            Status::Pass => ("pass", "pass"),
            Status::Improvement => ("pass", "better"),
            Status::Regression => ("fail", "regression"),
            Status::Inconclusive => ("na", "inconclusive"),
            Status::Invalid => ("na", "invalid"),
            Status::NotMeasured => ("na", "not measured"),
        }
    };
    format!("<span class=\"badge {class}\">{text}</span>")
}

/// A 120 x 12 SVG: the ratio's interval as a bar, its estimate as a tick,
/// "no change" (1.0, the middle) and the minimum effect's edges as lines, on
/// a log scale from 0.5 to 2 (clamped).
fn interval_bar(c: &Comparison) -> String {
    let (Some(r), Some(lo), Some(hi)) = (c.ratio, c.ratio_lo, c.ratio_hi) else { return String::new() };
    let x = |v: f64| (((v.log2() + 1.0) / 2.0).clamp(0.0, 1.0) * 1200.0).round() / 10.0;
    let color = if c.fails() {
        "#c62828"
    } else if c.status == Status::Improvement {
        "#2e7d32"
    } else {
        "#607d8b"
    };
    format!(
        "<svg class=\"ci\" width=\"120\" height=\"12\" viewBox=\"0 0 120 12\" role=\"img\"><title>ratio {r:.3}, interval {lo:.3}..{hi:.3}</title>\
         <line x1=\"{e0}\" x2=\"{e0}\" y1=\"0\" y2=\"12\" stroke=\"#ccc\"/><line x1=\"{e1}\" x2=\"{e1}\" y1=\"0\" y2=\"12\" stroke=\"#ccc\"/>\
         <line x1=\"60\" x2=\"60\" y1=\"0\" y2=\"12\" stroke=\"#999\"/>\
         <rect x=\"{a}\" y=\"4\" width=\"{w}\" height=\"4\" fill=\"{color}\" opacity=\".45\"/><rect x=\"{t}\" y=\"1\" width=\"2\" height=\"10\" fill=\"{color}\"/></svg>",
        e0 = x(1.0 - c.min_effect),
        e1 = x(1.0 + c.min_effect),
        a = x(lo),
        w = (x(hi) - x(lo)).max(1.0),
        t = x(r) - 1.0,
    )
}

/// The section.
pub fn section(s: &mut String, v: &Verdict) {
    let (class, text) = match v.outcome {
        Outcome::Pass => ("pass", "pass"),
        Outcome::Inconclusive => ("na", "pass with warnings (inconclusive)"),
        Outcome::Fail => ("fail", "FAIL"),
    };
    let _ = write!(
        s,
        "<h2 id=\"comparison\">Compared with the baseline</h2><p><span class=\"badge {class}\">gate: {text}</span> \
         against <code>{}</code> ({}, {} measured records): {} comparison(s), {} budget(s) broken. \
         One-sided Mann-Whitney U on the raw repetitions, Holm-corrected (alpha {}), and a {:.0}% bootstrap interval of \
         the ratio of medians (this sweep / baseline); a regression needs both p &lt; alpha and the ratio beyond the \
         minimum effect (speed {:.0}%, energy {:.0}%, memory {:.0}% or {} MB). In each bar (log scale, 0.5 to 2) the middle \
         line is 1.0, the grey lines the minimum effect's edges, the band the interval, the tick the ratio.</p>",
        escape(&v.baseline.path),
        escape(&v.baseline.kind),
        v.baseline.measured,
        v.counts.comparisons,
        v.counts.budget_failures,
        v.settings.alpha,
        v.settings.confidence * 100.0,
        v.settings.min_effect_speed * 100.0,
        v.settings.min_effect_energy * 100.0,
        v.settings.min_effect_memory * 100.0,
        v.settings.min_effect_memory_mb,
    );
    for (what, list) in [("Only in the baseline", &v.only_in_baseline), ("Only in this sweep", &v.only_in_candidate)] {
        if !list.is_empty() {
            let names: Vec<String> = list.iter().map(|u| escape(&u.key.label(&u.config_name))).collect();
            let _ = write!(s, "<p class=\"warn\">{what}, not compared: {}.</p>", names.join("; "));
        }
    }
    s.push_str(
        "<div class=\"scroll\"><table id=\"comparisons\"><thead><tr><th>verdict</th><th>configuration</th><th>device</th>\
         <th>workload</th><th>metric</th><th class=\"n\">baseline</th><th class=\"n\">this sweep</th><th class=\"n\">ratio</th>\
         <th>interval</th><th class=\"n\">p (Holm)</th><th>why</th></tr></thead><tbody>",
    );
    let mut rows: Vec<&Comparison> = v.comparisons.iter().collect();
    rows.sort_by_key(|c| c.rank());
    for c in rows {
        let _ = write!(
            s,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}+{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
             <td class=\"n\">{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"why\">{}</td></tr>",
            status_badge(c),
            escape(&c.config_name),
            escape(&c.key.device),
            c.key.prompt_tokens,
            c.key.gen_tokens,
            c.metric.name(),
            cell(c.baseline.median),
            cell(c.candidate.median),
            c.ratio.map_or_else(|| "-".into(), |r| format!("{r:.3}")),
            interval_bar(c),
            c.p_regression_holm.map_or_else(|| "-".into(), |p| format!("{p:.2e}")),
            escape(&c.why())
        );
    }
    s.push_str("</tbody></table></div>");
}
