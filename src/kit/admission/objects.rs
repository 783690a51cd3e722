//! The policy and binding a fence writes, exactly the fields gpufleet owns;
//! whether live ones still hold them; and, for an import, the settings
//! they were written from.

use std::collections::{BTreeMap, BTreeSet};

use kube::api::DynamicObject;
use serde_json::{Value as Json, json};

use super::rule::{cel_string, checked_requests, pod_spec, resource_rules};
use super::{
    ALLOWED_ANNOTATION, BINDING, Fence, Guarded, KUBE_SYSTEM, NAME_LABEL, OWNER_ANNOTATION, POLICY,
    SELECTOR_ANNOTATION,
};
use crate::kit::Cluster;

impl Guarded {
    /// The namespaces the binding leaves out: kube-system, the GPU
    /// Operator's and the configured ones.
    fn exempt(&self, cluster: &Cluster) -> Vec<String> {
        let mut exempt: BTreeSet<String> = [
            KUBE_SYSTEM.to_string(),
            cluster.device_plugin_config.namespace.clone(),
        ]
        .into();
        exempt.extend(self.fence.exempt_namespaces.iter().flatten().cloned());
        exempt.into_iter().collect()
    }

    fn annotations(&self) -> BTreeMap<String, String> {
        let mut annotations = BTreeMap::from([(
            OWNER_ANNOTATION.to_string(),
            format!("{}/{}", self.resource_type, self.name),
        )]);
        if self.fence.allowed_namespaces.is_some() {
            annotations.insert(
                ALLOWED_ANNOTATION.to_string(),
                self.allowed_names().join(","),
            );
        }
        if let Some(selector) = self.selector_text() {
            annotations.insert(SELECTOR_ANNOTATION.to_string(), selector);
        }
        annotations
    }

    /// The policy, exactly the fields gpufleet owns.
    pub fn policy(&self) -> DynamicObject {
        let (before, after) = self.message_parts();
        let mut variables = vec![
            json!({"name": "podSpec", "expression": pod_spec("object")}),
            json!({"name": "tolerations", "expression": "variables.podSpec.?tolerations.orValue([])"}),
        ];
        variables.extend(
            self.variables
                .iter()
                .map(|(name, expression)| json!({"name": name, "expression": expression})),
        );
        variables
            .push(json!({"name": "namespaceAllowed", "expression": self.allowed_expression()}));
        let mut object = DynamicObject::new(&self.policy_name, &POLICY.api_resource());
        object.metadata.annotations = Some(self.annotations());
        object.data = json!({"spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": resource_rules()},
            "matchConditions": [{
                "name": "creates-and-pod-spec-changes",
                "expression": checked_requests(),
            }],
            "variables": variables,
            "validations": [{
                "expression": format!("variables.namespaceAllowed || !({})", self.uses),
                "message": format!("{before}{}{after}", "(its namespace)"),
                "messageExpression": format!("{} + request.namespace + {}", cel_string(&before), cel_string(&after)),
                "reason": "Forbidden",
            }],
        }});
        object
    }

    /// The binding: the enforcement, and the namespaces left out.
    pub fn binding(&self, cluster: &Cluster) -> DynamicObject {
        let mut object = DynamicObject::new(&self.policy_name, &BINDING.api_resource());
        object.metadata.annotations = Some(BTreeMap::from([(
            OWNER_ANNOTATION.to_string(),
            format!("{}/{}", self.resource_type, self.name),
        )]));
        object.data = json!({"spec": {
            "policyName": self.policy_name,
            "validationActions": [self.fence.enforcement()],
            "matchResources": {"namespaceSelector": {"matchExpressions": [
                {"key": NAME_LABEL, "operator": "NotIn", "values": self.exempt(cluster)},
            ]}},
        }});
        object
    }
}

/// Whether every field of `wanted` is in `live` with the same value (lists
/// item by item): the fields gpufleet sent, beside what the API server
/// defaults and others add.
pub(super) fn holds(live: &Json, wanted: &Json) -> bool {
    match (live, wanted) {
        (Json::Object(live), Json::Object(wanted)) => wanted
            .iter()
            .all(|(k, w)| live.get(k).is_some_and(|l| holds(l, w))),
        (Json::Array(live), Json::Array(wanted)) => {
            live.len() == wanted.len() && live.iter().zip(wanted).all(|(l, w)| holds(l, w))
        }
        (live, wanted) => live == wanted,
    }
}

