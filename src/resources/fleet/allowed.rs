//! Which values of one node label a set of NodePool requirements allows,
//! and whether any node can meet them all. Karpenter intersects the
//! requirements on one key (taking the largest `minValues`); when nothing is
//! left, or fewer values than `minValues` asks for, no node can launch. The
//! fleet uses this to refuse a raw requirement only when it really
//! contradicts what an attribute generates.

use std::collections::BTreeSet;

use super::requirements::Requirement;

/// What requirements on one key allow.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Allowed {
    /// A node without the label matches (`NotIn`, `DoesNotExist`).
    absent: bool,
    values: Values,
    min_values: Option<u32>,
}

#[derive(Debug, Clone, PartialEq)]
enum Values {
    /// Exactly these values.
    Only(BTreeSet<String>),
    /// Every value but `excluded`; with a bound, only whole numbers within it.
    AllBut {
        excluded: BTreeSet<String>,
        gte: Option<i64>,
        lte: Option<i64>,
    },
}

impl Values {
    fn any() -> Self {
        Self::AllBut {
            excluded: BTreeSet::new(),
            gte: None,
            lte: None,
        }
    }

    fn bounded(gte: Option<i64>, lte: Option<i64>) -> Self {
        Self::AllBut {
            excluded: BTreeSet::new(),
            gte,
            lte,
        }
    }
}

fn within(value: &str, gte: Option<i64>, lte: Option<i64>) -> bool {
    if gte.is_none() && lte.is_none() {
        return true;
    }
    value
        .parse::<i64>()
        .is_ok_and(|n| gte.is_none_or(|g| n >= g) && lte.is_none_or(|l| n <= l))
}

impl Allowed {
    /// What one requirement allows. Comparison values that are not whole
    /// numbers (the CRD refuses them) allow nothing.
    pub(super) fn of(requirement: &Requirement) -> Self {
        let values: BTreeSet<String> = requirement.values.iter().flatten().cloned().collect();
        let bound = || {
            requirement
                .values
                .as_deref()
                .and_then(|v| v.first())
                .and_then(|v| v.parse::<i64>().ok())
        };
        let nothing = Values::Only(BTreeSet::new());
        let (absent, values) = match requirement.operator.as_str() {
            "In" => (false, Values::Only(values)),
            "NotIn" => (
                true,
                Values::AllBut {
                    excluded: values,
                    gte: None,
                    lte: None,
                },
            ),
            "Exists" => (false, Values::any()),
            "DoesNotExist" => (true, nothing),
            "Gt" => (
                false,
                bound().map_or(nothing, |n| Values::bounded(n.checked_add(1), None)),
            ),
            "Gte" => (
                false,
                bound().map_or(nothing, |n| Values::bounded(Some(n), None)),
            ),
            "Lt" => (
                false,
                bound().map_or(nothing, |n| Values::bounded(None, n.checked_sub(1))),
            ),
            "Lte" => (
                false,
                bound().map_or(nothing, |n| Values::bounded(None, Some(n))),
            ),
            _ => (false, nothing),
        };
        Self {
            absent,
            values,
            min_values: requirement.min_values,
        }
    }

    /// What both allow.
    pub(super) fn and(&self, other: &Allowed) -> Allowed {
        use Values::{AllBut, Only};
        let values = match (&self.values, &other.values) {
            (Only(a), Only(b)) => Only(a.intersection(b).cloned().collect()),
            (Only(only), AllBut { excluded, gte, lte })
            | (AllBut { excluded, gte, lte }, Only(only)) => Only(
                only.iter()
                    .filter(|v| !excluded.contains(*v) && within(v, *gte, *lte))
                    .cloned()
                    .collect(),
            ),
            (
                AllBut {
                    excluded: e1,
                    gte: g1,
                    lte: l1,
                },
                AllBut {
                    excluded: e2,
                    gte: g2,
                    lte: l2,
                },
            ) => AllBut {
                excluded: e1.union(e2).cloned().collect(),
                gte: (*g1).max(*g2),
                lte: match (l1, l2) {
                    (Some(a), Some(b)) => Some(*a.min(b)),
                    (a, b) => a.or(*b),
                },
            },
        };
        Allowed {
            absent: self.absent && other.absent,
            values,
            min_values: self.min_values.max(other.min_values),
        }
    }

