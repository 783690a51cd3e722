//! One CLI command, timed, with its provider processes watched from /proc:
//! peak resident memory (VmHWM), CPU time and TCP connections of every
//! plugin it starts.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How often /proc is read while a command runs.
const POLL: Duration = Duration::from_millis(5);

pub(crate) struct Outcome {
    pub(crate) wall: Duration,
    pub(crate) exit_code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    /// Largest VmHWM of any plugin process the command started, KiB.
    pub(crate) provider_peak_kib: u64,
    /// CPU time (user + system) of all plugin processes, as last seen.
    pub(crate) provider_cpu: Duration,
    pub(crate) provider_launches: usize,
    /// TCP connections the plugin processes held, counted once each: the
    /// plugin serves Terraform on a unix socket, so these are its
    /// connections to the API server.
    pub(crate) provider_connections: usize,
}

#[derive(Default)]
struct Seen {
    peak_kib: u64,
    cpu_ticks: u64,
    /// Inodes of the TCP sockets seen open.
    connections: HashSet<u64>,
}

/// Runs `cli args` in `dir` with `env`, polling the children whose
/// executable is a `terraform-provider-*` plugin.
pub(crate) fn run(cli: &Path, args: &[&str], dir: &Path, env: &[(&str, String)]) -> Outcome {
    let mut command = Command::new(cli);
    command
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1")
        .env("TF_INPUT", "0")
        .env_remove("TF_LOG");
    for (k, v) in env {
        command.env(k, v);
    }
    let started = Instant::now();
    let child = command
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", cli.display()));
    let pid = child.id();
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let done = done.clone();
        std::thread::spawn(move || {
            let mut seen: HashMap<u32, Seen> = HashMap::new();
            while !done.load(Ordering::Relaxed) {
                for plugin in plugin_children(pid) {
                    let entry = seen.entry(plugin).or_default();
                    if let Some((hwm, ticks)) = usage(plugin) {
                        entry.peak_kib = entry.peak_kib.max(hwm);
                        entry.cpu_ticks = entry.cpu_ticks.max(ticks);
                    }
                    entry.connections.extend(tcp_connections(plugin));
                }
                std::thread::sleep(POLL);
            }
            seen
        })
    };
    let output = child.wait_with_output().expect("wait for the CLI");
    let wall = started.elapsed();
    done.store(true, Ordering::Relaxed);
    let seen = watcher.join().unwrap();
    let ticks_per_second = 100; // USER_HZ on Linux
    Outcome {
        wall,
        exit_code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        provider_peak_kib: seen.values().map(|s| s.peak_kib).max().unwrap_or(0),
        provider_cpu: Duration::from_millis(
            seen.values().map(|s| s.cpu_ticks).sum::<u64>() * 1000 / ticks_per_second,
        ),
        provider_launches: seen.len(),
        provider_connections: seen.values().map(|s| s.connections.len()).sum(),
    }
}

/// Direct children of `pid` (from every thread's `children` list) that run a plugin.
fn plugin_children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.flatten() {
        let Ok(children) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            let comm = std::fs::read_to_string(format!("/proc/{child}/comm")).unwrap_or_default();
            // comm holds the first 15 bytes of the executable's name.
            if comm.starts_with("terraform-prov") {
                found.push(child);
            }
        }
    }
    found
}

/// (VmHWM in KiB, utime + stime in ticks) of a running process.
fn usage(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let hwm = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some((hwm, ticks))
}

/// Inodes of the connected (not listening) TCP sockets `pid` has open.
fn tcp_connections(pid: u32) -> Vec<u64> {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let sockets: HashSet<u64> = fds
        .flatten()
        .filter_map(|fd| {
            let target = std::fs::read_link(fd.path()).ok()?;
            target
                .to_str()?
                .strip_prefix("socket:[")?
                .strip_suffix(']')?
                .parse()
                .ok()
        })
        .collect();
    if sockets.is_empty() {
        return Vec::new();
    }
    let mut found = Vec::new();
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).unwrap_or_default();
        // sl local_address rem_address st ... inode: the state is field 3
        // (0A is LISTEN), the inode field 9.
        for fields in text
            .lines()
            .skip(1)
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
        {
            if let (Some(&state), Some(inode)) = (fields.get(3), fields.get(9))
                && state != "0A"
                && let Ok(inode) = inode.parse()
                && sockets.contains(&inode)
            {
                found.push(inode);
            }
        }
    }
    found
}
