//! A soak's outputs: `soak.json`, the record itself (data first), then
//! `soak.html` rendered from that file as read back, so the page shows
//! exactly what is stored and can be rendered again from it.

use std::path::{Path, PathBuf};

use super::{write_through, ReportError};
use crate::record::Record;

/// The data file.
pub const DATA: &str = "soak.json";
/// The page.
pub const PAGE: &str = "soak.html";

/// Write `record` as `dir/soak.json`, then render `dir/soak.html` from it;
/// the paths written, in that order.
pub fn write(dir: &Path, record: &Record) -> Result<Vec<PathBuf>, crate::Error> {
    std::fs::create_dir_all(dir).map_err(|source| ReportError::Io { path: dir.to_path_buf(), source })?;
    let data = dir.join(DATA);
    write_through(&data, |w| {
        serde_json::to_writer_pretty(&mut *w, record).map_err(std::io::Error::other)?;
        w.write_all(b"\n")
    })
    .map_err(|source| ReportError::Io { path: data.clone(), source })?;
    Ok(vec![data, render(dir)?])
}

/// Render `dir/soak.html` from `dir/soak.json`.
pub fn render(dir: &Path) -> Result<PathBuf, crate::Error> {
    let data = dir.join(DATA);
    let text = std::fs::read_to_string(&data).map_err(|source| ReportError::Io { path: data.clone(), source })?;
    let record: Record = serde_json::from_str(&text)
        .map_err(|e| ReportError::Parse { path: data.clone(), message: format!("not a soak record: {e}") })?;
    let html = super::html::soak::page(&record).map_err(|message| ReportError::Render { what: PAGE, message })?;
    let page = dir.join(PAGE);
    write_through(&page, |w| w.write_all(html.as_bytes()))
        .map_err(|source| ReportError::Io { path: page.clone(), source })?;
    Ok(page)
}
