//! Android device protocol for pocketbench: finds and runs the real `adb`
//! client, lists the devices it sees (with what to do about each state),
//! reads a phone's facts (`getprop`, `dumpsys battery`), and builds every
//! device-side command line quoted.
//!
//! This crate speaks adb, not sweeps. `adb shell` joins its arguments into
//! **one** device-side shell command line, so every argument must be quoted
//! for the device's `/system/bin/sh` (mksh), or a path with a space or a `;`
//! in a model name runs something else.
//!
//! What has run where: the parsers are tested on recorded output of Debian's
//! adb 1.0.41 and on outputs written to the formats of adb's and Android's
//! sources (each fixture names its source); the client is tested against the
//! real adb client driving an emulated adbd (`tests/support/adbd.rs`).
//! Nothing in this crate has run against a real phone yet.
#![deny(missing_docs)]

pub mod client;
pub mod devices;
pub mod facts;

pub use client::{find_adb, AdbError, Output};
pub use devices::{choose, parse_devices, Listed, State};

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
    /// The adb binary (default `adb`).
    pub program: OsString,
    /// `-s SERIAL` (a USB serial or `host:port` of a remote farm); empty: the only device.
    pub serial: String,
    /// `-P PORT`: the adb server's port (default: adb's own, 5037, or
    /// `ANDROID_ADB_SERVER_PORT`); tests use a private one.
    pub server_port: Option<u16>,
}

impl Adb {
    /// adb on `PATH`, for `serial`.
    pub fn new(serial: impl Into<String>) -> Self {
        Adb { program: "adb".into(), serial: serial.into(), server_port: None }
    }

    fn base(&self) -> Vec<OsString> {
        let mut v = Vec::new();
        if let Some(p) = self.server_port {
            v.push("-P".into());
            v.push(p.to_string().into());
        }
        if !self.serial.is_empty() {
            v.push("-s".into());
            v.push(self.serial.clone().into());
        }
        v
    }

    /// `-P PORT` alone, for server-wide commands (`devices`, `connect`,
    /// `kill-server`) that take no serial.
    pub fn server(&self) -> Vec<OsString> {
        self.server_port.map_or_else(Vec::new, |p| vec!["-P".into(), p.to_string().into()])
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

    /// adb from `$ADB` or `PATH` ([`find_adb`]), for `serial`.
    pub fn found(serial: impl Into<String>) -> Result<Self, AdbError> {
        Ok(Adb { program: find_adb()?.into_os_string(), serial: serial.into(), server_port: None })
    }

    /// Run adb with `args` (from [`Adb::shell`], [`Adb::push`], ...).
    pub fn call(&self, args: &[OsString], timeout: std::time::Duration) -> Result<Output, AdbError> {
        client::run(&self.program, args, timeout)
    }

    /// `adb devices -l`, parsed (the server's whole list, whatever the serial).
    pub fn devices(
        &self,
        timeout: std::time::Duration,
    ) -> Result<Result<Vec<Listed>, devices::DevicesError>, AdbError> {
        let mut args = self.server();
        args.extend(["devices".into(), "-l".into()]);
        let out = self.call(&args, timeout)?;
        Ok(parse_devices(&out.stdout))
    }

    /// `adb connect HOST:PORT` (a remote device: a farm session, wireless
    /// debugging). adb prints its verdict on stdout and exits 0 either way
    /// in older releases, so success is read from the text.
    pub fn connect(
        &self,
        host_port: &str,
        timeout: std::time::Duration,
    ) -> Result<Result<(), devices::NotReady>, AdbError> {
        let mut args = self.server();
        args.extend(["connect".into(), host_port.into()]);
        let out = self.call(&args, timeout)?;
        let text = format!("{}{}", out.stdout, out.stderr);
        let ok = out.code == 0 && (text.contains("connected to") || text.contains("already connected"));
        Ok(if ok { Ok(()) } else { Err(devices::NotReady(text.trim().to_string())) })
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
