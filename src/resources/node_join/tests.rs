//! The resource's plan, validation and object mapping, without a cluster.

use super::*;
use crate::catalog::LabelScheme;
use crate::framework::Resource;
use crate::framework::testkit::Harness;
use crate::kit::object::ObjectResource;
use serde_json::json;

fn harness() -> Harness<Cluster> {
    Harness::new(ObjectResource(BootstrapToken))
}

fn errors_of(config: serde_json::Value) -> Vec<(String, String)> {
    let h = harness();
    h.validate(&h.value(config))
}

#[test]
fn bad_tokens_durations_groups_and_labels_are_pointed_at() {
    let found = errors_of(json!({
        "token_id": "ABC123",
        "token_secret": "tooshort",
        "ttl": "0s",
        "auth_extra_groups": ["system:nodes"],
        "labels": {"node-role.kubernetes.io/gpu": "", "team": "ml"},
        "usages": ["authentication", "admin"],
    }));
    let paths: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "token_id",
            "token_secret",
            "ttl",
            "usages",
            "auth_extra_groups",
            "labels"
        ],
        "{found:?}"
    );
    assert!(found[0].1.contains("[a-z0-9]{6}"), "{found:?}");
    assert!(found[2].1.contains("outside 5m..=168h"), "{found:?}");
    assert!(found[4].1.contains("system:bootstrappers:"), "{found:?}");
    assert!(found[5].1.contains("--node-labels"), "{found:?}");
    let window = errors_of(json!({"ttl": "1h", "rotate_when_expires_within": "2h"}));
    assert_eq!(window[0].0, "rotate_when_expires_within", "{window:?}");
    let not_a_duration = errors_of(json!({"ttl": "one day"}));
    assert!(
        not_a_duration[0].1.contains("not a duration"),
        "{not_a_duration:?}"
    );
}

#[test]
fn plan_of_a_new_token_knows_the_kubelet_fragment_but_not_the_token() {
    let h = harness();
    let config = h.value(json!({
        "taints": [{"key": "nvidia.com/gpu", "value": "training", "effect": "NoSchedule"}],
        "labels": {"team": "ml"},
        "sharing_config": "h100-mps",
    }));
    let plan = h.plan(&Cluster::offline(LabelScheme::Cfke), &Value::Null, &config);
    // No cluster, no check of `sharing_config` against its ConfigMap.
    assert!(plan.diagnostics.0.is_empty(), "{:?}", plan.diagnostics);
    let planned = &plan.planned_state;
    for unknown in [
        "token_id",
        "token_secret",
        "token",
        "expiration",
        "kubeadm_join_command",
        "ca_cert_hash",
    ] {
        assert!(
            planned.attr(unknown).is_unknown(),
            "{unknown}: {:?}",
            planned.attr(unknown)
        );
    }
    assert_eq!(planned.attr("ttl"), &Value::string("24h"));
    assert_eq!(
        planned.attr("kubelet_node_labels_flag"),
        &Value::string("--node-labels=nvidia.com/device-plugin.config=h100-mps,team=ml")
    );
    let fragment = planned.attr("kubelet_config").as_str().unwrap();
    let parsed: serde_json::Value = serde_saphyr::from_str(fragment).unwrap();
    assert_eq!(
        parsed,
        json!({
            "apiVersion": "kubelet.config.k8s.io/v1beta1",
            "kind": "KubeletConfiguration",
            "registerWithTaints": [{"effect": "NoSchedule", "key": "nvidia.com/gpu", "value": "training"}],
        })
    );
    let given = h.value(json!({"token_id": "abcdef", "token_secret": "0123456789abcdef"}));
    let plan = h.plan(&Cluster::offline(LabelScheme::Cfke), &Value::Null, &given);
    assert_eq!(
        plan.planned_state.attr("token"),
        &Value::string("abcdef.0123456789abcdef")
    );
    assert_eq!(
        plan.planned_state.attr("secret_name"),
        &Value::string("bootstrap-token-abcdef")
    );
    assert_eq!(
        plan.planned_state.attr("kubelet_node_labels_flag"),
        &Value::Null
    );
}

