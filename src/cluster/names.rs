//! What Kubernetes accepts as names, label keys and values, and resource
//! quantities: the checks, and validators for schemas built from them.

use crate::framework::validators::Validator;
use crate::protocol::{Diagnostic, Diagnostics};

/// Checks an import ID that is a Kubernetes object name; `what` says whose
/// (`class name`, `node name`) in the message.
pub fn check_import_name(id: &str, what: &str) -> Result<(), Diagnostics> {
    check_dns1123_subdomain(id).map_err(|e| {
        Diagnostic::error("Invalid import ID", format!("Import by {what}: {e}")).into()
    })
}

/// A DNS-1123 subdomain: what Kubernetes accepts as most object names.
pub fn dns1123_subdomain() -> Validator {
    Validator::string_with(
        "A Kubernetes object name: lower-case letters, digits, `-` and `.`, at most 253.",
        check_dns1123_subdomain,
    )
}

/// Checks a DNS-1123 subdomain.
pub fn check_dns1123_subdomain(s: &str) -> Result<(), String> {
    let valid = !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !part.starts_with('-')
                && !part.ends_with('-')
        });
    if valid {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a valid name: use at most 253 lower-case letters, digits, '-' and '.', \
             starting and ending with a letter or digit (a DNS-1123 subdomain)"
        ))
    }
}

/// A DNS-1123 label: what Kubernetes accepts as a namespace name.
pub fn dns1123_label() -> Validator {
    Validator::string_with(
        "A DNS-1123 label: lower-case letters, digits and `-`, at most 63.",
        check_dns1123_label,
    )
}

/// Checks a DNS-1123 label (one part of a subdomain: no dots, at most 63).
fn check_dns1123_label(s: &str) -> Result<(), String> {
    if s.len() <= 63 && !s.contains('.') && check_dns1123_subdomain(s).is_ok() {
        Ok(())
    } else {
        Err(format!(
            "{s:?} is not a valid name: use at most 63 lower-case letters, digits and '-', starting and ending with a letter or digit (a DNS-1123 label)"
        ))
    }
}

/// A Kubernetes qualified name, e.g. a taint or label key.
pub fn qualified_name() -> Validator {
    Validator::string_with(
        "A Kubernetes key: an optional DNS-subdomain prefix and `/`, then at most 63 letters, digits, `-`, `_` or `.`.",
        check_qualified_name,
    )
}

/// A label value, e.g. a taint value.
pub fn label_value() -> Validator {
    Validator::string_with(
        "A label value: at most 63 letters, digits, `-`, `_` or `.`, starting and ending with a letter or digit.",
        check_label_value,
    )
}

/// Checks a qualified name (label, annotation or taint key): `[prefix/]name`.
pub fn check_qualified_name(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("the key must not be empty".into());
    }
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix {
        check_dns1123_subdomain(p)
            .map_err(|_| format!("{key:?}: prefix {p:?} is not a DNS subdomain"))?;
    }
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
        && name.as_bytes()[0].is_ascii_alphanumeric()
        && name.as_bytes()[name.len() - 1].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{key:?} is not a valid key: the name part must be 1-63 characters of letters, digits, \
             '-', '_' or '.', starting and ending with a letter or digit"
        ))
    }
}

/// Checks a label value: empty, or at most 63 characters of `[A-Za-z0-9-_.]`,
/// alphanumeric at both ends.
pub fn check_label_value(value: &str) -> Result<(), String> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
            && value.as_bytes()[0].is_ascii_alphanumeric()
            && value.as_bytes()[value.len() - 1].is_ascii_alphanumeric());
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{value:?} is not a valid label value: at most 63 letters, digits, '-', '_' or '.', \
             starting and ending with a letter or digit"
        ))
    }
}

/// A label selector in the syntax the API server parses
/// (k8s.io/apimachinery, pkg/labels/selector.go).
pub fn label_selector() -> Validator {
    Validator::string_with(
        "A label selector: requirements separated by `,`, each `key`, `!key`, `key=value`, `key!=value`, `key in (a,b)` or `key notin (a,b)`.",
        check_label_selector,
    )
}

