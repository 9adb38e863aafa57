//! Choosing the device a run goes to from `list devices`.

use crate::error::DevicectlError;
use crate::json::Device;

fn describe(d: &Device) -> String {
    let h = &d.hardware_properties;
    let c = &d.connection_properties;
    format!(
        "{} ({}, {}, tunnel {})",
        d.name(),
        h.marketing_name.as_deref().or(h.product_type.as_deref()).unwrap_or("unknown model"),
        d.identifier,
        c.tunnel_state.as_deref().unwrap_or("unknown")
    )
}

/// The device to use: the one `selector` names (identifier, UDID or
/// name), else the only reachable physical iPhone or iPad. Devices of
/// other platforms and simulators are never chosen.
pub fn choose<'a>(devices: &'a [Device], selector: Option<&str>) -> Result<&'a Device, DevicectlError> {
    let ios: Vec<&Device> = devices.iter().filter(|d| d.is_ios_hardware()).collect();
    let seen = || devices.iter().map(describe).collect::<Vec<_>>();
    let chosen = match selector.filter(|s| !s.is_empty()) {
        Some(s) => *ios
            .iter()
            .find(|d| d.matches(s))
            .ok_or_else(|| DevicectlError::NotFound { selector: s.into(), seen: seen() })?,
        None => {
            let reachable: Vec<&Device> = ios.iter().copied().filter(|d| d.reachable()).collect();
            match reachable[..] {
                [one] => one,
                [] => return Err(DevicectlError::NoDevice { seen: seen() }),
                _ => {
                    return Err(DevicectlError::Ambiguous {
                        candidates: reachable.iter().map(|d| describe(d)).collect(),
                    })
                }
            }
        }
    };
    if !chosen.reachable() {
        return Err(DevicectlError::Unreachable { name: chosen.name().into() });
    }
    if chosen.developer_mode_off() {
        return Err(DevicectlError::DeveloperModeOff { name: chosen.name().into() });
    }
    Ok(chosen)
}
