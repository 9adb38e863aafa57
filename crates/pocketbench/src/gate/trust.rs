//! Whether a matched pair's samples may be compared at all: both sides'
//! outputs must repeat, and a busy machine's samples are not held against
//! a quiet one's.

use super::Status;
use crate::record::Record;

/// The most distinct output fingerprints any one engine build of
/// `records` generated (processes of one engine and build must agree;
/// two builds, or two start-up kernel choices that change the sums, may
/// not), with that build, and the first invalid record's reason, if any.
fn outputs(records: &[Record]) -> (usize, String, Option<String>) {
    let mut by_build: Vec<(String, Vec<&str>)> = Vec::new();
    let mut invalid = None;
    for m in records.iter().filter_map(|r| r.measurement.as_deref()) {
        if let Some(o) = &m.output {
            let build = format!("{} {}", m.probe.engine, m.probe.engine_version);
            let i = match by_build.iter().position(|(b, _)| *b == build) {
                Some(i) => i,
                None => {
                    by_build.push((build, Vec::new()));
                    by_build.len() - 1
                }
            };
            if !by_build[i].1.contains(&o.tokens_hash.as_str()) {
                by_build[i].1.push(&o.tokens_hash);
            }
        }
        invalid = invalid.or_else(|| m.invalid());
    }
    let worst = by_build.into_iter().max_by_key(|(_, h)| h.len()).map(|(b, h)| (h.len(), b));
    let (n, build) = worst.unwrap_or_default();
    (n, build, invalid)
}

fn contended(records: &[Record]) -> bool {
    records.iter().filter_map(|r| r.measurement.as_deref()).any(|m| m.contended)
}

/// Why the pair is not compared: an invalid output on a side (its
/// repetitions, or its processes of one engine and build, generated
/// different tokens), or contended samples on one side against clean ones
/// on the other unless `allow_contended`.
pub(super) fn untrusted(baseline: &[Record], candidate: &[Record], allow_contended: bool) -> Option<(Status, String)> {
    for (side, records) in [("candidate", candidate), ("baseline", baseline)] {
        let (distinct, build, invalid) = outputs(records);
        if let Some(why) = invalid {
            return Some((Status::Invalid, format!("the {side}'s output is invalid: {why}")));
        }
        if distinct > 1 {
            return Some((
                Status::Invalid,
                format!(
                    "the {side}'s output is invalid: its runs of one engine and build ({build}) generated \
                     {distinct} different token sequences"
                ),
            ));
        }
    }
    let (b, c) = (contended(baseline), contended(candidate));
    if b != c && !allow_contended {
        let side = if c { "candidate" } else { "baseline" };
        return Some((
            Status::Invalid,
            format!(
                "the {side} was measured on a busy machine (contended repetitions that no retake replaced) and \
                 the other side was not: not compared (--allow-contended compares them anyway)"
            ),
        ));
    }
    None
}

/// Whether any side of a verdict's inputs holds an invalid output: the
/// gate's exit code for it is [`crate::ExitCode::InvalidOutput`].
pub fn any_invalid_output(records: &[Record]) -> Option<String> {
    let mut by_key: std::collections::BTreeMap<super::Key, Vec<Record>> = Default::default();
    for r in records {
        by_key.entry(super::Key::of(r)).or_default().push(r.clone());
    }
    by_key.values().find_map(|rs| {
        let (distinct, build, invalid) = outputs(rs);
        invalid.or_else(|| {
            (distinct > 1).then(|| {
                format!(
                    "{}: runs of one engine and build ({build}) generated {distinct} different token sequences",
                    rs[0].config_name
                )
            })
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::measured_record;
    use crate::trust::Output;

    fn rec(contended: bool, hash: &str) -> Record {
        let mut r = measured_record(2, 16, 8, &[100.0, 101.0, 99.0]);
        let m = r.measurement.as_mut().unwrap();
        m.contended = contended;
        m.output = Some(Output { tokens_hash: hash.into(), agree: true, distinct: 1 });
        r
    }

    #[test]
    fn contended_data_is_not_held_against_clean_data_unless_allowed() {
        let (busy, quiet) = (vec![rec(true, "a")], vec![rec(false, "a")]);
        let (status, why) = untrusted(&quiet, &busy, false).unwrap();
        assert_eq!(status, Status::Invalid);
        assert!(why.contains("the candidate was measured on a busy machine"), "{why}");
        assert!(untrusted(&busy, &quiet, false).unwrap().1.contains("the baseline"));
        assert_eq!(untrusted(&quiet, &busy, true), None);
        assert_eq!(untrusted(&busy, &busy, false), None, "like with like");
        assert_eq!(untrusted(&quiet, &quiet, false), None);
    }

    #[test]
    fn runs_of_one_side_that_disagree_on_their_tokens_are_invalid() {
        let split = vec![rec(false, "a"), rec(false, "b")];
        let (status, why) = untrusted(&[rec(false, "a")], &split, false).unwrap();
        assert_eq!(status, Status::Invalid);
        assert!(why.contains("2 different token sequences"), "{why}");
        assert!(any_invalid_output(&split).is_some());
        assert!(any_invalid_output(&[rec(false, "a"), rec(false, "a")]).is_none());
    }

    #[test]
    fn processes_whose_start_up_chose_other_kernels_are_two_builds_not_a_disagreement() {
        // Seen on the Intel Xeon kind: one process of mnn-pocket-0.3b timed
        // 256-bit attention faster at start-up, the next 512-bit, and their
        // 1024+128 tokens differed (the sums' order moved a near-tie).
        let built = |hash: &str, build: &str| {
            let mut r = rec(false, hash);
            r.measurement.as_mut().unwrap().probe.engine_version = build.into();
            r
        };
        let two_builds = vec![built("a", "avx2 kernels (...)"), built("b", "avx2 kernels (..., 512-bit attention)")];
        assert_eq!(untrusted(&two_builds, &two_builds, false), None);
        assert!(any_invalid_output(&two_builds).is_none());
        let one_build = vec![built("a", "x"), built("b", "x"), built("a", "y")];
        let (_, why) = untrusted(&one_build, &one_build, false).unwrap();
        assert!(
            why.contains("its runs of one engine and build (native x) generated 2 different token sequences"),
            "{why}"
        );
    }
}
