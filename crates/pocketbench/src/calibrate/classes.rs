//! Engine classes on one device (issue 44, item 2). A profile describes one
//! engine class on one backend ("mnn on cpu"): its facts and fitted model
//! are that engine's. A point published for another class ("llama.cpp on
//! npu") calibrates that class's efficiency *relative to the profile's*:
//! a decode factor that scales every decode cost (bandwidth efficiency up,
//! fixed and attention costs down) and a prefill factor on the compute
//! efficiency, each fitted so the class's points are met in the geometric
//! mean. The device's own facts and model are left as they were.

use serde::Serialize;

use super::residuals::{figures, predicted_figure};
use crate::device::{CalPoint, Device, DeviceModel};
use crate::predict::predict;

/// One other engine class of a device and what its points make of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClassFit {
    /// "llama.cpp on npu".
    pub class: String,
    /// Its points that are fitted, and held out.
    pub points: usize,
    /// See `points`.
    pub held_out: usize,
    /// Decode of this class over the profile's own class, where its points
    /// carry decode.
    pub decode_factor: Option<f64>,
    /// Prefill's compute efficiency of this class over the profile's.
    pub prefill_factor: Option<f64>,
}

impl ClassFit {
    /// One line: "llama.cpp on npu: 1 point; decode x0.62, prefill x1.40 of mnn on cpu".
    pub fn describe(&self, own: &str) -> String {
        let f = |name: &str, v: Option<f64>| v.map(|v| format!("{name} x{v:.2}"));
        let factors: Vec<String> =
            [f("decode", self.decode_factor), f("prefill", self.prefill_factor)].into_iter().flatten().collect();
        let held = if self.held_out > 0 { format!(" (+{} held out)", self.held_out) } else { String::new() };
        format!(
            "{}: {} point(s){held}; {}",
            self.class,
            self.points,
            if factors.is_empty() {
                "nothing fitted (no fitted decode or prefill)".to_string()
            } else {
                format!("{} of {own}", factors.join(", "))
            }
        )
    }
}

/// Why a device has no such class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ClassError(String);

/// The model of `m` with every decode cost scaled so decode runs `f` times
/// as fast, and prefill's compute efficiency times `p`.
pub fn scaled(m: &DeviceModel, f: f64, p: f64) -> DeviceModel {
    let mut out = *m;
    let q = &mut out.params;
    q.bandwidth_efficiency *= f;
    q.cache_efficiency *= f;
    for c in [&mut q.layer_cost, &mut q.token_cost, &mut q.attention_cost, &mut q.kv_cost] {
        *c /= f;
    }
    q.compute_efficiency *= p;
    q.prefill_attention_cost /= p;
    out
}

/// The factor, from 1, that brings the geometric mean of `metric`'s
/// predictions over `points` onto their figures: a few fixed-point steps
/// (the figure is close to proportional to it).
fn factor(points: &[&CalPoint], metric: &str, predict_at: impl Fn(&CalPoint, f64) -> f64) -> Option<f64> {
    let with: Vec<(&CalPoint, f64)> = points
        .iter()
        .filter_map(|pt| figures(pt).into_iter().find(|f| f.0 == metric).and_then(|f| f.2).map(|v| (*pt, v)))
        .collect();
    if with.is_empty() {
        return None;
    }
    let mut k = 1.0_f64;
    for _ in 0..8 {
        let log_mean = with.iter().map(|(pt, v)| (v / predict_at(pt, k)).ln()).sum::<f64>() / with.len() as f64;
        k = (k * log_mean.exp()).clamp(1e-3, 1e3);
        if log_mean.abs() < 1e-6 {
            break;
        }
    }
    Some(k)
}

/// The fitted factors of the class `label` from its non-held-out points.
fn fit(device: &Device, points: &[&CalPoint]) -> (Option<f64>, Option<f64>) {
    let base = device.model();
    let at = |pt: &CalPoint, m: &DeviceModel, metric: &str| {
        predicted_figure(&predict(&pt.shape, &pt.shape.accounting(), &super::at_moment(pt, m), &pt.workload), metric)
    };
    let decode = factor(points, "decode", |pt, k| at(pt, &scaled(base, k, 1.0), "decode"));
    let d = decode.unwrap_or(1.0);
    let prefill = factor(points, "prefill", |pt, k| at(pt, &scaled(base, d, k), "prefill"));
    (decode, prefill)
}

/// Every other engine class on `device`, with its factors.
pub fn classes(device: &Device) -> Vec<ClassFit> {
    let mut labels: Vec<&str> = device.class_points().iter().map(|p| p.class.as_str()).collect();
    labels.dedup();
    labels.sort_unstable();
    labels.dedup();
    labels
        .into_iter()
        .map(|label| {
            let of: Vec<&CalPoint> = device.class_points().iter().filter(|p| p.class == label).collect();
            let fitted: Vec<&CalPoint> = of.iter().copied().filter(|p| !p.holdout).collect();
            let (decode_factor, prefill_factor) = fit(device, &fitted);
            ClassFit {
                class: label.to_string(),
                points: fitted.len(),
                held_out: of.len() - fitted.len(),
                decode_factor,
                prefill_factor,
            }
        })
        .collect()
}

