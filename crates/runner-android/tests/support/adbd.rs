//! An emulated Android device for tests: a small adbd that speaks the adb
//! wire protocol over TCP on 127.0.0.1, so that the **real** adb client
//! (`adb connect 127.0.0.1:PORT`, `adb -s … shell/push/pull`) drives it.
//!
//! It is test code, written from adb's protocol documents
//! (packages/modules/adb `protocol.txt`, `SERVICES.TXT`, `SYNC.TXT`,
//! `shell_protocol.h`): packets of a 24-byte header (command, arg0, arg1,
//! payload length, payload byte sum, command ^ 0xffffffff) and a payload;
//! `CNXN` with a `device::` banner (or `AUTH` tokens, never accepted, for an
//! unauthorized phone); streams by `OPEN`/`OKAY`/`WRTE`/`CLSE` with one
//! write in flight per stream; the `shell,v2` service (stdout, stderr and
//! exit packets), the legacy `shell:` service, and `sync:` (STAT, LIST,
//! SEND, RECV, QUIT).
//!
//! Commands run under Debian's `mksh` (Android's `/system/bin/sh`) in a
//! temporary device root: `/data/local/tmp` and `/sys` in command lines and
//! file paths are mapped into it (by text: a literal `/sys/` inside a quoted
//! argument is mapped too), and `POCKETBENCH_SYSFS_ROOT` names the root's
//! `sys` parent, so a test writes the fake power_supply and thermal files the
//! commands read.

#![allow(dead_code)]

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const A_CNXN: u32 = 0x4e58_4e43;
const A_AUTH: u32 = 0x4854_5541;
const A_OPEN: u32 = 0x4e45_504f;
const A_OKAY: u32 = 0x5941_4b4f;
const A_CLSE: u32 = 0x4553_4c43;
const A_WRTE: u32 = 0x4554_5257;
const A_VERSION: u32 = 0x0100_0001;
const MAX_PAYLOAD: u32 = 256 * 1024;
const AUTH_TOKEN: u32 = 1;

/// What the emulated phone is.
#[derive(Debug, Clone)]
pub struct Phone {
    /// ro.product.name.
    pub product: String,
    /// ro.product.model.
    pub model: String,
    /// ro.product.device.
    pub device: String,
    /// Whether it accepts this computer (false: it answers with AUTH tokens
    /// forever, as a phone whose user has not tapped "Allow").
    pub authorized: bool,
    /// ro.product.cpu.abi: this host's architecture by default, since the
    /// emulated phone runs host executables.
    pub abi: String,
    /// Extra environment of every command the phone runs (a test's fault
    /// injection, as a phone's own environment would carry it).
    pub env: Vec<(String, String)>,
}

impl Default for Phone {
    fn default() -> Self {
        Phone {
            product: "pocket_emu".into(),
            model: "Pocket Emulated Phone".into(),
            device: "pocketemu".into(),
            authorized: true,
            abi: if cfg!(target_arch = "aarch64") { "arm64-v8a" } else { "x86_64" }.into(),
            env: Vec::new(),
        }
    }
}

/// A running emulated device.
pub struct Adbd {
    /// Its TCP port on 127.0.0.1.
    pub port: u16,
    /// The device root (`/data/local/tmp` is `root/data/local/tmp`).
    pub root: PathBuf,
    dead: Arc<AtomicBool>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
    _dir: tempfile::TempDir,
}

