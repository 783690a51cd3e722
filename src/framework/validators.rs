//! Small reusable validators. Each checks a known, non-null value and says
//! what is wrong in words a user can act on.

use std::sync::Arc;

use super::schema::Validator;

pub fn one_of(allowed: &'static [&'static str]) -> Validator {
    Arc::new(move |v| match v.as_str() {
        Some(s) if allowed.contains(&s) => Ok(()),
        Some(s) => Err(format!("{s:?} is not one of {}", quoted_list(allowed))),
        None => Ok(()),
    })
}

/// An integer between `min` and `max`, inclusive; `why` explains the bound.
pub fn integer_between(min: i64, max: i64, why: &'static str) -> Validator {
    Arc::new(move |v| {
        let Some(n) = v.as_number() else {
            return Ok(());
        };
        let Some(i) = v.as_i64().filter(|_| n.is_integer()) else {
            return Err(format!(
                "{} is not a whole number",
                crate::protocol::value::number_text(n)
            ));
        };
        if (min..=max).contains(&i) {
            Ok(())
        } else {
            Err(format!("{i} is outside {min}..={max}{why}"))
        }
    })
}

pub fn not_empty() -> Validator {
    Arc::new(|v| match v.as_str() {
        Some("") => Err("must not be empty".into()),
        _ => Ok(()),
    })
}

/// A DNS-1123 subdomain: what Kubernetes accepts as most object names.
pub fn dns1123_subdomain() -> Validator {
    Arc::new(|v| v.as_str().map_or(Ok(()), check_dns1123_subdomain))
}

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

/// A Kubernetes qualified name, e.g. a taint key.
pub fn qualified_name() -> Validator {
    Arc::new(|v| v.as_str().map_or(Ok(()), check_qualified_name))
}

/// A label value, e.g. a taint value.
pub fn label_value() -> Validator {
    Arc::new(|v| v.as_str().map_or(Ok(()), check_label_value))
}

/// A Kubernetes qualified name (label, annotation or taint key): `[prefix/]name`.
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

/// A label value: empty, or at most 63 characters of `[A-Za-z0-9-_.]`, alphanumeric at both ends.
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

/// A map of Kubernetes labels: qualified keys and valid values.
pub fn labels() -> Validator {
    Arc::new(|v| {
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
    Arc::new(|v| {
        v.entries()
            .into_iter()
            .flatten()
            .try_for_each(|(key, _)| check_qualified_name(key))
    })
}

pub fn quoted_list(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Value;

    #[test]
    fn dns_names() {
        for ok in ["a", "online-inference", "a.b-c.d", "x1"] {
            assert!(check_dns1123_subdomain(ok).is_ok(), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a..b", "a_b", &"a".repeat(254)] {
            assert!(check_dns1123_subdomain(bad).is_err(), "{bad}");
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
    fn integers_and_choices() {
        let v = integer_between(0, 10, "");
        assert!(v(&Value::int(10)).is_ok());
        assert!(v(&Value::int(11)).unwrap_err().contains("outside"));
        let frac = Value::Number(Value::parse_number("1.5").unwrap());
        assert!(v(&frac).unwrap_err().contains("whole number"));
        let c = one_of(&["Never"]);
        assert!(c(&Value::string("Never")).is_ok());
        assert!(c(&Value::string("never")).is_err());
    }
}
