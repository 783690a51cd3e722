//! The Kubernetes API permissions gpufleet needs, as each resource declares
//! them next to its code, and the RBAC roles made from them (`docs/rbac.yaml`
//! is generated from these declarations and checked by `cargo test`).
//! A request the API server forbids is explained with the rule that grants it.

use std::collections::BTreeMap;

/// Verbs in the order Kubernetes documents them, so rules read alike.
const VERB_ORDER: &[&str] = &[
    "get", "list", "watch", "create", "update", "patch", "delete",
];

/// What a resource that is one server-side-applied object
/// ([`crate::kit::object::ObjectResource`]) does to it: `get` to read it and to
/// refuse adopting one that exists, `patch` to apply it, `create` because
/// the API server also authorizes an apply that creates the object as a
/// create, and `delete`.
pub const APPLIED_OBJECT_VERBS: &[&str] = &["get", "create", "patch", "delete"];
/// The verbs of an applied object that `terraform query` lists too.
pub const LISTED_OBJECT_VERBS: &[&str] = &["get", "create", "patch", "delete", "list"];

/// Where a permission applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    /// Cluster-wide, granted by a ClusterRole.
    Cluster,
    /// In the namespace the GPU Operator runs in (a provider setting),
    /// granted by a Role there.
    OperatorNamespace,
    /// In one fixed namespace (`kube-system` for bootstrap tokens), granted
    /// by a Role there.
    Namespace(&'static str),
}

/// One permission: `verbs` on `resource` of API `group` (`""` for the core
/// group), in `scope`, on the objects `resource_names` names (all when
/// empty).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Permission {
    /// The API group; `""` for the core group.
    pub group: &'static str,
    /// The resource as RBAC names it: plural, lower case, e.g. `nodepools`.
    pub resource: &'static str,
    /// The verbs the provider's calls use.
    pub verbs: &'static [&'static str],
    /// Cluster-wide, or in the GPU Operator's namespace.
    pub scope: Scope,
    /// Only these objects; every one when empty.
    pub resource_names: &'static [&'static str],
}

impl Permission {
    /// A cluster-wide permission.
    pub const fn cluster(
        group: &'static str,
        resource: &'static str,
        verbs: &'static [&'static str],
    ) -> Self {
        Self {
            group,
            resource,
            verbs,
            scope: Scope::Cluster,
            resource_names: &[],
        }
    }

    /// A permission in the GPU Operator's namespace.
    pub const fn in_operator_namespace(
        group: &'static str,
        resource: &'static str,
        verbs: &'static [&'static str],
    ) -> Self {
        Self {
            group,
            resource,
            verbs,
            scope: Scope::OperatorNamespace,
            resource_names: &[],
        }
    }

    /// A permission in the fixed namespace `namespace`.
    pub const fn in_namespace(
        namespace: &'static str,
        group: &'static str,
        resource: &'static str,
        verbs: &'static [&'static str],
    ) -> Self {
        Self {
            group,
            resource,
            verbs,
            scope: Scope::Namespace(namespace),
            resource_names: &[],
        }
    }

    /// The same permission on the objects `names` only.
    pub const fn named(self, names: &'static [&'static str]) -> Self {
        Self {
            resource_names: names,
            ..self
        }
    }
}

/// One rule of a role: the verbs on one resource, and the Terraform types
/// that need them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Cluster-wide (ClusterRole) or in the operator's namespace (Role).
    pub scope: Scope,
    /// The API group; empty for the core group.
    pub group: String,
    /// The resource, plural and lower case.
    pub resource: String,
    /// Only these objects; every one when empty.
    pub resource_names: Vec<String>,
    /// The verbs, sorted.
    pub verbs: Vec<String>,
    /// The Terraform types whose calls need them.
    pub needed_by: Vec<String>,
}