impl Adbd {
    /// Start one, listening on a free port.
    pub fn start(phone: Phone) -> std::io::Result<Adbd> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("device");
        for d in ["data/local/tmp", "sys/class/power_supply", "sys/class/thermal", "proc"] {
            std::fs::create_dir_all(root.join(d))?;
        }
        // Android's `getprop`, in its `[name]: [value]` format, first on PATH.
        let bin = root.join("system/bin");
        std::fs::create_dir_all(&bin)?;
        let props = [
            ("ro.product.manufacturer", "pocketbench"),
            ("ro.product.model", phone.model.as_str()),
            ("ro.product.name", phone.product.as_str()),
            ("ro.product.device", phone.device.as_str()),
            ("ro.product.cpu.abi", phone.abi.as_str()),
            ("ro.build.version.release", "15"),
            ("ro.build.version.sdk", "35"),
            ("ro.soc.model", "emulated"),
        ];
        let body: String = props.iter().map(|(k, v)| format!("echo '[{k}]: [{v}]'\n")).collect();
        std::fs::write(bin.join("getprop"), format!("#!/bin/sh\n{body}"))?;
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(bin.join("getprop"), std::fs::Permissions::from_mode(0o755))?;
        }
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let port = listener.local_addr()?.port();
        let dead = Arc::new(AtomicBool::new(false));
        let sockets = Arc::new(Mutex::new(Vec::new()));
        let (d, s, r) = (dead.clone(), sockets.clone(), root.clone());
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                if d.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                if let Ok(c) = conn.try_clone() {
                    s.lock().unwrap().push(c);
                }
                let (phone, root, dead) = (phone.clone(), r.clone(), d.clone());
                std::thread::spawn(move || {
                    let _ = serve(conn, &phone, &root, &dead);
                });
            }
        });
        Ok(Adbd { port, root, dead, sockets, _dir: dir })
    }

    /// `127.0.0.1:PORT`, the serial adb gives it.
    pub fn serial(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// A path inside the device root.
    pub fn path(&self, device_path: &str) -> PathBuf {
        self.root.join(device_path.trim_start_matches('/'))
    }

    /// Write a device file (for example a fake sysfs value).
    pub fn write(&self, device_path: &str, contents: &str) {
        let p = self.path(device_path);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, contents).unwrap();
    }

    /// The phone drops off: every connection is cut and no new one accepted.
    pub fn kill(&self) {
        self.dead.store(true, Ordering::SeqCst);
        for s in self.sockets.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
        // Wake the accept loop so it sees `dead`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl Drop for Adbd {
    fn drop(&mut self) {
        self.kill();
    }
}

struct Packet {
    cmd: u32,
    arg0: u32,
    arg1: u32,
    data: Vec<u8>,
}

fn read_packet(r: &mut impl Read) -> std::io::Result<Packet> {
    let mut h = [0u8; 24];
    r.read_exact(&mut h)?;
    let w = |i: usize| u32::from_le_bytes(h[i * 4..i * 4 + 4].try_into().unwrap());
    let (cmd, len, magic) = (w(0), w(3) as usize, w(5));
    if magic != cmd ^ 0xffff_ffff || len > 16 << 20 {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "bad adb packet header"));
    }
    let mut data = vec![0u8; len];
    r.read_exact(&mut data)?;
    Ok(Packet { cmd, arg0: w(1), arg1: w(2), data })
}

type Writer = Arc<Mutex<TcpStream>>;

fn send(w: &Writer, cmd: u32, arg0: u32, arg1: u32, data: &[u8]) -> std::io::Result<()> {
    let sum: u32 = data.iter().map(|b| *b as u32).fold(0u32, u32::wrapping_add);
    let mut buf = Vec::with_capacity(24 + data.len());
    for v in [cmd, arg0, arg1, data.len() as u32, sum, cmd ^ 0xffff_ffff] {
        buf.extend_from_slice(&v.to_le_bytes());
    }
    buf.extend_from_slice(data);
    w.lock().unwrap().write_all(&buf)
}

/// What the connection's reader hands a stream.
enum ToStream {
    /// The host acknowledged our last WRTE.
    Okay,
    /// The host wrote data.
    Data(Vec<u8>),
    /// The host closed the stream.
    Close,
}

fn serve(conn: TcpStream, phone: &Phone, root: &Path, dead: &AtomicBool) -> std::io::Result<()> {
    let writer: Writer = Arc::new(Mutex::new(conn.try_clone()?));
    let mut reader = conn;
    let streams: Arc<Mutex<HashMap<u32, Sender<ToStream>>>> = Arc::default();
    let next_id = Arc::new(AtomicU32::new(1));
    loop {
        let p = read_packet(&mut reader)?;
        if dead.load(Ordering::SeqCst) {
            return Ok(());
        }
        match p.cmd {
            A_CNXN if phone.authorized => {
                let banner = format!(
                    "device::ro.product.name={};ro.product.model={};ro.product.device={};features=shell_v2,cmd",
                    phone.product, phone.model, phone.device
                );
                send(&writer, A_CNXN, A_VERSION, MAX_PAYLOAD, banner.as_bytes())?;
            }
            // An unauthorized phone: a fresh token for every attempt; the
            // host's public key (type 3) goes to a prompt nobody accepts.
            A_CNXN | A_AUTH if p.cmd == A_CNXN || p.arg0 != 3 => {
                send(&writer, A_AUTH, AUTH_TOKEN, 0, &[0x5a; 20])?;
            }
            A_OPEN => {
                let service = String::from_utf8_lossy(&p.data).trim_end_matches('\0').to_string();
                let host_id = p.arg0;
                let my_id = next_id.fetch_add(1, Ordering::SeqCst);
                let (tx, rx) = channel();
                streams.lock().unwrap().insert(my_id, tx);
                let (w, root, streams, env) = (writer.clone(), root.to_path_buf(), streams.clone(), phone.env.clone());
                std::thread::spawn(move || {
                    let _ = stream(&w, my_id, host_id, &service, &root, &env, rx);
                    streams.lock().unwrap().remove(&my_id);
                });
            }
            A_OKAY | A_WRTE | A_CLSE => {
                let to = streams.lock().unwrap().get(&p.arg1).cloned();
                let Some(to) = to else {
                    if p.cmd == A_WRTE {
                        send(&writer, A_CLSE, 0, p.arg0, &[])?;
                    }
                    continue;
                };
                let msg = match p.cmd {
                    A_OKAY => ToStream::Okay,
                    A_WRTE => {
                        send(&writer, A_OKAY, p.arg1, p.arg0, &[])?;
                        ToStream::Data(p.data)
                    }
                    _ => ToStream::Close,
                };
                let _ = to.send(msg);
            }
            _ => {}
        }
    }
}

