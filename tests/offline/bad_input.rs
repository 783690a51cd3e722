//! The bad-input corpus (`tests/bad-input/`): every configuration there is
//! wrong in one way, and each CLI must reject it with a diagnostic that says
//! what is wrong, names the attribute and points at its line, at `validate`
//! or at the latest at `plan` (for new resources, with no reachable cluster),
//! without the plugin crashing.
//!
//! A case file starts with comments stating its expectation:
//!
//! ```hcl
//! # What is wrong, in words.
//! # expect: validate            (or plan: caught by validate or plan)
//! # path: taints[0].effect      (the diagnostic's attribute path)
//! # message: is not one of      (a key phrase of summary or detail)
//! # gap: line terraform: why   (optional: a known deficiency, see below)
//! resource "gpufleet_node_taint" "this" {
//!   ...
//!       effect = "Sometimes" # <- diagnostic
//! ```
//!
//! The marker ends the line the diagnostic is about. The CLIs cannot point
//! inside a nested object, so a diagnostic for an attribute in one points
//! at the object's attribute (or the list element holding it), and that is
//! asserted exactly (see [`expected_line`]).
//!
//! Checks, per case and CLI: `caught` (an error for the case at the
//! expected stage), `message` (one has the key phrase), `line` (that one
//! points at the expected line), `names-attribute` (its text, or the
//! source line the CLI quotes with it, names the attribute or map key). A `gap:` line records a check that fails today
//! (optionally for one CLI); the test fails if a recorded gap is fixed too,
//! so the list stays true. A plugin crash always fails.
//!
//! Speed: all cases run as modules of one workspace per CLI: one `validate`
//! for all of them, one `plan` for the plan-stage cases validate let
//! through, the two CLIs in parallel. No resource's checks depend on the
//! other resources of a run, so the cases do not disturb each other.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Instant;

use common::repo_root;
use common::terraform::{Cli, PROVIDER_VERSION, Workspace, clis, provider_block_for};
use common::unreachable_kubeconfig;
use gpufleet::framework::FrameworkProvider;
use gpufleet::protocol::provider::Provider;
use gpufleet::protocol::schema::{Attribute, AttributeType};

const MARKER: &str = "# <- diagnostic";
const CHECKS: &[&str] = &["caught", "message", "line", "names-attribute"];
/// Text in CLI output that means the plugin (or the CLI) crashed: a panic
/// in a request handler drops the gRPC stream, which the CLIs report as an
/// RPC error or a plugin that did not respond.
const CRASH_SIGNS: &[&str] = &[
    "panicked at",
    "plugin crashed",
    "Plugin did not respond",
    "The plugin encountered an error",
    "Plugin error",
    "rpc error",
    "CRASH",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Validate,
    Plan,
}

#[derive(Debug)]
struct Gap {
    check: String,
    /// `None`: every CLI.
    cli: Option<String>,
}

#[derive(Debug)]
struct Case {
    /// `fleet/zones-invalid-label-value`.
    name: String,
    source: String,
    stage: Stage,
    path: String,
    message: String,
    gaps: Vec<Gap>,
    /// 1-based line of the marker.
    marker_line: usize,
    /// 1-based first line of the top-level block holding the marker.
    block_line: usize,
    /// That block's own attributes (not nested ones) and their lines.
    block_attributes: BTreeMap<String, usize>,
}

