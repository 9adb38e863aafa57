//! Checking a profile as it stands against new measurements: the residuals
//! of the shapes it was not fitted to, and the drift of the jobs it was.

use std::path::Path;

use super::drift::{split, Drift};
use super::residuals::{residuals, Residual};
use super::with_points;
use crate::device::Device;

/// A check of `device`'s profile as it stands: the decode, prefill and
/// peak-memory residuals of `points` (measurements of shapes it was not
/// fitted to) under its stored parameters, the model `predict` uses, and
/// the drift of those of `points` that re-measure a job it was fitted to
/// ([`super::drift`]), which are no check of the model. Nothing is fitted
/// or written.
pub fn check(device: &Device, points: &[crate::device::PointToml]) -> Result<Checked, crate::Error> {
    let origin = device.origin().to_string();
    let text = crate::device::home::text_of(device.origin()).map_err(|e| crate::Error::io(Path::new(&origin), e))?;
    let text = with_points(&text, points)?;
    let with = device.reparse(device.origin().clone(), &text)?;
    let first = device.profile().calibration.len();
    let (drifts, checked) = split(device, &with, first);
    let residuals = residuals(&with, device.model())
        .into_iter()
        .filter(|r| checked.contains(&r.point) && matches!(r.metric, "decode" | "prefill" | "peak-memory"))
        .collect();
    Ok(Checked { residuals, drifts })
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The residuals of the points the profile was not fitted to.
    pub residuals: Vec<Residual>,
    /// The jobs it was fitted to, measured again.
    pub drifts: Vec<Drift>,
}
