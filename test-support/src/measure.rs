//! What the benchmarks measure around their runs: the spread of repeated
//! readings, and the machine's load around each measured command and
//! whether it was quiet: the one-minute load average (Linux,
//! /proc/loadavg) read just before and just after every command. It counts
//! the bench's own processes too, so a quiet machine is one where it never
//! exceeded the number of cores: above that, some runnable thread was
//! waiting for a CPU, and the times include that wait.

use std::fmt::Write;

/// Median, minimum and maximum.
pub fn spread(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    let median = if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    };
    (median, values[0], values[n - 1])
}

/// The one-minute load average now.
pub fn one_minute() -> f64 {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|l| l.split_whitespace().next()?.parse().ok())
        .unwrap_or(f64::NAN)
}

/// The one-minute load average just before and just after one command.
#[derive(serde::Serialize, Clone, Copy)]
pub struct Load {
    /// Just before.
    pub before: f64,
    /// Just after.
    pub after: f64,
}

/// Runs `command`, reading the load just before and just after it.
pub fn around<T>(command: impl FnOnce() -> T) -> (T, Load) {
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

/// This machine's cores, against which [`summary`] judges the load.
pub fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The report's account of the load on a machine of `cores` cores: its
/// spread before and after the commands, and the verdict with the rule it
/// follows.
pub fn summary(loads: &[Load], cores: usize) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn loads(readings: &[(f64, f64)]) -> Vec<Load> {
        readings
            .iter()
            .map(|&(before, after)| Load { before, after })
            .collect()
    }

    #[test]
    fn a_machine_never_above_its_cores_is_quiet() {
        assert_eq!(
            summary(&loads(&[(0.5, 1.5), (1.0, 2.0)]), 2),
            "before each command median 0.75 (0.50–1.00); after each command median 1.75 (1.50–2.00); quiet: never above the 2 cores"
        );
    }

    #[test]
    fn one_reading_above_the_cores_is_not_quiet_and_counted() {
        let text = summary(&loads(&[(1.0, 3.4), (1.5, 1.9)]), 2);
        assert!(
            text.ends_with("not quiet: above the 2 cores in 1 of 4 readings (peak 3.40), so threads waited for a CPU and the times include that wait"),
            "{text}"
        );
    }

    #[test]
    fn no_load_average_is_said_so() {
        assert_eq!(
            summary(&loads(&[(f64::NAN, 1.0)]), 2),
            "not measured (no /proc/loadavg)"
        );
    }
}