impl Case {
    fn parse(name: String, source: String) -> Result<Case, String> {
        let mut header = BTreeMap::new();
        let mut gaps = Vec::new();
        for line in source.lines().take_while(|l| l.starts_with('#')) {
            let Some((key, value)) = line.trim_start_matches('#').trim().split_once(':') else {
                continue;
            };
            let value = value.trim().to_string();
            match key.trim() {
                "gap" => {
                    let spec = value.split(':').next().unwrap_or_default();
                    let mut words = spec.split_whitespace();
                    let check = words.next().unwrap_or_default().to_string();
                    if !CHECKS.contains(&check.as_str()) {
                        return Err(format!("gap names no check of {CHECKS:?}: {line}"));
                    }
                    gaps.push(Gap {
                        check,
                        cli: words.next().map(str::to_string),
                    });
                }
                key @ ("expect" | "path" | "message") => {
                    header.insert(key, value);
                }
                _ => {}
            }
        }
        let field = |key: &str| {
            header
                .get(key)
                .cloned()
                .filter(|v| !v.is_empty())
                .ok_or(format!("no `# {key}:` line"))
        };
        let stage = match field("expect")?.as_str() {
            "validate" => Stage::Validate,
            "plan" => Stage::Plan,
            other => return Err(format!("expect: {other:?} is neither validate nor plan")),
        };
        let markers: Vec<usize> = source
            .lines()
            .enumerate()
            .filter(|(_, l)| l.trim_end().ends_with(MARKER))
            .map(|(i, _)| i + 1)
            .collect();
        let [marker_line] = markers[..] else {
            return Err(format!(
                "needs exactly one `{MARKER}` line, has {}",
                markers.len()
            ));
        };
        let block_line = source
            .lines()
            .take(marker_line)
            .enumerate()
            .filter(|(_, l)| {
                ["resource ", "data ", "provider "]
                    .iter()
                    .any(|k| l.starts_with(k))
            })
            .map(|(i, _)| i + 1)
            .last()
            .ok_or("the marker is in no resource, data or provider block")?;
        let block_attributes = source
            .lines()
            .enumerate()
            .skip(block_line)
            .take_while(|(_, l)| !l.starts_with('}'))
            .filter_map(|(i, l)| {
                let attribute = l.strip_prefix("  ")?.split_once('=')?.0.trim();
                let plain = !l.starts_with("   ") && !attribute.is_empty();
                let word = attribute
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_');
                (plain && word).then(|| (attribute.to_string(), i + 1))
            })
            .collect();
        Ok(Case {
            name,
            stage,
            path: field("path")?,
            message: field("message")?,
            gaps,
            marker_line,
            block_line,
            block_attributes,
            source,
        })
    }

    /// The directory group (`fleet`, `provider`, ...).
    fn group(&self) -> &str {
        self.name.split('/').next().unwrap_or_default()
    }

    fn module(&self) -> String {
        format!("case_{}", self.name.replace(['/', '-'], "_"))
    }

    fn dir(&self) -> String {
        format!("cases/{}", self.name)
    }

    /// Attribute names along the path (`taints[0].effect` → taints, effect).
    fn attribute_steps(&self) -> Vec<&str> {
        let mut steps = Vec::new();
        let mut rest = self.path.as_str();
        while !rest.is_empty() {
            if let Some(inner) = rest.strip_prefix('[') {
                let end = if let Some(quoted) = inner.strip_prefix('"') {
                    quoted.find('"').map_or(inner.len(), |i| i + 2)
                } else {
                    inner.find(']').unwrap_or(inner.len())
                };
                rest = inner[end..].trim_start_matches(']');
            } else {
                let rest_start = rest.trim_start_matches('.');
                let end = rest_start.find(['.', '[']).unwrap_or(rest_start.len());
                steps.push(&rest_start[..end]);
                rest = &rest_start[end..];
            }
        }
        steps
    }

    /// The map key the path ends in, if any (`labels["a/b"]` → `a/b`).
    fn final_key(&self) -> Option<&str> {
        self.path
            .strip_suffix("\"]")
            .and_then(|p| p.rsplit_once("[\""))
            .map(|(_, key)| key)
    }

    fn has_gap(&self, check: &str, cli: &str) -> bool {
        self.gaps
            .iter()
            .any(|g| g.check == check && g.cli.as_deref().is_none_or(|c| c == cli))
    }
}

