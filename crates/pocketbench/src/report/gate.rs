//! The gate's verdict as JUnit XML (one testcase per configuration x device
//! x metric) and as Markdown for `$GITHUB_STEP_SUMMARY`. Pure functions of
//! the [`Verdict`]: rendered from data, never from the run.

use std::fmt::Write;

use crate::gate::{Comparison, Outcome, Status, Verdict};
use crate::markup::{md, xml};

/// GitHub refuses a step summary over 1 MiB.
pub const SUMMARY_LIMIT: usize = 1 << 20;

fn num(v: Option<f64>) -> String {
    v.map_or_else(String::new, |x| format!("{x}"))
}

/// JUnit XML.
pub fn junit(v: &Verdict) -> String {
    let failures = v.comparisons.iter().filter(|c| c.fails()).count();
    let skipped = v
        .comparisons
        .iter()
        .filter(|c| !c.fails() && matches!(c.status, Status::Inconclusive | Status::Invalid | Status::NotMeasured))
        .count();
    let tests = v.comparisons.len();
    let mut o = String::new();
    o.push_str("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        o,
        "<testsuites name=\"pocketbench gate\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">"
    );
    let _ = writeln!(
        o,
        "  <testsuite name=\"pocketbench gate: {} against {}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        xml(&v.candidate.path),
        xml(&v.baseline.path)
    );
    o.push_str("    <properties>\n");
    let s = &v.settings;
    for (k, val) in [
        ("outcome", v.outcome.name().to_string()),
        ("tool", v.tool.clone()),
        ("baseline", v.baseline.path.clone()),
        ("candidate", v.candidate.path.clone()),
        ("alpha", s.alpha.to_string()),
        ("min-effect-speed", s.min_effect_speed.to_string()),
        ("min-effect-energy", s.min_effect_energy.to_string()),
        ("min-effect-memory", s.min_effect_memory.to_string()),
        ("min-effect-memory-mb", s.min_effect_memory_mb.to_string()),
        ("min-samples", s.min_samples.to_string()),
        ("confidence", s.confidence.to_string()),
        ("effect-rule", s.effect_rule.name().to_string()),
        ("only-in-baseline", v.only_in_baseline.len().to_string()),
        ("only-in-candidate", v.only_in_candidate.len().to_string()),
        ("protocol-differences", v.protocol_differences.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")),
    ] {
        let _ = writeln!(o, "      <property name=\"{k}\" value=\"{}\"/>", xml(&val));
    }
    o.push_str("    </properties>\n");
    for c in &v.comparisons {
        let class = format!("{}.{}", c.key.device, c.config_name);
        let name = format!("{} ({}+{}, {})", c.metric.name(), c.key.prompt_tokens, c.key.gen_tokens, c.key.engine);
        let _ = writeln!(o, "    <testcase classname=\"{}\" name=\"{}\">", xml(&class), xml(&name));
        o.push_str("      <properties>\n");
        for (k, val) in [
            ("status", c.status.name().to_string()),
            ("config-id", c.key.config_id.clone()),
            ("unit", c.unit.clone()),
            ("baseline-n", c.baseline.n.to_string()),
            ("baseline-median", num(c.baseline.median)),
            ("candidate-n", c.candidate.n.to_string()),
            ("candidate-median", num(c.candidate.median)),
            ("ratio", num(c.ratio)),
            ("ratio-lo", num(c.ratio_lo)),
            ("ratio-hi", num(c.ratio_hi)),
            ("p-regression", num(c.p_regression)),
            ("p-regression-holm", num(c.p_regression_holm)),
            ("p-improvement", num(c.p_improvement)),
            ("p-improvement-holm", num(c.p_improvement_holm)),
            ("min-effect", c.min_effect.to_string()),
            ("method", c.method.clone()),
            ("reason", c.reason.clone()),
        ] {
            let _ = writeln!(o, "        <property name=\"{k}\" value=\"{}\"/>", xml(&val));
        }
        o.push_str("      </properties>\n");
        if c.fails() {
            let kind = if c.status == Status::Regression { "regression" } else { "budget" };
            let _ = writeln!(o, "      <failure type=\"{kind}\" message=\"{}\"/>", xml(&c.failure_line()));
        } else if matches!(c.status, Status::Inconclusive | Status::Invalid | Status::NotMeasured) {
            let _ = writeln!(o, "      <skipped message=\"{}\"/>", xml(&c.reason));
        }
        o.push_str("    </testcase>\n");
    }
    o.push_str("  </testsuite>\n</testsuites>\n");
    o
}

fn ratio_cell(c: &Comparison) -> String {
    match (c.ratio, c.ratio_lo, c.ratio_hi) {
        (Some(r), Some(lo), Some(hi)) => format!("{r:.3} ({lo:.3}..{hi:.3})"),
        (Some(r), _, _) => format!("{r:.3}"),
        _ => "-".into(),
    }
}

/// Markdown for `$GITHUB_STEP_SUMMARY`, at most `limit` bytes: rows past
/// the limit are dropped with a note saying how many.
pub fn summary(v: &Verdict, limit: usize) -> String {
    let head = summary_head(v);
    let mut rows: Vec<&Comparison> = v.comparisons.iter().collect();
    rows.sort_by_key(|c| c.rank());
    let tail_note = |left: usize| {
        format!(
            "\n_{left} more row(s) left out to keep this summary under {} KiB; `--json` has them all._\n",
            limit / 1024
        )
    };
    let mut body = String::new();
    for (i, c) in rows.iter().enumerate() {
        let line = summary_row(c);
        if head.len() + body.len() + line.len() + tail_note(rows.len() - i).len() > limit {
            body.push_str(&tail_note(rows.len() - i));
            break;
        }
        body.push_str(&line);
    }
    head + &body
}

/// The summary's verdict, inputs, settings and counts, and the table's header.
fn summary_head(v: &Verdict) -> String {
    let mut head = String::new();
    let icon = match v.outcome {
        Outcome::Pass => "passed",
        Outcome::Inconclusive => "passed with warnings (inconclusive)",
        Outcome::Fail => "FAILED",
    };
    let _ = writeln!(head, "## pocketbench gate: {icon}\n");
    let _ = writeln!(
        head,
        "Candidate `{}` ({}, {} measured records) against baseline `{}` ({}, {} measured records).\n",
        md(&v.candidate.path),
        v.candidate.kind,
        v.candidate.measured,
        md(&v.baseline.path),
        v.baseline.kind,
        v.baseline.measured
    );
    let s = &v.settings;
    let _ = writeln!(
        head,
        "alpha {} (Holm across {} tests), minimum effect: speed {:.0}%, energy {:.0}%, memory {:.0}% or {} MB; at least {} samples a side; {:.0}% bootstrap intervals of the ratio of medians; effect rule `{}`.\n",
        s.alpha,
        v.comparisons.iter().filter(|c| c.p_regression.is_some()).count(),
        s.min_effect_speed * 100.0,
        s.min_effect_energy * 100.0,
        s.min_effect_memory * 100.0,
        s.min_effect_memory_mb,
        s.min_samples,
        s.confidence * 100.0,
        s.effect_rule.name()
    );
    if !v.protocol_differences.is_empty() {
        let listed: Vec<String> = v.protocol_differences.iter().map(|d| md(&d.to_string())).collect();
        let _ = writeln!(
            head,
            "**Measured under different protocols** (compared with `--allow-protocol-mismatch`): {}.\n",
            listed.join("; ")
        );
    }
    head.push_str("| status | count |\n|---|---:|\n");
    for (k, n) in &v.counts.by_status {
        let _ = writeln!(head, "| {k} | {n} |");
    }
    let _ = writeln!(head, "| budget broken | {} |\n", v.counts.budget_failures);
    for (what, list) in [("Only in the baseline", &v.only_in_baseline), ("Only in the candidate", &v.only_in_candidate)]
    {
        if !list.is_empty() {
            let names: Vec<String> = list.iter().map(|u| format!("`{}`", md(&u.key.label(&u.config_name)))).collect();
            let _ = writeln!(head, "{what}: {}.\n", names.join(", "));
        }
    }
    head.push_str(
        "| | configuration | device | workload | metric | baseline | candidate | ratio (CI) | p (Holm) | why |\n",
    );
    head.push_str("|---|---|---|---|---|---:|---:|---|---:|---|\n");
    head
}

fn summary_row(c: &Comparison) -> String {
    let mark = if c.fails() { "FAIL" } else { c.status.name() };
    format!(
        "| {mark} | {} | {} | {}+{} | {} | {} | {} | {} | {} | {} |\n",
        md(&c.config_name),
        md(&c.key.device),
        c.key.prompt_tokens,
        c.key.gen_tokens,
        c.metric.name(),
        crate::markup::cell(c.baseline.median),
        crate::markup::cell(c.candidate.median),
        ratio_cell(c),
        c.p_regression_holm.map_or_else(|| "-".into(), |p| format!("{p:.2e}")),
        md(&c.why())
    )
}