pub(super) fn in_place(live: &DynamicObject, wanted: &DynamicObject) -> bool {
    let annotations = live.metadata.annotations.clone().unwrap_or_default();
    let kept = wanted
        .metadata
        .annotations
        .iter()
        .flatten()
        .all(|(k, v)| annotations.get(k) == Some(v));
    kept && holds(&live.data, &wanted.data)
}

/// The settings a policy and binding gpufleet wrote were written from.
pub(super) fn imported_settings(
    cluster: &Cluster,
    policy: &DynamicObject,
    binding: &DynamicObject,
) -> Fence {
    let annotations = policy.metadata.annotations.clone().unwrap_or_default();
    let allowed_namespaces = annotations.get(ALLOWED_ANNOTATION).map(|names| {
        names
            .split(',')
            .filter(|n| !n.is_empty())
            .map(str::to_string)
            .collect()
    });
    let allowed_namespace_selector = annotations.get(SELECTOR_ANNOTATION).map(|pairs| {
        pairs
            .split(',')
            .filter_map(|pair| pair.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    });
    let spec = &binding.data["spec"];
    let namespace_enforcement = match spec["validationActions"][0].as_str() {
        Some("Warn") => Some("warn".to_string()),
        Some("Audit") => Some("audit".to_string()),
        _ => None,
    };
    let always = [KUBE_SYSTEM, cluster.device_plugin_config.namespace.as_str()];
    let exempt: Vec<String> =
        spec["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .filter(|n| !always.contains(n))
            .map(str::to_string)
            .collect();
    Fence {
        allowed_namespaces,
        allowed_namespace_selector,
        namespace_enforcement,
        exempt_namespaces: (!exempt.is_empty()).then_some(exempt),
        admission_policy: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::LabelScheme;
    use crate::kit::admission::policy_name;

    fn fence() -> Fence {
        Fence {
            allowed_namespaces: Some(vec!["training".into()]),
            allowed_namespace_selector: Some([("team".to_string(), "ml".to_string())].into()),
            namespace_enforcement: Some("warn".into()),
            exempt_namespaces: Some(vec!["monitoring".into()]),
            admission_policy: None,
        }
    }

    fn guarded(fence: Fence) -> Guarded {
        Guarded {
            resource_type: "gpufleet_fleet",
            name: "training".into(),
            what: "fleet \"training\"".into(),
            policy_name: policy_name("fleet", "training"),
            variables: vec![],
            uses: "variables.podSpec.?priorityClassName.orValue('') == 'x'".into(),
            how: "uses it".into(),
            fence,
        }
    }

    #[test]
    fn the_policy_allows_by_name_or_labels_and_the_binding_leaves_system_namespaces_out() {
        let cluster = Cluster::offline(LabelScheme::Cfke);
        let fence = fence();
        let g = guarded(fence.clone());
        let policy = g.policy();
        let variables = policy.data["spec"]["variables"].as_array().unwrap();
        assert_eq!(
            variables.last().unwrap()["expression"],
            "request.namespace in ['training'] || (has(namespaceObject.metadata.labels) && 'team' in namespaceObject.metadata.labels && namespaceObject.metadata.labels['team'] == 'ml')"
        );
        let message = policy.data["spec"]["validations"][0]["message"]
            .as_str()
            .unwrap();
        assert!(
            message.starts_with("Fleet \"training\" may be used only from namespace \"training\" and namespaces labelled team=ml; this workload in namespace (its namespace) uses it.")
                && message.contains("`allowed_namespaces`"),
            "{message}"
        );
        let binding = g.binding(&cluster);
        assert_eq!(binding.data["spec"]["validationActions"], json!(["Warn"]));
        assert_eq!(
            binding.data["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"],
            json!(["gpu-operator", "kube-system", "monitoring"])
        );
        // What an import reads back is what was written.
        let back = imported_settings(&cluster, &policy, &binding);
        assert_eq!(back, fence);
        // The API server's defaults are no drift; a changed rule is.
        let mut live = policy.clone();
        live.data["spec"]["matchPolicy"] = json!("Equivalent");
        live.data["spec"]["matchConstraints"]["resourceRules"][0]["scope"] = json!("*");
        assert!(in_place(&live, &policy));
        live.data["spec"]["validations"][0]["expression"] = json!("true");
        assert!(!in_place(&live, &policy));
    }
}