/// The line a CLI's diagnostic for `case` must start on.
///
/// Both CLIs resolve a path of one attribute (with an index or key after
/// it) to that attribute's expression, list element or map item: the
/// marker's line. A path into a nested attribute's object they cannot
/// follow (they would look its next attribute name up among the block's
/// own), so the provider sends the path up to the nested object or the
/// element holding it: an element is on the marker's line, a nested
/// object on its attribute's line (the block's first line when unset).
fn expected_line(case: &Case) -> usize {
    let steps = case.attribute_steps();
    let first = steps.first().copied().unwrap_or_default();
    let into_element = case.path[first.len()..].starts_with('[');
    if steps.len() > 1 && !into_element {
        case.block_attributes
            .get(first)
            .copied()
            .unwrap_or(case.block_line)
    } else {
        case.marker_line
    }
}

fn corpus_dir() -> PathBuf {
    repo_root().join("tests/bad-input")
}

fn load_cases() -> Vec<Case> {
    let mut files = Vec::new();
    let mut dirs = vec![corpus_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "tf") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut problems = Vec::new();
    let cases: Vec<Case> = files
        .iter()
        .filter_map(|file| {
            let name = file
                .strip_prefix(corpus_dir())
                .unwrap()
                .with_extension("")
                .to_string_lossy()
                .into_owned();
            let source = std::fs::read_to_string(file).unwrap();
            Case::parse(name.clone(), source)
                .map_err(|e| problems.push(format!("{name}: {e}")))
                .ok()
        })
        .collect();
    assert!(
        problems.is_empty(),
        "malformed cases:\n{}",
        problems.join("\n")
    );
    cases
}

#[derive(Debug, Clone)]
struct Found {
    summary: String,
    detail: String,
    line: Option<u64>,
    /// The source line the CLI quotes with the diagnostic.
    quoted: String,
}

impl Found {
    fn text(&self) -> String {
        format!("{}: {}", self.summary, self.detail)
    }
}

/// Error diagnostics by the case file they point into.
fn diagnostics_by_file(diagnostics: &[serde_json::Value]) -> BTreeMap<String, Vec<Found>> {
    let mut by_file: BTreeMap<String, Vec<Found>> = BTreeMap::new();
    for d in diagnostics.iter().filter(|d| d["severity"] == "error") {
        let file = d["range"]["filename"].as_str().unwrap_or_default();
        by_file.entry(file.to_string()).or_default().push(Found {
            summary: d["summary"].as_str().unwrap_or_default().to_string(),
            detail: d["detail"].as_str().unwrap_or_default().to_string(),
            line: d["range"]["start"]["line"].as_u64(),
            quoted: d["snippet"]["code"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        });
    }
    by_file
}

/// One CLI's verdict on the corpus: problems found, and timings.
struct Report {
    cli: String,
    problems: Vec<String>,
    by_stage: BTreeMap<&'static str, usize>,
    seconds: f64,
}

fn write_workspace(ws: &Workspace, cases: &[&Case]) {
    let kubeconfig = ws.path().join("unreachable-kubeconfig");
    std::fs::write(&kubeconfig, unreachable_kubeconfig()).unwrap();
    let versions = format!(
        "terraform {{\n  required_providers {{\n    gpufleet = {{\n      source  = \"gpufleet/gpufleet\"\n      version = \"{PROVIDER_VERSION}\"\n    }}\n  }}\n}}\n"
    );
    for case in cases {
        let dir = ws.path().join(case.dir());
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("main.tf"), &case.source).unwrap();
        std::fs::write(dir.join("versions.tf"), &versions).unwrap();
    }
    set_modules(ws, cases);
}

/// The root module: the provider on an unreachable cluster, and `cases` as modules.
fn set_modules(ws: &Workspace, cases: &[&Case]) {
    let kubeconfig = ws.path().join("unreachable-kubeconfig");
    let mut root = provider_block_for(&kubeconfig.to_string_lossy(), "");
    for case in cases {
        root += &format!(
            "module \"{}\" {{\n  source = \"./{}\"\n}}\n",
            case.module(),
            case.dir()
        );
    }
    std::fs::write(ws.path().join("main.tf"), root).unwrap();
}

