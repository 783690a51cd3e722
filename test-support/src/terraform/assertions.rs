//! Configurations that must be refused: the one error, and the line of
//! main.tf the CLI places it at.

use super::{Cli, Workspace};

/// Where a CLI places a diagnostic: the line of main.tf its range starts on.
#[derive(Clone, Copy, Debug)]
pub enum At<'a> {
    /// The one line of main.tf that contains this text.
    Line(&'a str),
    /// The header line of the configuration's one resource or data block.
    Block,
}

impl At<'_> {
    /// The 1-based line of `main_tf` this names.
    fn line(&self, main_tf: &str) -> usize {
        let is_header = |l: &str| l.starts_with("resource \"") || l.starts_with("data \"");
        let matching: Vec<usize> = main_tf
            .lines()
            .enumerate()
            .filter(|(_, l)| match self {
                At::Line(text) => l.contains(text),
                At::Block => is_header(l),
            })
            .map(|(i, _)| i + 1)
            .collect();
        assert_eq!(
            matching.len(),
            1,
            "{self:?} must name exactly one line of:\n{main_tf}"
        );
        matching[0]
    }
}

/// `validate` of `body` (after the provider preamble) must fail with one
/// error, whose summary or detail contains `message` (which names the
/// attribute path), placed by the CLI at the line `at` names.
pub fn assert_invalid(cli: &Cli, body: &str, message: &str, at: At) {
    let mut ws = Workspace::new(cli);
    ws.config(body);
    assert_validate_fails(&mut ws, message, at);
}

/// `validate` of the workspace's configuration must fail that way.
pub fn assert_validate_fails(ws: &mut Workspace, message: &str, at: At) {
    let result = ws.validate_json();
    assert!(
        result["valid"] == false,
        "{}: valid:\n{result:#}",
        ws.cli.name
    );
    let diagnostics = result["diagnostics"].as_array().unwrap().clone();
    assert_one_error(ws, &diagnostics, message, at);
}

/// `plan` of the workspace's configuration must fail the same way.
pub fn assert_plan_invalid(ws: &mut Workspace, message: &str, at: At) {
    ws.init();
    let run = ws.run(&["plan", "-json", "-no-color", "-input=false"]);
    assert!(
        !run.success,
        "{}: plan succeeded:\n{}",
        ws.cli.name, run.stdout
    );
    let diagnostics: Vec<serde_json::Value> = run
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|message| message["type"] == "diagnostic")
        .map(|message| message["diagnostic"].clone())
        .collect();
    assert_one_error(ws, &diagnostics, message, at);
}

fn assert_one_error(ws: &Workspace, diagnostics: &[serde_json::Value], message: &str, at: At) {
    let cli = &ws.cli;
    let errors: Vec<&serde_json::Value> = diagnostics
        .iter()
        .filter(|d| d["severity"] == "error")
        .collect();
    assert!(
        errors.len() == 1,
        "{}: expected one error for {message:?}, got:\n{diagnostics:#?}",
        cli.name
    );
    let error = errors[0];
    let text = format!(
        "{}: {}",
        error["summary"].as_str().unwrap_or_default(),
        error["detail"].as_str().unwrap_or_default()
    );
    assert!(
        text.contains(message),
        "{}: expected {message:?} in: {text}",
        cli.name
    );
    let main_tf = ws.main_tf();
    let expected = at.line(&main_tf);
    let range = &error["range"];
    let line = range["start"]["line"].as_u64().map(|l| l as usize);
    let quoted = |l: usize| main_tf.lines().nth(l - 1).unwrap_or_default().to_string();
    assert!(
        range["filename"] == "main.tf" && line == Some(expected),
        "{} {}: {message:?} placed at {}, expected line {expected} ({at:?}: {:?}):\n{error:#}",
        cli.name,
        cli.version,
        line.map_or("no line".to_string(), |l| format!(
            "line {l} ({:?})",
            quoted(l)
        )),
        quoted(expected),
    );
}
