//! Android device protocol for pocketbench: builds `adb` invocations.
//!
//! This crate speaks adb, not sweeps. The runner that pushes the probe,
//! runs it and pulls results arrives with the device-runner issue; what is
//! here is the part everything else depends on: `adb shell` joins its
//! arguments into **one** device-side shell command line, so every argument
//! must be quoted for the device's `/system/bin/sh` (mksh), or a path with a
//! space or a `;` in a model name runs something else.
//!
//! Nothing in this crate has run against a real phone yet.
#![deny(missing_docs)]

use std::ffi::OsString;

/// Quote one argument for a POSIX shell: wrap in single quotes, and close,
/// escape and reopen around every embedded single quote (`'` → `'\''`).
/// Arguments made only of safe characters are left bare for readability.
pub fn quote(arg: &str) -> String {
    let safe = !arg.is_empty() && arg.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_./=:,+@%".contains(&b));
    if safe {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

/// Join arguments into one device-side command line, each quoted.
pub fn shell_line<S: AsRef<str>>(args: &[S]) -> String {
    args.iter().map(|a| quote(a.as_ref())).collect::<Vec<_>>().join(" ")
}

/// One `adb` invocation against a chosen device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Adb {
    /// The adb binary (default `adb`; tests point it at a shim).
    pub program: OsString,
    /// `-s SERIAL` (a USB serial or `host:port` of a remote farm); empty: the only device.
    pub serial: String,
}

impl Adb {
    /// adb on `PATH`, for `serial`.
    pub fn new(serial: impl Into<String>) -> Self {
        Adb { program: "adb".into(), serial: serial.into() }
    }

    fn base(&self) -> Vec<OsString> {
        let mut v = Vec::new();
        if !self.serial.is_empty() {
            v.push("-s".into());
            v.push(self.serial.clone().into());
        }
        v
    }

    /// Arguments of `adb [-s S] shell 'arg1' 'arg2' …` (one quoted device command line).
    pub fn shell<S: AsRef<str>>(&self, args: &[S]) -> Vec<OsString> {
        let mut v = self.base();
        v.push("shell".into());
        v.push(shell_line(args).into());
        v
    }

    /// Arguments of `adb [-s S] push LOCAL REMOTE`.
    pub fn push(&self, local: &str, remote: &str) -> Vec<OsString> {
        let mut v = self.base();
        v.extend(["push".into(), local.into(), remote.into()]);
        v
    }

    /// Arguments of `adb [-s S] pull REMOTE LOCAL`.
    pub fn pull(&self, remote: &str, local: &str) -> Vec<OsString> {
        let mut v = self.base();
        v.extend(["pull".into(), remote.into(), local.into()]);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(quote("/data/local/tmp/probe"), "/data/local/tmp/probe");
        assert_eq!(quote("a b"), "'a b'");
        assert_eq!(quote("it's"), r"'it'\''s'");
        assert_eq!(quote(""), "''");
        assert_eq!(quote("x;rm -rf /"), "'x;rm -rf /'");
        assert_eq!(quote("$HOME"), "'$HOME'");
    }

    #[test]
    fn quoted_lines_survive_a_real_shell() {
        // The device shell is mksh; /bin/sh on the host follows the same POSIX quoting rules.
        let args = ["printf", "%s|", "a b", "it's", "$HOME", "x;y", "*"];
        let out = std::process::Command::new("sh").arg("-c").arg(shell_line(&args)).output().unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "a b|it's|$HOME|x;y|*|");
    }

    #[test]
    fn commands() {
        let adb = Adb::new("10.0.0.5:5555");
        let v: Vec<String> = adb
            .shell(&["taskset", "f0", "/data/local/tmp/probe", "--spec", "my spec.json"])
            .iter()
            .map(|s| s.to_string_lossy().into_owned())
            .collect();
        assert_eq!(v, ["-s", "10.0.0.5:5555", "shell", "taskset f0 /data/local/tmp/probe --spec 'my spec.json'"]);
        assert_eq!(Adb::new("").push("a", "/data/local/tmp/a").len(), 3);
    }
}