fn crash_sign(output: &str) -> Option<&'static str> {
    CRASH_SIGNS.iter().copied().find(|s| output.contains(s))
}

fn run_corpus(cli: &Cli, cases: &[Case]) -> Report {
    let start = Instant::now();
    let mut problems = Vec::new();
    let mut ws = Workspace::new(cli);
    let all: Vec<&Case> = cases.iter().collect();
    write_workspace(&ws, &all);
    ws.init();

    let validate = ws.run(&["validate", "-json", "-no-color"]);
    if let Some(sign) = crash_sign(&(validate.stdout.clone() + &validate.stderr)) {
        problems.push(format!("validate crashed ({sign}):\n{}", validate.stderr));
    }
    let json: serde_json::Value = serde_json::from_str(&validate.stdout).unwrap_or_else(|e| {
        panic!(
            "{}: validate -json: {e}:\n{}\n{}",
            cli.name, validate.stdout, validate.stderr
        )
    });
    let at_validate = diagnostics_by_file(json["diagnostics"].as_array().unwrap());
    let file_of = |case: &Case| format!("{}/main.tf", case.dir());

    let to_plan: Vec<&Case> = cases
        .iter()
        .filter(|c| c.stage == Stage::Plan && !at_validate.contains_key(&file_of(c)))
        .collect();
    let mut at_plan = BTreeMap::new();
    if !to_plan.is_empty() {
        set_modules(&ws, &to_plan);
        let plan = ws.run(&["plan", "-json", "-no-color", "-input=false", "-lock=false"]);
        if let Some(sign) = crash_sign(&(plan.stdout.clone() + &plan.stderr)) {
            problems.push(format!("plan crashed ({sign}):\n{}", plan.stderr));
        }
        let diagnostics: Vec<serde_json::Value> = plan
            .stdout
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|m| m["type"] == "diagnostic")
            .map(|m| m["diagnostic"].clone())
            .collect();
        at_plan.extend(diagnostics_by_file(&diagnostics));
    }

    let mut by_stage = BTreeMap::new();
    for case in cases {
        let file = file_of(case);
        let (stage, found) = match (at_validate.get(&file), at_plan.get(&file)) {
            (Some(found), _) => ("validate", found.clone()),
            (None, Some(found)) => ("plan", found.clone()),
            (None, None) => ("not caught", Vec::new()),
        };
        *by_stage.entry(stage).or_insert(0) += 1;
        let failed = failed_checks(case, &found);
        let expected: BTreeSet<&str> = CHECKS
            .iter()
            .copied()
            .filter(|c| case.has_gap(c, cli.name))
            .collect();
        if failed != expected {
            let seen = if found.is_empty() {
                "no error diagnostic".to_string()
            } else {
                found
                    .iter()
                    .map(|f| format!("    line {:?}: {}", f.line, f.text()))
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            problems.push(format!(
                "{}: failed checks {failed:?}, recorded gaps {expected:?} (expected {:?} at line {} with {:?}); caught at {stage}:\n{seen}",
                case.name,
                case.path,
                expected_line(case),
                case.message,
            ));
        }
    }
    Report {
        cli: format!("{} {}", cli.name, cli.version),
        problems,
        by_stage,
        seconds: start.elapsed().as_secs_f64(),
    }
}

