//! The machine's load around each measured command, and whether it was
//! quiet: the one-minute load average (Linux, /proc/loadavg) read just
//! before and just after every command. It counts the bench's own
//! processes too, so a quiet machine is one where it never exceeded the
//! number of cores: above that, some runnable thread was waiting for a CPU,
//! and the times include that wait.

use std::fmt::Write;

use serde::Serialize;

use crate::spread;

/// The one-minute load average now.
pub(crate) fn one_minute() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

#[derive(Serialize, Clone, Copy)]
pub(crate) struct Load {
    pub(crate) before: f64,
    pub(crate) after: f64,
}

/// Runs `command`, reading the load just before and just after it.
pub(crate) fn around<T>(command: impl FnOnce() -> T) -> (T, Load) {
    let before = one_minute();
    let value = command();
    (
        value,
        Load {
            before,
            after: one_minute(),
        },
    )
}

/// The report's account of the load: its spread before and after the
/// commands, and the verdict with the rule it follows.
pub(crate) fn summary(loads: &[Load]) -> String {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut text = String::new();
    let mut all = Vec::new();
    for (when, pick) in [
        ("before", (|l: &Load| l.before) as fn(&Load) -> f64),
        ("after", |l: &Load| l.after),
    ] {
        let mut values: Vec<f64> = loads.iter().map(pick).collect();
        all.extend_from_slice(&values);
        if values.is_empty() || values.iter().any(|v| v.is_nan()) {
            return "not measured (no /proc/loadavg)".into();
        }
        let (median, min, max) = spread(&mut values);
        write!(
            text,
            "{when} each command median {median:.2} ({min:.2}–{max:.2}); "
        )
        .unwrap();
    }
    let peak = all.iter().copied().fold(f64::MIN, f64::max);
    if peak <= cores as f64 {
        write!(text, "quiet: never above the {cores} cores").unwrap();
    } else {
        let over = all.iter().filter(|&&v| v > cores as f64).count();
        write!(
            text,
            "not quiet: above the {cores} cores in {over} of {} readings (peak {peak:.2}), so threads waited for a CPU and the times include that wait",
            all.len()
        )
        .unwrap();
    }
    text
}