/// A stream's side of the flow control: one WRTE in flight, then wait for
/// the host's OKAY; host data that arrives meanwhile is kept.
struct Stream<'a> {
    w: &'a Writer,
    me: u32,
    host: u32,
    rx: Receiver<ToStream>,
    pending: Vec<u8>,
    closed: bool,
}

impl Stream<'_> {
    fn write(&mut self, data: &[u8]) -> std::io::Result<()> {
        for chunk in data.chunks(MAX_PAYLOAD as usize) {
            send(self.w, A_WRTE, self.me, self.host, chunk)?;
            loop {
                match self.rx.recv_timeout(Duration::from_secs(30)) {
                    Ok(ToStream::Okay) => break,
                    Ok(ToStream::Data(d)) => self.pending.extend(d),
                    Ok(ToStream::Close) | Err(_) => {
                        self.closed = true;
                        return Err(std::io::ErrorKind::BrokenPipe.into());
                    }
                }
            }
        }
        Ok(())
    }

    /// At least `n` bytes of host data (or what is left when it closes).
    fn fill(&mut self, n: usize) -> bool {
        while self.pending.len() < n && !self.closed {
            match self.rx.recv_timeout(Duration::from_secs(30)) {
                Ok(ToStream::Data(d)) => self.pending.extend(d),
                Ok(ToStream::Okay) => {}
                Ok(ToStream::Close) | Err(_) => self.closed = true,
            }
        }
        self.pending.len() >= n
    }

    fn take(&mut self, n: usize) -> Option<Vec<u8>> {
        self.fill(n).then(|| self.pending.drain(..n).collect())
    }

    fn close(&self) {
        let _ = send(self.w, A_CLSE, self.me, self.host, &[]);
    }
}

fn stream(
    w: &Writer,
    me: u32,
    host: u32,
    service: &str,
    root: &Path,
    env: &[(String, String)],
    rx: Receiver<ToStream>,
) -> std::io::Result<()> {
    let mut s = Stream { w, me, host, rx, pending: Vec::new(), closed: false };
    if let Some(rest) = service.strip_prefix("shell,v2,") {
        // Options (`raw`, `pty`, `TERM=…`) before the first `:`.
        let cmd = rest.split_once(':').map_or("", |(_, c)| c);
        send(w, A_OKAY, me, host, &[])?;
        let out = run(cmd, root, env)?;
        let mut packets = Vec::new();
        for (id, bytes) in [(1u8, &out.stdout), (2u8, &out.stderr)] {
            if !bytes.is_empty() {
                packets.push(id);
                packets.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
                packets.extend_from_slice(bytes);
            }
        }
        packets.extend_from_slice(&[3, 1, 0, 0, 0, out.status.code().unwrap_or(255) as u8]);
        s.write(&packets)?;
    } else if let Some(cmd) = service.strip_prefix("shell:") {
        send(w, A_OKAY, me, host, &[])?;
        let out = run(cmd, root, env)?;
        let mut all = out.stdout;
        all.extend(out.stderr);
        s.write(&all)?;
    } else if service == "sync:" {
        send(w, A_OKAY, me, host, &[])?;
        sync(&mut s, root)?;
    } else {
        // Unknown service: refuse it the way adbd does, by closing.
        send(w, A_CLSE, 0, host, &[])?;
        return Ok(());
    }
    s.close();
    Ok(())
}

