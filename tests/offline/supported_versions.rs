//! One table of supported versions: supported-versions.txt is its source,
//! README.md and docs/index.md (through templates/index.md.tmpl) show it
//! between markers, and each tested version is the one the testbed pins.
//! `make versions` writes the table into both; `make docs` then carries it
//! into docs/.

use common::repo_root;

const SOURCE: &str = "supported-versions.txt";
const PAGES: &[&str] = &["README.md", "templates/index.md.tmpl", "docs/index.md"];
const START: &str = "<!-- supported versions: from supported-versions.txt by `make versions` -->";
const END: &str = "<!-- end of supported versions -->";

struct Row {
    component: String,
    supported: String,
    tested: Vec<String>,
    pins: Vec<String>,
}

fn rows() -> Vec<Row> {
    let source = std::fs::read_to_string(repo_root().join(SOURCE)).unwrap();
    let list = |text: &str| text.split(',').map(|v| v.trim().to_string()).collect();
    source
        .lines()
        .filter(|line| !line.trim().is_empty() && !line.starts_with('#'))
        .map(|line| {
            let cells: Vec<&str> = line.split(" | ").map(str::trim).collect();
            let [component, supported, tested, pins] = cells[..] else {
                panic!("{SOURCE}: not four cells: {line:?}");
            };
            Row {
                component: component.to_string(),
                supported: supported.to_string(),
                tested: list(tested),
                pins: list(pins),
            }
        })
        .collect()
}

/// The table as the pages show it, markers included.
fn table() -> String {
    let mut text = format!("{START}\n| Component | Supported | Tested with |\n|---|---|---|\n");
    for row in rows() {
        text += &format!(
            "| {} | {} | {} |\n",
            row.component,
            row.supported,
            row.tested.join(", ")
        );
    }
    text + END
}

/// `page` with the table between its markers replaced by `table`.
fn with_table(page: &str, table: &str) -> Option<String> {
    let start = page.find(START)?;
    let end = page[start..].find(END)? + start + END.len();
    Some(format!("{}{table}{}", &page[..start], &page[end..]))
}

#[test]
fn every_page_shows_the_table_of_supported_versions() {
    let table = table();
    for page in PAGES {
        let text = std::fs::read_to_string(repo_root().join(page)).unwrap();
        let rewritten = with_table(&text, &table)
            .unwrap_or_else(|| panic!("{page} has no table between {START:?} and {END:?}"));
        assert!(
            rewritten == text,
            "{page} does not show {SOURCE}'s table: run `make versions` (then `make docs`). The table:\n{table}"
        );
    }
}

#[test]
fn each_tested_version_is_the_one_its_file_pins() {
    let rows = rows();
    assert!(
        rows.iter().any(|r| r.component == "Kubernetes"),
        "no Kubernetes row"
    );
    for row in rows {
        assert_eq!(
            row.tested.len(),
            row.pins.len(),
            "{}: one pin file per tested version",
            row.component
        );
        for (version, pin) in row.tested.iter().zip(&row.pins) {
            let pinned = std::fs::read_to_string(repo_root().join(pin))
                .unwrap_or_else(|e| panic!("{}: {pin}: {e}", row.component));
            assert!(
                pinned.contains(&format!("v{version}")),
                "{} {version}: {pin} does not name v{version}",
                row.component
            );
        }
    }
}

/// `make versions`: writes the table into README.md and the index template.
#[test]
#[ignore = "writes README.md and templates/index.md.tmpl; run by `make versions`"]
fn write_the_table_of_supported_versions() {
    let table = table();
    for page in ["README.md", "templates/index.md.tmpl"] {
        let path = repo_root().join(page);
        let text = std::fs::read_to_string(&path).unwrap();
        let rewritten = with_table(&text, &table)
            .unwrap_or_else(|| panic!("{page} has no table between {START:?} and {END:?}"));
        std::fs::write(&path, rewritten).unwrap();
    }
}