impl Rule {
    /// The rule as RBAC YAML, indented by `indent`, one line per field.
    pub fn yaml(&self, indent: &str) -> String {
        let list = |items: &[String]| {
            items
                .iter()
                .map(|i| format!("{i:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let names = if self.resource_names.is_empty() {
            String::new()
        } else {
            format!(
                "{indent}  resourceNames: [{}]\n",
                list(&self.resource_names)
            )
        };
        format!(
            "{indent}- apiGroups: [{:?}]\n{indent}  resources: [{:?}]\n{names}{indent}  verbs: [{}]\n",
            self.group,
            self.resource,
            list(&self.verbs)
        )
    }
}

/// The rules that grant `declared` (Terraform type name, its permissions):
/// one per scope, group, resource and set of names, with the union of the
/// verbs, sorted.
pub fn rules(declared: &[(&str, &[Permission])]) -> Vec<Rule> {
    let mut merged: BTreeMap<(Scope, &str, &str, &[&str]), Rule> = BTreeMap::new();
    for (type_name, permissions) in declared {
        for p in *permissions {
            let rule = merged
                .entry((p.scope, p.group, p.resource, p.resource_names))
                .or_insert_with(|| Rule {
                    scope: p.scope,
                    group: p.group.to_string(),
                    resource: p.resource.to_string(),
                    resource_names: p.resource_names.iter().map(|n| n.to_string()).collect(),
                    verbs: Vec::new(),
                    needed_by: Vec::new(),
                });
            for verb in p.verbs {
                if !rule.verbs.iter().any(|v| v == verb) {
                    rule.verbs.push(verb.to_string());
                }
            }
            if !rule.needed_by.iter().any(|t| t == type_name) {
                rule.needed_by.push(type_name.to_string());
            }
        }
    }
    let rank = |verb: &str| {
        VERB_ORDER
            .iter()
            .position(|v| *v == verb)
            .unwrap_or(usize::MAX)
    };
    let mut rules: Vec<Rule> = merged.into_values().collect();
    for rule in &mut rules {
        rule.verbs.sort_by_key(|v| (rank(v), v.clone()));
        rule.needed_by.sort();
    }
    rules
}

/// Name of the generated ClusterRole and Role.
pub const ROLE_NAME: &str = "gpufleet";

/// The RBAC manifests granting exactly `rules`: a ClusterRole for the
/// cluster-wide rules, a Role in `operator_namespace` for the operator's,
/// and one in each fixed namespace for theirs.
pub fn manifests(rules: &[Rule], operator_namespace: &str) -> String {
    let mut out = String::from(
        "# The least privilege gpufleet needs, generated from the permissions each\n\
         # resource declares next to its code by `make rbac` (`cargo test` fails while\n\
         # this file differs). Bind it to the identity the provider runs as:\n\
         #   kubectl create clusterrolebinding gpufleet --clusterrole=gpufleet --user=USER\n",
    );
    let mut namespaced: Vec<(Scope, &str)> = Vec::new();
    for rule in rules {
        let namespace = match rule.scope {
            Scope::Cluster => continue,
            Scope::OperatorNamespace => operator_namespace,
            Scope::Namespace(namespace) => namespace,
        };
        if !namespaced.contains(&(rule.scope, namespace)) {
            namespaced.push((rule.scope, namespace));
        }
    }
    for (scope, namespace) in &namespaced {
        out.push_str(&format!(
            "#   kubectl create rolebinding gpufleet -n {namespace} --role=gpufleet --user=USER\n"
        ));
        if *scope == Scope::OperatorNamespace {
            out.push_str(
                "# (that Role belongs in the namespace the provider's GPU Operator setting names).\n",
            );
        }
    }
    let role = |kind: &str, namespace: Option<&str>, scope: Scope| {
        let mut doc = format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: {kind}\nmetadata:\n  name: {ROLE_NAME}\n"
        );
        if let Some(ns) = namespace {
            doc.push_str(&format!("  namespace: {ns}\n"));
        }
        doc.push_str("rules:\n");
        for rule in rules.iter().filter(|r| r.scope == scope) {
            doc.push_str(&format!("  # {}\n", rule.needed_by.join(", ")));
            doc.push_str(&rule.yaml("  "));
        }
        doc
    };
    out.push_str("---\n");
    out.push_str(&role("ClusterRole", None, Scope::Cluster));
    for (scope, namespace) in namespaced {
        out.push_str("---\n");
        out.push_str(&role("Role", Some(namespace), scope));
    }
    out
}

/// What the API server's RBAC denial names: `User "u" cannot patch
/// resource "nodepools" in API group "karpenter.sh" at the cluster scope`
/// (or `in the namespace "ns"`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Denied {
    /// The verb refused.
    pub verb: String,
    /// The resource it was refused on.
    pub resource: String,
    /// Its API group; empty for the core group.
    pub group: String,
    /// `None` at the cluster scope.
    pub namespace: Option<String>,
}