/// Device paths and commands mapped into the device root.
fn map(text: &str, root: &Path) -> String {
    let r = root.display().to_string();
    text.replace("/data/local/tmp", &format!("{r}/data/local/tmp")).replace("/sys/", &format!("{r}/sys/"))
}

fn run(cmd: &str, root: &Path, env: &[(String, String)]) -> std::io::Result<std::process::Output> {
    std::process::Command::new("mksh")
        .envs(env.iter().map(|(k, v)| (k, v)))
        .arg("-c")
        .arg(map(cmd, root))
        .current_dir(root)
        .env("POCKETBENCH_SYSFS_ROOT", root)
        .env("PATH", format!("{}:{}", root.join("system/bin").display(), std::env::var("PATH").unwrap_or_default()))
        .stdin(std::process::Stdio::null())
        .output()
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
}

fn sync(s: &mut Stream, root: &Path) -> std::io::Result<()> {
    let reply = |id: &[u8; 4], fields: &[u32], tail: &[u8]| {
        let mut v = id.to_vec();
        for f in fields {
            v.extend_from_slice(&f.to_le_bytes());
        }
        v.extend_from_slice(tail);
        v
    };
    let fail = |msg: &str| reply(b"FAIL", &[msg.len() as u32], msg.as_bytes());
    loop {
        let Some(head) = s.take(8) else { return Ok(()) };
        let (id, len) = (&head[..4], u32_at(&head, 4) as usize);
        let Some(arg) = s.take(len) else { return Ok(()) };
        let arg = String::from_utf8_lossy(&arg).to_string();
        match id {
            b"STAT" => {
                let meta = std::fs::metadata(map(&arg, root));
                let (mode, size, mtime) = match meta {
                    Ok(m) => {
                        use std::os::unix::fs::MetadataExt;
                        (m.mode(), m.size() as u32, m.mtime() as u32)
                    }
                    Err(_) => (0, 0, 0),
                };
                s.write(&reply(b"STAT", &[mode, size, mtime], &[]))?;
            }
            b"LIST" => {
                let mut out = Vec::new();
                if let Ok(rd) = std::fs::read_dir(map(&arg, root)) {
                    for e in rd.flatten() {
                        use std::os::unix::fs::MetadataExt;
                        let m = e.metadata()?;
                        let name = e.file_name().to_string_lossy().to_string();
                        out.extend(reply(
                            b"DENT",
                            &[m.mode(), m.size() as u32, m.mtime() as u32, name.len() as u32],
                            name.as_bytes(),
                        ));
                    }
                }
                out.extend(reply(b"DONE", &[0, 0, 0, 0], &[]));
                s.write(&out)?;
            }
            b"SEND" => {
                let (path, mode) = arg.rsplit_once(',').unwrap_or((&arg, "420"));
                let mut data = Vec::new();
                let ok = loop {
                    let Some(h) = s.take(8) else { return Ok(()) };
                    let n = u32_at(&h, 4) as usize;
                    match &h[..4] {
                        b"DATA" => match s.take(n) {
                            Some(d) => data.extend(d),
                            None => return Ok(()),
                        },
                        b"DONE" => break true,
                        _ => break false,
                    }
                };
                let target = PathBuf::from(map(path, root));
                let written =
                    ok && target.parent().is_some_and(|p| p.is_dir()) && std::fs::write(&target, &data).is_ok() && {
                        use std::os::unix::fs::PermissionsExt;
                        let mode = mode.parse::<u32>().unwrap_or(0o644) & 0o7777;
                        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(mode)).is_ok()
                    };
                if written {
                    s.write(&reply(b"OKAY", &[0], &[]))?;
                } else {
                    s.write(&fail(&format!("couldn't create file: {path}")))?;
                }
            }
            b"RECV" => match std::fs::read(map(&arg, root)) {
                Ok(data) => {
                    let mut out = Vec::new();
                    for chunk in data.chunks(64 * 1024) {
                        out.extend(reply(b"DATA", &[chunk.len() as u32], chunk));
                    }
                    out.extend(reply(b"DONE", &[0], &[]));
                    s.write(&out)?;
                }
                Err(e) => s.write(&fail(&format!("{arg}: {e}")))?,
            },
            b"QUIT" => return Ok(()),
            _ => {
                s.write(&fail("unknown sync request"))?;
                return Ok(());
            }
        }
    }
}