    /// How many label values are allowed; `None` when unbounded.
    fn count(&self) -> Option<u64> {
        match &self.values {
            Values::Only(values) => Some(values.len() as u64),
            Values::AllBut {
                excluded,
                gte: Some(gte),
                lte: Some(lte),
            } => {
                if gte > lte {
                    return Some(0);
                }
                let span = lte.abs_diff(*gte).saturating_add(1);
                let excluded_within = excluded
                    .iter()
                    .filter(|v| within(v, Some(*gte), Some(*lte)))
                    .count();
                Some(span.saturating_sub(excluded_within as u64))
            }
            Values::AllBut { .. } => None,
        }
    }

    /// Whether a node can meet all of it: some label value (or the label's
    /// absence) is allowed, and at least `minValues` values are.
    pub(super) fn satisfiable(&self) -> bool {
        let enough = match (self.min_values, self.count()) {
            (Some(min), Some(count)) => count >= u64::from(min),
            _ => true,
        };
        self.has_a_value() && enough
    }

    /// Whether some label value, or the label's absence, is allowed
    /// (`minValues` aside).
    pub(super) fn has_a_value(&self) -> bool {
        self.absent || self.count() != Some(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(operator: &str, values: &[&str], min_values: Option<u32>) -> Allowed {
        Allowed::of(&Requirement {
            key: "k".into(),
            operator: operator.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
            min_values,
        })
    }

    fn both(a: &Allowed, b: &Allowed) -> bool {
        a.and(b).satisfiable() && b.and(a).satisfiable()
    }

    #[test]
    fn sets_intersect() {
        let ab = req("In", &["a", "b"], None);
        assert!(both(&ab, &req("In", &["b", "c"], None)));
        assert!(!both(&ab, &req("In", &["c"], None)));
        assert!(both(&ab, &req("NotIn", &["a"], None)));
        assert!(!both(&ab, &req("NotIn", &["a", "b"], None)));
        assert!(both(&ab, &req("Exists", &[], None)));
        assert!(!both(&ab, &req("DoesNotExist", &[], None)));
        // NotIn and DoesNotExist both let a node without the label through.
        assert!(both(
            &req("NotIn", &["a"], None),
            &req("DoesNotExist", &[], None)
        ));
        assert!(!both(
            &req("Exists", &[], None),
            &req("DoesNotExist", &[], None)
        ));
    }

    #[test]
    fn bounds_meet_values_and_each_other() {
        let at_least_8 = req("Gte", &["8"], None);
        assert!(both(&at_least_8, &req("Lte", &["8"], None)));
        assert!(!both(&at_least_8, &req("Lt", &["8"], None)));
        assert!(!both(&req("Gt", &["8"], None), &req("Lte", &["8"], None)));
        assert!(both(&at_least_8, &req("In", &["8", "x"], None)));
        assert!(!both(&at_least_8, &req("In", &["4", "x"], None)));
        let exactly_8 = at_least_8.and(&req("Lte", &["8"], None));
        assert!(!both(&exactly_8, &req("NotIn", &["8"], None)));
        assert!(both(&exactly_8, &req("NotIn", &["9"], None)));
    }

    #[test]
    fn min_values_need_enough_values_left() {
        let three = req("In", &["a", "b", "c"], Some(3));
        assert!(both(&three, &req("Exists", &[], None)));
        assert!(!both(&three, &req("NotIn", &["c"], None)));
        assert!(!both(
            &req("In", &["a", "b", "c"], None),
            &req("Exists", &[], Some(4))
        ));
        // Unbounded sets always have enough.
        assert!(both(
            &req("Exists", &[], Some(50)),
            &req("NotIn", &["a"], None)
        ));
        let one_to_four = req("Gte", &["1"], None).and(&req("Lte", &["4"], None));
        assert!(one_to_four.and(&req("Exists", &[], Some(4))).satisfiable());
        assert!(!one_to_four.and(&req("Exists", &[], Some(5))).satisfiable());
    }
}