impl Denied {
    /// Reads a denial from a 403 message; `None` when the message is not an
    /// RBAC denial (an admission plugin's, say). A binding refused because
    /// its writer may not grant the role it names (kubernetes
    /// pkg/registry/rbac/validation `ConfirmNoEscalation`) lacks `bind` on
    /// that kind of role.
    pub fn parse(message: &str) -> Option<Self> {
        let quoted = |after: &str| -> Option<String> {
            let start = message.find(after)? + after.len();
            let rest = &message[start..];
            Some(rest[..rest.find('"')?].to_string())
        };
        if message.contains("is attempting to grant RBAC permissions not currently held") {
            let role = if message.starts_with("clusterrolebindings.") {
                "clusterroles"
            } else if message.starts_with("rolebindings.") {
                "roles"
            } else {
                return None;
            };
            return Some(Self {
                verb: "bind".into(),
                resource: role.into(),
                group: "rbac.authorization.k8s.io".into(),
                namespace: None,
            });
        }
        let verb_start = message.find(" cannot ")? + " cannot ".len();
        let verb = message[verb_start..].split(' ').next()?.to_string();
        Some(Self {
            verb,
            resource: quoted(" resource \"")?,
            group: quoted(" in API group \"")?,
            namespace: quoted(" in the namespace \""),
        })
    }

