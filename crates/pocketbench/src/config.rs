//! Loading TOML files into typed structs with errors that name the file, line,
//! column and key path (the key path comes from `serde_path_to_error`, as in
//! nextest's config loading).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

/// A configuration file could not be read or is invalid.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub struct ConfigError {
    /// The file (or built-in name).
    pub file: PathBuf,
    /// 1-based line, when known.
    pub line: Option<usize>,
    /// 1-based column, when known.
    pub column: Option<usize>,
    /// Dotted key path, when known (`space.layers`).
    pub key: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": {}", self.message)?;
        if let Some(k) = &self.key {
            write!(f, " (at key `{k}`)")?;
        }
        Ok(())
    }
}

impl ConfigError {
    /// An error about the file as a whole (or a key without a position).
    pub fn new(file: &Path, key: Option<String>, message: impl Into<String>) -> Self {
        ConfigError { file: file.to_path_buf(), line: None, column: None, key, message: message.into() }
    }
}

/// Read and parse a TOML file.
pub fn load<T: DeserializeOwned>(path: &Path) -> Result<T, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError::new(path, None, format!("cannot read: {e}")))?;
    parse(path, &text)
}

/// Parse TOML text; `path` is used in messages only.
pub fn parse<T: DeserializeOwned>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let de = toml::Deserializer::new(text);
    serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let inner = e.into_inner();
        let (line, column) = match inner.span() {
            Some(span) => {
                let (l, c) = line_col(text, span.start);
                (Some(l), Some(c))
            }
            None => (None, None),
        };
        ConfigError {
            file: path.to_path_buf(),
            line,
            column,
            key: (key != "." && !key.is_empty()).then_some(key),
            message: inner.message().trim().replace('\n', ": "),
        }
    })
}

/// Where a dotted key (`engine.threads`, `calibration[2].value`) is written
/// in TOML `text`: its 1-based line and column (the value's, else the key's
/// table). None where the text does not parse or has no such key.
pub fn position_of(text: &str, key: &str) -> Option<(usize, usize)> {
    let doc = toml_edit::ImDocument::parse(text).ok()?;
    let mut item = doc.as_item();
    let mut span = None;
    for part in key.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((n, rest)) => (n, rest.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let next = match item.get(name) {
            Some(next) => next,
            None => break,
        };
        item = next;
        span = item.span().or(span);
        if let Some(i) = index {
            match item.get(i) {
                Some(t) => {
                    item = t;
                    span = item.span().or(span);
                }
                None => break,
            }
        }
    }
    // A parameter written as a table (`[model.x]` with `value = ...`) is
    // wrong in its value, not its header.
    if let Some(v) = item.as_table_like().and_then(|t| t.get("value")).and_then(|v| v.span()) {
        span = Some(v);
    }
    span.map(|r| line_col(text, r.start))
}

fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.len(), |i| before.len() - i - 1) + 1;
    (line, col)
}

/// Deserialize an `f64` that must be finite (TOML allows `nan` and `inf`),
/// for plain number fields: `#[serde(deserialize_with = "crate::config::finite")]`.
pub fn finite<'de, D: serde::Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    let v = <f64 as serde::Deserialize>::deserialize(d)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(serde::de::Error::custom(format!("`{v}` is not a finite number")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Top {
        inner: Inner,
    }
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Inner {
        size: crate::units::ByteSize,
    }

    #[test]
    fn names_file_line_column_and_key() {
        let e = parse::<Top>(Path::new("x.toml"), "[inner]\nsize = \"3 Mb\"\n").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert_eq!(e.key.as_deref(), Some("inner.size"));
        assert!(e.to_string().starts_with("x.toml:2:8: "), "{e}");
        assert!(e.message.contains("unknown unit `Mb`"), "{e}");
        let e = parse::<Top>(Path::new("x.toml"), "[inner]\nsize = \"3 MB\"\nsise = 1\n").unwrap_err();
        assert_eq!((e.line, e.column), (Some(3), Some(1)));
        assert!(e.message.starts_with("unknown field `sise`"), "{e}");
    }

    #[test]
    fn a_key_is_found_where_it_is_written() {
        let text = "[device]\nid = \"x\"\n\n[engine]\nname = \"e\"\nthreads = 0\n\n[[calibration]]\nvalue = 1\n\n[[calibration]]\nvalue = -2\n";
        assert_eq!(position_of(text, "engine.threads"), Some((6, 11)));
        assert_eq!(position_of(text, "calibration[1].value"), Some((12, 9)));
        assert_eq!(position_of(text, "engine").map(|p| p.0), Some(4));
        // A key that is not written (a default): its table, else nothing.
        assert_eq!(position_of(text, "engine.kv-bits").map(|p| p.0), Some(4));
        assert_eq!(position_of(text, "facts.battery"), None);
        assert_eq!(position_of("not toml [", "engine"), None);
    }

    #[test]
    fn syntax_errors_have_positions() {
        let e = parse::<Top>(Path::new("x.toml"), "[inner\n").unwrap_err();
        assert_eq!(e.line, Some(1));
    }
}
