//! A saved plan, and the values at attribute paths in plans and states.

/// A saved plan, as `show -json` gives it, and as the CLI printed it.
pub struct Plan {
    pub cli: &'static str,
    pub has_changes: bool,
    pub text: String,
    pub(super) json: serde_json::Value,
}

impl Plan {
    fn change(&self, address: &str) -> &serde_json::Value {
        self.json["resource_changes"]
            .as_array()
            .and_then(|changes| changes.iter().find(|c| c["address"] == address))
            .unwrap_or_else(|| panic!("{}: {address} not in the plan:\n{}", self.cli, self.text))
    }

    /// The planned actions: `["create"]`, `["update"]`, `["delete", "create"]` (a
    /// replacement), `["no-op"]`, ...
    pub fn actions(&self, address: &str) -> Vec<String> {
        self.change(address)["change"]["actions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect()
    }

    pub fn assert_actions(&self, address: &str, expected: &[&str]) {
        assert_eq!(
            self.actions(address),
            expected,
            "{}: planned actions of {address}:\n{}",
            self.cli,
            self.text
        );
    }

    /// The plan replaces `address` because of the attribute at `path` (and
    /// nothing else), e.g. `&["node_class", "kind"]`.
    pub fn assert_replaced_for(&self, address: &str, path: &[&str]) {
        self.assert_actions(address, &["delete", "create"]);
        assert_eq!(
            self.change(address)["change"]["replace_paths"],
            serde_json::json!([path]),
            "{}: replacement of {address} not (only) for {path:?}:\n{}",
            self.cli,
            self.text
        );
    }

    /// The value at `path` (`taints[1].value`, `labels["team"]`) before the
    /// change (the object as refreshed from the cluster), or None if absent.
    pub fn before(&self, address: &str, path: &str) -> Option<&serde_json::Value> {
        value_at(&self.change(address)["change"]["before"], path)
    }

    /// The value at `path` after the change (as configured).
    pub fn after(&self, address: &str, path: &str) -> Option<&serde_json::Value> {
        value_at(&self.change(address)["change"]["after"], path)
    }

    /// The plan updates `address` in place, changing the value at `path`
    /// (to a different or a not yet known value); returns the value before.
    pub fn assert_updates(&self, address: &str, path: &str) -> serde_json::Value {
        self.assert_actions(address, &["update"]);
        let before = self.before(address, path).cloned().unwrap_or_else(|| {
            panic!(
                "{}: {address}.{path} absent before:\n{}",
                self.cli, self.text
            )
        });
        assert_ne!(
            Some(&before),
            self.after(address, path),
            "{}: {address}.{path} does not change:\n{}",
            self.cli,
            self.text
        );
        before
    }

    /// The plan changes `path` of `address` from `before` (what the cluster
    /// has now) to `after` (the configuration).
    pub fn assert_change(
        &self,
        address: &str,
        path: &str,
        before: serde_json::Value,
        after: serde_json::Value,
    ) {
        assert_eq!(
            (self.before(address, path), self.after(address, path)),
            (Some(&before), Some(&after)),
            "{}: {address}.{path} should change from {before} to {after}:\n{}",
            self.cli,
            self.text
        );
    }
}

/// The value at `path` in `value`: attribute names joined by `.`, list
/// indexes and map keys in brackets (`taints[0].key`, `limits["nvidia.com/gpu"]`).
pub fn value_at<'a>(value: &'a serde_json::Value, path: &str) -> Option<&'a serde_json::Value> {
    let mut current = value;
    let mut rest = path;
    while !rest.is_empty() {
        rest = rest.strip_prefix('.').unwrap_or(rest);
        if let Some(bracketed) = rest.strip_prefix('[') {
            let end = bracketed
                .find(']')
                .unwrap_or_else(|| panic!("unclosed [ in {path}"));
            let step = &bracketed[..end];
            current = match step.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                Some(key) => current.get(key)?,
                None => current.get(
                    step.parse::<usize>()
                        .unwrap_or_else(|_| panic!("bad index in {path}")),
                )?,
            };
            rest = &bracketed[end + 1..];
        } else {
            let end = rest.find(['.', '[']).unwrap_or(rest.len());
            current = current.get(&rest[..end])?;
            rest = &rest[end..];
        }
    }
    Some(current)
}