/// `device` predicting for the engine class `name` ("llama.cpp", or
/// "llama.cpp/npu" where the class runs on more than one backend): its
/// model scaled by the class's factors, its points the class's own (so
/// residuals, leave-one-out and intervals are the class's), its engine
/// named for the class. The profile's own class gives `device` back.
pub fn for_class(device: &Device, name: &str) -> Result<Device, ClassError> {
    let wanted = |label: &str| {
        let (class, backend) = label.split_once(" on ").unwrap_or((label, ""));
        match name.split_once('/') {
            Some((c, b)) => c == class && b == backend,
            None => name == class,
        }
    };
    if wanted(&device.class_label()) {
        return Ok(device.clone());
    }
    let all = classes(device);
    let matching: Vec<&ClassFit> = all.iter().filter(|c| wanted(&c.class)).collect();
    let known = || {
        std::iter::once(device.class_label())
            .chain(all.iter().map(|c| c.class.clone()))
            .map(|l| format!("`{}`", l.replace(" on ", "/")))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let fit = match matching.as_slice() {
        [one] => *one,
        [] => {
            return Err(ClassError(format!(
                "device `{}` has no points of engine class `{name}`: its classes are {}",
                device.id(),
                known()
            )))
        }
        _ => {
            return Err(ClassError(format!(
                "engine class `{name}` runs on more than one backend on `{}`: name one of {}",
                device.id(),
                known()
            )))
        }
    };
    if fit.points == 0 {
        return Err(ClassError(format!(
            "engine class `{}` on `{}` has only held-out points: nothing calibrates it",
            fit.class,
            device.id()
        )));
    }
    let model = scaled(device.model(), fit.decode_factor.unwrap_or(1.0), fit.prefill_factor.unwrap_or(1.0));
    Ok(device.as_class(&fit.class, model))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::Devices;

    fn ipad() -> Device {
        Devices::built_in().unwrap().get("ipad-pro-m5").unwrap().clone()
    }

    #[test]
    fn a_class_of_one_point_meets_it_and_leaves_the_profile_alone() {
        let d = ipad();
        let fits = classes(&d);
        assert_eq!(fits.len(), 1, "{fits:?}");
        assert_eq!((fits[0].class.as_str(), fits[0].points, fits[0].held_out), ("llama.cpp on gpu", 1, 1));
        let c = for_class(&d, "llama.cpp").unwrap();
        assert_eq!(c.class_label(), "llama.cpp on gpu");
        assert_eq!(c.points().len(), 2, "the class's own points, fitted and held out");
        let pt = c.points().iter().find(|p| !p.holdout).unwrap();
        let p = predict(&pt.shape, &pt.shape.accounting(), c.model(), &pt.workload);
        for (got, want) in [(p.decode_tok_s, pt.decode_tok_s.unwrap()), (p.prefill_tok_s, pt.prefill_tok_s.unwrap())] {
            assert!((got / want - 1.0).abs() < 1e-3, "{got} vs {want}");
        }
        // The profile's own model and points are untouched.
        assert_eq!(d.model(), ipad().model());
        assert!(d.points().iter().all(|p| p.class == "mnn on gpu"));
        assert_eq!(for_class(&d, "mnn").unwrap().model(), d.model());
    }

    #[test]
    fn the_factors_scale_decode_and_prefill_as_named() {
        let d = ipad();
        let pt = &d.points()[0];
        let at = |m: &DeviceModel| predict(&pt.shape, &pt.shape.accounting(), m, &pt.workload);
        let (base, half) = (at(d.model()), at(&scaled(d.model(), 0.5, 1.0)));
        assert!(
            (half.decode_tok_s / base.decode_tok_s - 0.5).abs() < 0.02,
            "{} {}",
            half.decode_tok_s,
            base.decode_tok_s
        );
        assert_eq!(half.peak_mem_bytes, base.peak_mem_bytes);
    }

    #[test]
    fn a_class_it_lacks_or_cannot_fit_is_refused_by_name() {
        let d = ipad();
        let e = for_class(&d, "mlx").unwrap_err().to_string();
        assert!(e.contains("no points of engine class `mlx`") && e.contains("`llama.cpp/gpu`"), "{e}");
        let phone = Devices::built_in().unwrap().get("oneplus-13").unwrap().clone();
        let e = for_class(&phone, "mnn/npu").unwrap_err().to_string();
        assert!(e.contains("only held-out points"), "{e}");
    }
}
