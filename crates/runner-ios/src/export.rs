//! What the readers of other tools' exports share: a located error (file,
//! line and column where the format gives them, the key or column, what is
//! wrong) and JSON read with the path to a wrong value.

use serde::de::DeserializeOwned;

/// A file another tool wrote (xcresulttool, xctrace, pymobiledevice3) that
/// cannot be read as what it should be.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}{}: {}{message}", at(*.line, *.column), keyed(.key))]
pub struct ExportError {
    /// The file, as the user named it.
    pub file: String,
    /// 1-based line, where the format tells.
    pub line: Option<usize>,
    /// 1-based column, where the format tells.
    pub column: Option<usize>,
    /// The key, field or column at fault (empty: the whole file).
    pub key: String,
    /// What is wrong, and what to do where that is known.
    pub message: String,
}

fn at(line: Option<usize>, column: Option<usize>) -> String {
    match (line, column) {
        (Some(l), Some(c)) => format!(":{l}:{c}"),
        (Some(l), None) => format!(":{l}"),
        _ => String::new(),
    }
}

fn keyed(key: &str) -> String {
    if key.is_empty() {
        String::new()
    } else {
        format!("{key}: ")
    }
}

impl ExportError {
    /// An error about the whole file, or a key of it, without a position.
    pub fn new(file: &str, key: impl Into<String>, message: impl Into<String>) -> ExportError {
        ExportError { file: file.to_string(), line: None, column: None, key: key.into(), message: message.into() }
    }

    /// The same error at a line and column.
    pub fn at(mut self, line: usize, column: usize) -> ExportError {
        self.line = Some(line);
        self.column = Some(column);
        self
    }
}

/// `text` (from `file`) as a `T`: a wrong value is named by its path
/// (`[0].testRuns[1].metrics`), a truncated or broken file by the line and
/// column where reading stopped.
pub fn json<T: DeserializeOwned>(file: &str, text: &str) -> Result<T, ExportError> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let key = if path == "." { String::new() } else { path };
        let message = match inner.classify() {
            serde_json::error::Category::Eof => format!("the file ends too early (truncated?): {inner}"),
            _ => inner.to_string(),
        };
        ExportError::new(file, key, message).at(inner.line(), inner.column())
    })?;
    de.end().map_err(|e| ExportError::new(file, "", format!("more after the end: {e}")).at(e.line(), e.column()))?;
    Ok(value)
}