    /// The rule that grants what was denied, and the kind of role it goes
    /// in; limited to the objects the `declared` permission it matches
    /// names, if it names any.
    pub fn missing_rule(&self, declared: &[(&str, &[Permission])]) -> String {
        // How closely a declared scope matches where the denial was: a
        // fixed namespace names it, the operator's may be any.
        let closeness = |scope: Scope| match (scope, &self.namespace) {
            (Scope::Cluster, None) => Some(0),
            (Scope::Namespace(ns), Some(denied)) if ns == denied => Some(0),
            (Scope::OperatorNamespace, Some(_)) => Some(1),
            _ => None,
        };
        let resource_names = declared
            .iter()
            .flat_map(|(_, permissions)| permissions.iter())
            .filter(|p| {
                p.group == self.group
                    && p.resource == self.resource
                    && p.verbs.contains(&self.verb.as_str())
            })
            .filter_map(|p| Some((closeness(p.scope)?, p.resource_names)))
            .min_by_key(|(closeness, _)| *closeness)
            .map(|(_, names)| names)
            .unwrap_or_default();
        let rule = Rule {
            scope: Scope::Cluster,
            group: self.group.clone(),
            resource: self.resource.clone(),
            resource_names: resource_names.iter().map(|n| n.to_string()).collect(),
            verbs: vec![self.verb.clone()],
            needed_by: Vec::new(),
        };
        let role = match &self.namespace {
            None => "a ClusterRole".to_string(),
            Some(ns) => format!("a Role in namespace {ns:?}"),
        };
        let bind = if self.verb == "bind" {
            format!(
                "The user the provider runs as cannot bind resource {:?} in API group {:?}: a binding may grant only a role its writer may bind (or holds every permission of). ",
                self.resource, self.group
            )
        } else {
            String::new()
        };
        format!("{bind}{role} needs the rule\n\n{}", rule.yaml("  "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &[Permission] = &[Permission::cluster("", "nodes", &["patch", "get"])];
    const MORE_NODES: &[Permission] = &[
        Permission::cluster("", "nodes", &["list", "get"]),
        Permission::in_operator_namespace("", "configmaps", &["get"]),
    ];

    #[test]
    fn permissions_merge_into_one_rule_per_resource_with_ordered_verbs() {
        let rules = rules(&[("node_taint", NODES), ("node_sharing", MORE_NODES)]);
        assert_eq!(rules.len(), 2);
        assert_eq!(rules[0].resource, "nodes");
        assert_eq!(rules[0].verbs, ["get", "list", "patch"]);
        assert_eq!(rules[0].needed_by, ["node_sharing", "node_taint"]);
        assert_eq!(rules[1].scope, Scope::OperatorNamespace);
        let yaml = manifests(&rules, "gpu-operator");
        assert!(yaml.contains("kind: ClusterRole\n"), "{yaml}");
        assert!(
            yaml.contains("kind: Role\nmetadata:\n  name: gpufleet\n  namespace: gpu-operator\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains(
                "  - apiGroups: [\"\"]\n    resources: [\"nodes\"]\n    verbs: [\"get\", \"list\", \"patch\"]\n"
            ),
            "{yaml}"
        );
    }

    #[test]
    fn a_fixed_namespace_gets_a_role_of_its_own() {
        const SECRETS: &[Permission] = &[Permission::in_namespace(
            "kube-system",
            "",
            "secrets",
            &["get", "create"],
        )];
        let yaml = manifests(&rules(&[("node_join", SECRETS)]), "gpu-operator");
        assert!(
            yaml.contains("kind: Role\nmetadata:\n  name: gpufleet\n  namespace: kube-system\n"),
            "{yaml}"
        );
        assert!(
            yaml.contains("create rolebinding gpufleet -n kube-system"),
            "{yaml}"
        );
        assert!(!yaml.contains("gpu-operator"), "{yaml}");
    }

    #[test]
    fn only_cluster_wide_rules_make_no_role() {
        let yaml = manifests(&rules(&[("node_taint", NODES)]), "gpu-operator");
        assert!(!yaml.contains("kind: Role\n"), "{yaml}");
        assert!(!yaml.contains("create rolebinding"), "{yaml}");
    }

    #[test]
    fn an_rbac_denial_names_the_rule_that_would_allow_it() {
        let cluster = Denied::parse(
            "priorityclasses.scheduling.k8s.io \"x\" is forbidden: User \"gpufleet-limited\" cannot patch resource \"priorityclasses\" in API group \"scheduling.k8s.io\" at the cluster scope",
        )
        .unwrap();
        assert_eq!(
            cluster,
            Denied {
                verb: "patch".into(),
                resource: "priorityclasses".into(),
                group: "scheduling.k8s.io".into(),
                namespace: None,
            }
        );
        assert_eq!(
            cluster.missing_rule(&[]),
            "a ClusterRole needs the rule\n\n  - apiGroups: [\"scheduling.k8s.io\"]\n    resources: [\"priorityclasses\"]\n    verbs: [\"patch\"]\n"
        );
        let namespaced = Denied::parse(
            "configmaps \"c\" is forbidden: User \"u\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"gpu-operator\"",
        )
        .unwrap();
        assert_eq!(namespaced.group, "");
        assert!(
            namespaced
                .missing_rule(&[])
                .starts_with("a Role in namespace \"gpu-operator\"")
        );
        assert_eq!(
            Denied::parse("pods \"p\" is forbidden: violates PodSecurity"),
            None
        );
        let escalation = Denied::parse(
            "clusterrolebindings.rbac.authorization.k8s.io \"b\" is forbidden: user \"u\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"certificates.k8s.io\"], Resources:[\"certificatesigningrequests\"], Verbs:[\"create\"]}",
        )
        .unwrap();
        const BIND: &[Permission] =
            &[
                Permission::cluster("rbac.authorization.k8s.io", "clusterroles", &["bind"])
                    .named(&["a", "b"]),
            ];
        let rule = escalation.missing_rule(&[("node_join", BIND)]);
        assert!(
            rule.contains(
                "cannot bind resource \"clusterroles\" in API group \"rbac.authorization.k8s.io\""
            ),
            "{rule}"
        );
        assert!(
            rule.ends_with("    resourceNames: [\"a\", \"b\"]\n    verbs: [\"bind\"]\n"),
            "{rule}"
        );
        // A fixed namespace's named rule wins over the operator's.
        const MAPS: &[Permission] = &[
            Permission::in_operator_namespace("", "configmaps", &["get"]),
            Permission::in_namespace("kube-public", "", "configmaps", &["get"]).named(&["c"]),
        ];
        let public = Denied::parse(
            "configmaps \"c\" is forbidden: User \"u\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"kube-public\"",
        )
        .unwrap();
        assert!(
            public
                .missing_rule(&[("x", MAPS)])
                .contains("resourceNames: [\"c\"]")
        );
        let operator = Denied {
            namespace: Some("gpu-operator".into()),
            ..public
        };
        assert!(
            !operator
                .missing_rule(&[("x", MAPS)])
                .contains("resourceNames")
        );
    }
}