/// Checks a label selector: requirements separated by commas outside
/// parentheses, each `key`, `!key`, `key=value`, `key==value`,
/// `key!=value`, `key in (v,...)`, `key notin (v,...)`, or `key>n`/`key<n`
/// with a whole number.
pub fn check_label_selector(selector: &str) -> Result<(), String> {
    // Like no selector, an empty one selects everything.
    if selector.trim().is_empty() {
        return Ok(());
    }
    let mut requirements = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (i, c) in selector.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                requirements.push(&selector[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    requirements.push(&selector[start..]);
    for requirement in requirements {
        check_requirement(requirement.trim())
            .map_err(|e| format!("in the selector {selector:?}: {e}"))?;
    }
    Ok(())
}

/// One requirement of [`check_label_selector`].
fn check_requirement(requirement: &str) -> Result<(), String> {
    if requirement.is_empty() {
        return Err("a requirement is empty".into());
    }
    if let Some(key) = requirement.strip_prefix('!') {
        return check_qualified_name(key.trim());
    }
    if let Some((head, values)) = requirement.split_once('(') {
        let (key, operator) = head
            .trim()
            .rsplit_once(char::is_whitespace)
            .ok_or_else(|| format!("{requirement:?} needs `in` or `notin` before `(`"))?;
        if !["in", "notin"].contains(&operator) {
            return Err(format!(
                "{requirement:?}: {operator:?} is not `in` or `notin`"
            ));
        }
        let values = values
            .strip_suffix(')')
            .ok_or_else(|| format!("{requirement:?} does not end with `)`"))?;
        check_qualified_name(key.trim())?;
        return values
            .split(',')
            .try_for_each(|value| check_label_value(value.trim()));
    }
    for operator in ["!=", "==", "=", ">", "<"] {
        if let Some((key, value)) = requirement.split_once(operator) {
            check_qualified_name(key.trim())?;
            let value = value.trim();
            if matches!(operator, ">" | "<") && value.parse::<i64>().is_err() {
                return Err(format!("{requirement:?}: {value:?} is not a whole number"));
            }
            return check_label_value(value);
        }
    }
    check_qualified_name(requirement)
}

/// A map of Kubernetes labels: qualified keys and valid values.
pub fn labels() -> Validator {
    Validator::new("Keys are Kubernetes keys, values label values.", |v| {
        for (key, value) in v.entries().into_iter().flatten() {
            check_qualified_name(key)?;
            if let Some(s) = value.as_str() {
                check_label_value(s).map_err(|e| format!("label {key:?}: {e}"))?;
            }
        }
        Ok(())
    })
}

/// A map of Kubernetes annotations: qualified keys, any values.
pub fn annotation_keys() -> Validator {
    Validator::new("Keys are Kubernetes keys.", |v| {
        v.entries()
            .into_iter()
            .flatten()
            .try_for_each(|(key, _)| check_qualified_name(key))
    })
}

/// A map of resource names (qualified names such as `nvidia.com/gpu`) to
/// quantities of zero or more.
pub fn resource_quantities() -> Validator {
    Validator::new(
        "Keys are resource names, values Kubernetes quantities of zero or more, such as `64`, `500m` or `4000Gi`.",
        |v| {
            for (name, quantity) in v.entries().into_iter().flatten() {
                check_qualified_name(name)?;
                if let Some(q) = quantity.as_str() {
                    check_non_negative_quantity(q).map_err(|e| format!("{name:?}: {e}"))?;
                }
            }
            Ok(())
        },
    )
}

/// A string that is a Kubernetes resource quantity of zero or more.
pub fn non_negative_quantity() -> Validator {
    Validator::string_with(
        "A Kubernetes quantity of zero or more, such as `64`, `500m` or `4000Gi`.",
        check_non_negative_quantity,
    )
}

/// Checks a Kubernetes resource quantity (`64`, `500m`, `4000Gi`, `1e3`)
/// that is not negative.
pub fn check_non_negative_quantity(quantity: &str) -> Result<(), String> {
    fn is_decimal(s: &str) -> bool {
        s.bytes().any(|b| b.is_ascii_digit())
            && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && s.matches('.').count() <= 1
    }
    let unsigned = quantity.strip_prefix('+').unwrap_or(quantity);
    if unsigned.starts_with('-') {
        return Err(format!("{quantity:?} is negative; use zero or more"));
    }
    let split = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(split);
    let exponent = suffix
        .strip_prefix(['e', 'E'])
        .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
        .is_some_and(is_decimal);
    let suffix_ok = exponent
        || [
            "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
        ]
        .contains(&suffix);
    if is_decimal(number) && suffix_ok {
        Ok(())
    } else {
        Err(format!(
            "{quantity:?} is not a Kubernetes quantity such as \"64\", \"500m\" or \"4000Gi\""
        ))
    }
}

/// Whether `a` and `b` are the same Kubernetes quantity however written
/// (`1.5` and `1500m`, `1Ki` and `1024`): a Kueue webhook serves back a
/// quantity in the canonical form of k8s.io/apimachinery's
/// `resource.Quantity`, which a read must not take for a change. Strings
/// that are no quantity are the same only as strings.
pub fn same_quantity(a: &str, b: &str) -> bool {
    a == b || matches!((exact_quantity(a), exact_quantity(b)), (Some(x), Some(y)) if x == y)
}

/// A quantity as `(negative, digits, power of ten)` with no trailing zero
/// in `digits` (zero is `(false, 0, 0)`), so that equal quantities give
/// equal triples; `None` when it is no quantity or too large to hold
/// exactly. The suffixes are k8s.io/apimachinery's (pkg/api/resource,
/// suffix.go): binary `Ki`..`Ei`, decimal `m`, `k`..`E`, and `e`/`E` with an
/// exponent.
fn exact_quantity(quantity: &str) -> Option<(bool, u128, i64)> {
    let (negative, unsigned) = match quantity.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, quantity.strip_prefix('+').unwrap_or(quantity)),
    };
    let split = unsigned
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(unsigned.len());
    let (number, suffix) = unsigned.split_at(split);
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut digits: u128 = 0;
    for d in whole.bytes().chain(fraction.bytes()) {
        if !d.is_ascii_digit() {
            return None;
        }
        digits = digits.checked_mul(10)?.checked_add(u128::from(d - b'0'))?;
    }
    let mut ten = -i64::try_from(fraction.len()).ok()?;
    let (power_of_ten, power_of_two) = match suffix {
        "" => (0, 0),
        "m" => (-3, 0),
        "k" => (3, 0),
        "M" => (6, 0),
        "G" => (9, 0),
        "T" => (12, 0),
        "P" => (15, 0),
        "E" => (18, 0),
        "Ki" => (0, 10),
        "Mi" => (0, 20),
        "Gi" => (0, 30),
        "Ti" => (0, 40),
        "Pi" => (0, 50),
        "Ei" => (0, 60),
        exponent => {
            let exponent = exponent.strip_prefix(['e', 'E'])?;
            let digits = exponent.strip_prefix(['+', '-']).unwrap_or(exponent);
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            (exponent.parse::<i64>().ok()?, 0)
        }
    };
    ten = ten.checked_add(power_of_ten)?;
    digits = digits.checked_mul(1u128.checked_shl(power_of_two)?)?;
    if digits == 0 {
        return Some((false, 0, 0));
    }
    while digits.is_multiple_of(10) {
        digits /= 10;
        ten += 1;
    }
    Some((negative, digits, ten))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_names() {
        for ok in ["a", "online-inference", "a.b-c.d", "x1"] {
            assert!(check_dns1123_subdomain(ok).is_ok(), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", "a_b", &"a".repeat(254)] {
            assert!(check_dns1123_subdomain(bad).is_err(), "{bad}");
        }
        assert!(check_dns1123_label("gpu-1").is_ok());
        // The label's own rules, not a subdomain's, whatever is wrong.
        for bad in ["Gpu", "a.b", &"a".repeat(64)] {
            let e = check_dns1123_label(bad).unwrap_err();
            assert!(
                e.contains("at most 63") && e.contains("DNS-1123 label"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn label_keys_and_values() {
        assert!(check_qualified_name("workload").is_ok());
        assert!(check_qualified_name("cfke.io/accelerator-name").is_ok());
        assert!(check_qualified_name("bad key").is_err());
        assert!(check_qualified_name("").unwrap_err().contains("empty"));
        assert!(check_qualified_name("/x").is_err());
        assert!(check_qualified_name("Bad_Prefix/x").is_err());
        assert!(check_label_value("").is_ok());
        assert!(check_label_value("H100").is_ok());
        assert!(check_label_value("-x").is_err());
    }

    #[test]
    fn label_selectors() {
        for ok in [
            "",
            "team=ml",
            "team==ml,tier!=batch",
            "gpufleet.test/list",
            "!example.com/legacy",
            "zone in (a, b),team notin (x)",
            "gpus>4",
            "team=",
        ] {
            assert!(check_label_selector(ok).is_ok(), "{ok}");
        }
        for bad in [
            "team=ml,",
            "bad key=x",
            "team=-x",
            "zone within (a)",
            "zone in (a",
            "gpus>many",
        ] {
            let error = check_label_selector(bad).unwrap_err();
            assert!(error.contains(&format!("{bad:?}")), "{bad}: {error}");
        }
    }

    #[test]
    fn quantities_compare_by_value() {
        for (a, b) in [
            ("1.5", "1500m"),
            ("1", "1000m"),
            ("1k", "1000"),
            ("1Ki", "1024"),
            ("1.5Gi", "1536Mi"),
            ("1e3", "1k"),
            ("1E-3", "1m"),
            ("+2", "2"),
            ("0", "0m"),
            ("0.0", "0Gi"),
            ("-1", "-1000m"),
            ("1M", "1000000"),
            ("1Pi", "1024Ti"),
        ] {
            assert!(same_quantity(a, b), "{a} = {b}");
        }
        for (a, b) in [
            ("1", "1.5"),
            ("1k", "1Ki"),
            ("1", "-1"),
            ("1m", "1M"),
            ("x", "y"),
            ("1x", "1"),
        ] {
            assert!(!same_quantity(a, b), "{a} != {b}");
        }
        // No quantity: equal only as strings.
        assert!(same_quantity("1x", "1x"));
    }

    #[test]
    fn quantities() {
        for ok in [
            "0", "64", "+1", "500m", "4000Gi", "1.5", ".5", "1e3", "2E", "1E-3",
        ] {
            assert!(check_non_negative_quantity(ok).is_ok(), "{ok}");
        }
        for bad in ["", "-1", "1 Gi", "Gi", "1.2.3", "1e", "1x", "1GB"] {
            assert!(check_non_negative_quantity(bad).is_err(), "{bad}");
        }
        assert!(
            check_non_negative_quantity("-4")
                .unwrap_err()
                .contains("negative")
        );
    }
}