fn state_expiring_in(h: &Harness<Cluster>, within: SignedDuration) -> Value {
    let expiration = Timestamp::now()
        .checked_add(within)
        .unwrap()
        .round(jiff::Unit::Second)
        .unwrap();
    h.value(json!({
        "id": "abcdef",
        "token_id": "abcdef",
        "token_secret": "0123456789abcdef",
        "token": "abcdef.0123456789abcdef",
        "secret_name": "bootstrap-token-abcdef",
        "ttl": "24h",
        "rotate_when_expires_within": "1h",
        "expiration": expiration.to_string(),
        "usages": ["authentication", "signing"],
        "auth_extra_groups": [DEFAULT_GROUP],
        "manage_bootstrap_rbac": false,
        "kubelet_config": kubelet_config(&[]),
        "api_server_endpoint": "https://10.0.0.1:6443",
        "cluster_ca_certificate": "pem",
        "ca_cert_hash": "sha256:00",
        "kubeadm_join_command": "kubeadm join",
    }))
}

#[test]
fn a_token_about_to_expire_is_replaced_and_a_fresh_one_kept() {
    let h = harness();
    let cluster = Cluster::offline(LabelScheme::Cfke);
    let config = h.value(json!({}));
    let prior = state_expiring_in(&h, SignedDuration::from_hours(20));
    let fresh = h.plan(&cluster, &prior, &config);
    assert!(
        fresh.requires_replace.is_empty(),
        "{:?}",
        fresh.requires_replace
    );
    assert_eq!(fresh.planned_state, prior);
    for within in [SignedDuration::from_mins(30), SignedDuration::from_mins(-5)] {
        let expiring = h.plan(&cluster, &state_expiring_in(&h, within), &config);
        assert_eq!(
            expiring.requires_replace,
            [AttributePath::attr("expiration")]
        );
        assert!(expiring.planned_state.attr("token_secret").is_unknown());
        assert!(expiring.planned_state.attr("expiration").is_unknown());
    }
}

#[test]
fn the_secret_is_a_bootstrap_token_and_reads_back_as_state() {
    let cluster = Cluster::offline(LabelScheme::Cfke);
    let mut model = Model {
        token_id: Some("abcdef".into()),
        token_secret: Some("0123456789abcdef".into()),
        ttl: Some("2h".into()),
        rotate_when_expires_within: Some("30m".into()),
        expiration: Some("2026-12-02T10:00:00Z".into()),
        usages: Some(vec!["authentication".into(), "signing".into()]),
        auth_extra_groups: Some(vec![
            DEFAULT_GROUP.into(),
            "system:bootstrappers:gpu".into(),
        ]),
        taints: Some(vec![TaintSpec {
            key: "gpu".into(),
            value: None,
            effect: "NoSchedule".into(),
        }]),
        labels: Some([("team".to_string(), "ml".to_string())].into()),
        sharing_config: Some("mps".into()),
        ..Default::default()
    };
    BootstrapToken.derive(&mut model);
    let secret = BootstrapToken.to_object(&(), &model).unwrap();
    assert_eq!(
        secret.metadata.name.as_deref(),
        Some("bootstrap-token-abcdef")
    );
    assert_eq!(secret.type_.as_deref(), Some(SECRET_TYPE));
    let data = secret.data.clone().unwrap();
    let text = |k: &str| String::from_utf8(data[k].0.clone()).unwrap();
    assert_eq!(text("token-id"), "abcdef");
    assert_eq!(text("token-secret"), "0123456789abcdef");
    assert_eq!(text("expiration"), "2026-12-02T10:00:00Z");
    assert_eq!(text("usage-bootstrap-authentication"), "true");
    assert_eq!(text("usage-bootstrap-signing"), "true");
    assert_eq!(
        text("auth-extra-groups"),
        "system:bootstrappers:gpufleet,system:bootstrappers:gpu"
    );
    let annotation = &secret.metadata.annotations.as_ref().unwrap()[SETTINGS_ANNOTATION];
    assert!(!annotation.contains("0123456789abcdef"), "{annotation}");

    let mut back = BootstrapToken
        .state_from(&cluster, secret, &Model::default(), true)
        .unwrap();
    BootstrapToken.derive(&mut back);
    assert_eq!(back, model);
}

#[test]
fn import_takes_a_token_id() {
    let h = ObjectResource(BootstrapToken);
    assert_eq!(
        h.import("abcdef").unwrap().secret_name.as_deref(),
        Some("bootstrap-token-abcdef")
    );
    let error = h.import("bootstrap-token-abcdef").unwrap_err();
    assert!(format!("{error:?}").contains("before the dot"), "{error:?}");
}