/// The checks `found` (the case's error diagnostics) fails.
fn failed_checks(case: &Case, found: &[Found]) -> BTreeSet<&'static str> {
    let mut failed = BTreeSet::new();
    if found.is_empty() {
        failed.insert("caught");
        return failed;
    }
    let phrase = case.message.to_lowercase();
    let matching: Vec<&Found> = found
        .iter()
        .filter(|f| f.text().to_lowercase().contains(&phrase))
        .collect();
    if matching.is_empty() {
        failed.insert("message");
        return failed;
    }
    let line = expected_line(case) as u64;
    if !matching.iter().any(|f| f.line == Some(line)) {
        failed.insert("line");
    }
    // Named in the text, or in the source line the CLI quotes under it
    // (for an attribute of the block itself, that line starts with its name).
    let attribute = case.attribute_steps().last().copied().unwrap_or_default();
    let names = |f: &&Found| {
        let text = f.text();
        let quoted = f.quoted.trim_start();
        text.contains(attribute)
            || case.final_key().is_some_and(|k| text.contains(k))
            || quoted
                .strip_prefix(attribute)
                .is_some_and(|rest| rest.trim_start().starts_with('='))
    };
    if !matching.iter().any(names) {
        failed.insert("names-attribute");
    }
    failed
}

#[test]
fn every_bad_input_fails_with_a_located_diagnostic_on_every_cli() {
    let cases = load_cases();
    let reports: Vec<Report> = std::thread::scope(|scope| {
        let runs: Vec<_> = clis()
            .iter()
            .map(|cli| scope.spawn(|| run_corpus(cli, &cases)))
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut problems = Vec::new();
    for report in &reports {
        eprintln!(
            "bad input: {} cases with {} in {:.1}s, caught at {:?}",
            cases.len(),
            report.cli,
            report.seconds,
            report.by_stage
        );
        problems.extend(
            report
                .problems
                .iter()
                .map(|p| format!("[{}] {p}", report.cli)),
        );
    }
    assert!(
        problems.is_empty(),
        "{} problems:\n{}",
        problems.len(),
        problems.join("\n\n")
    );
}

/// Every attribute a configuration can set, nested ones included, and every
/// top-level computed one (setting it is bad input too), is on the path of
/// a case.
#[test]
fn the_corpus_covers_every_attribute() {
    let cases = load_cases();
    assert!(cases.len() >= 150, "only {} cases", cases.len());
    // A case covers every attribute along its path.
    let covered: BTreeSet<(String, String)> = cases
        .iter()
        .flat_map(|c| {
            let steps = c.attribute_steps();
            (1..=steps.len())
                .map(|n| (c.group().to_string(), steps[..n].join(".")))
                .collect::<Vec<_>>()
        })
        .collect();
    let provider = FrameworkProvider::new(gpufleet::provider::Gpufleet);
    let schemas = provider.schemas();
    let group_of = |type_name: &str| type_name.trim_start_matches("gpufleet_").to_string();
    let mut missing = Vec::new();
    let mut groups = BTreeSet::new();
    let mut check = |group: String, attributes: &[Attribute]| {
        groups.insert(group.clone());
        for path in attribute_paths(attributes, "") {
            if !covered.contains(&(group.clone(), path.clone())) {
                missing.push(format!("{group}: {path}"));
            }
        }
    };
    check("provider".into(), &schemas.provider.attributes);
    for (name, schema) in schemas.resources.iter().chain(&schemas.data_sources) {
        check(group_of(name), &schema.attributes);
    }
    for case in &cases {
        if !groups.contains(case.group()) {
            missing.push(format!("{}: the directory names no schema", case.name));
        }
    }
    assert!(
        missing.is_empty(),
        "attributes without a bad-input case in tests/bad-input/:\n{}",
        missing.join("\n")
    );
}

fn attribute_paths(attributes: &[Attribute], prefix: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for attribute in attributes {
        let path = format!("{prefix}{}", attribute.name);
        paths.push(path.clone());
        let settable = attribute.flags.required || attribute.flags.optional;
        if let (AttributeType::Nested(_, nested), true) = (&attribute.ty, settable) {
            paths.extend(attribute_paths(nested, &format!("{path}.")));
        }
    }
    paths
}
