//! Requests as the API server itself counted them: `apiserver_request_total`
//! from its /metrics endpoint, by verb and resource, read before and after
//! a command. Requests without a resource are keyed by what the server puts
//! in their `subresource` label: `api` and `apis` for aggregated discovery,
//! `openapi/v3` and so on. The server does not count legacy per-group
//! discovery (`/apis/<group>/<version>`) or `/openapi/v2` in this metric.

use std::collections::BTreeMap;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts(pub BTreeMap<(String, String), u64>);

/// Keys of requests that are API discovery (`/api`, `/apis`).
pub const DISCOVERY: [&str; 2] = ["api", "apis"];

impl Counts {
    pub fn parse(metrics: &str) -> Counts {
        let mut counts = BTreeMap::new();
        for line in metrics.lines() {
            let Some((labels, value)) = line
                .strip_prefix("apiserver_request_total{")
                .and_then(|rest| rest.rsplit_once("} "))
            else {
                continue;
            };
            let labels = parse_labels(labels);
            let get = |k: &str| labels.get(k).map(String::as_str).unwrap_or_default();
            let resource = match (get("resource"), get("subresource")) {
                ("", path) => path.to_string(),
                (resource, "") => resource.to_string(),
                (resource, sub) => format!("{resource}/{sub}"),
            };
            let value: f64 = value.trim().parse().unwrap_or(0.0);
            *counts
                .entry((get("verb").to_string(), resource))
                .or_insert(0) += value as u64;
        }
        Counts(counts)
    }

    /// What was counted between `before` and `self`.
    pub fn since(&self, before: &Counts) -> Counts {
        Counts(
            self.0
                .iter()
                .filter_map(|(key, &after)| {
                    let delta = after - before.0.get(key).copied().unwrap_or(0);
                    (delta > 0).then(|| (key.clone(), delta))
                })
                .collect(),
        )
    }

    /// Requests to one resource (`priorityclasses`), by verb.
    pub fn by_verb(&self, resource: &str) -> BTreeMap<String, u64> {
        self.0
            .iter()
            .filter(|((_, r), _)| r == resource)
            .map(|((verb, _), &n)| (verb.clone(), n))
            .collect()
    }

    pub fn discovery(&self) -> u64 {
        DISCOVERY
            .iter()
            .map(|d| self.by_verb(d).values().sum::<u64>())
            .sum()
    }
}

fn parse_labels(text: &str) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let Some(end) = after.find('"') else { break };
        labels.insert(
            key.trim_start_matches(',').to_string(),
            after[..end].to_string(),
        );
        rest = &after[end + 1..];
    }
    labels
}

/// Reads the counters (the client needs permission to GET /metrics).
pub async fn scrape(client: &kube::Client) -> Counts {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = client
        .request_text(request)
        .await
        .expect("read the API server's /metrics");
    Counts::parse(&text)
}
