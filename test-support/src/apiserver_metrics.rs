//! Requests as the API server itself counted and timed them:
//! `apiserver_request_total` and `apiserver_request_duration_seconds_sum`
//! from its /metrics endpoint, by verb and resource, read before and after
//! a command. Requests without a resource are keyed by what the server puts
//! in their `subresource` label: `api` and `apis` for aggregated discovery,
//! `openapi/v3` and so on. The server does not count legacy per-group
//! discovery (`/apis/<group>/<version>`) or `/openapi/v2` in this metric.

use std::collections::BTreeMap;

/// (verb, resource) → a metric's value.
type ByKey<T> = BTreeMap<(String, String), T>;

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    /// How many requests were answered.
    pub requests: ByKey<u64>,
    /// How long the server took to answer them, in all: their durations
    /// added up, from request in to response out.
    pub seconds: ByKey<f64>,
}

/// Keys of requests that are API discovery (`/api`, `/apis`).
pub const DISCOVERY: [&str; 2] = ["api", "apis"];

impl Counts {
    pub fn parse(metrics: &str) -> Counts {
        let mut counts = Counts::default();
        for line in metrics.lines() {
            let Some((name, rest)) = line.split_once('{') else {
                continue;
            };
            let Some((labels, value)) = rest.rsplit_once("} ") else {
                continue;
            };
            let labels = parse_labels(labels);
            let get = |k: &str| labels.get(k).map(String::as_str).unwrap_or_default();
            let resource = match (get("resource"), get("subresource")) {
                ("", path) => path.to_string(),
                (resource, "") => resource.to_string(),
                (resource, sub) => format!("{resource}/{sub}"),
            };
            let key = (get("verb").to_string(), resource);
            let value: f64 = value.trim().parse().unwrap_or(0.0);
            match name {
                "apiserver_request_total" => {
                    *counts.requests.entry(key).or_insert(0) += value as u64
                }
                "apiserver_request_duration_seconds_sum" => {
                    *counts.seconds.entry(key).or_insert(0.0) += value
                }
                _ => {}
            }
        }
        counts
    }

    /// What was counted between `before` and `self`.
    pub fn since(&self, before: &Counts) -> Counts {
        Counts {
            requests: grown(&self.requests, &before.requests),
            seconds: grown(&self.seconds, &before.seconds),
        }
    }

    /// Requests to one resource (`priorityclasses`), by verb.
    pub fn by_verb(&self, resource: &str) -> BTreeMap<String, u64> {
        self.requests
            .iter()
            .filter(|((_, r), _)| r == resource)
            .map(|((verb, _), &n)| (verb.clone(), n))
            .collect()
    }

    /// The time the server spent answering requests to one resource, all
    /// verbs but WATCH, whose duration is how long the watch stayed open.
    pub fn seconds_on(&self, resource: &str) -> f64 {
        self.seconds
            .iter()
            .filter(|((verb, r), _)| r == resource && verb != "WATCH")
            .map(|(_, s)| s)
            .sum()
    }

    pub fn discovery(&self) -> u64 {
        DISCOVERY
            .iter()
            .map(|d| self.by_verb(d).values().sum::<u64>())
            .sum()
    }
}

/// The keys whose value grew from `before` to `after`, by how much.
fn grown<T>(after: &ByKey<T>, before: &ByKey<T>) -> ByKey<T>
where
    T: Copy + Default + PartialOrd + std::ops::Sub<Output = T>,
{
    after
        .iter()
        .filter_map(|(key, &value)| {
            let delta = value - before.get(key).copied().unwrap_or_default();
            (delta > T::default()).then(|| (key.clone(), delta))
        })
        .collect()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as kube-apiserver v1.34 writes them (labels abridged).
    const METRICS: &str = r#"apiserver_request_total{code="200",resource="priorityclasses",subresource="",verb="GET"} 7
apiserver_request_total{code="404",resource="priorityclasses",subresource="",verb="GET"} 1
apiserver_request_duration_seconds_sum{resource="priorityclasses",subresource="",verb="GET"} 0.25
apiserver_request_duration_seconds_sum{resource="priorityclasses",subresource="",verb="WATCH"} 60
apiserver_request_duration_seconds_count{resource="priorityclasses",subresource="",verb="GET"} 8
apiserver_request_duration_seconds_sum{resource="",subresource="apis",verb="GET"} 0.5
"#;

    #[test]
    fn counts_and_times_by_verb_and_resource() {
        let counts = Counts::parse(METRICS);
        assert_eq!(
            counts.by_verb("priorityclasses"),
            [("GET".to_string(), 8)].into()
        );
        assert_eq!(counts.seconds_on("priorityclasses"), 0.25);
        assert_eq!(counts.seconds_on("apis"), 0.5);
    }

    #[test]
    fn since_keeps_what_grew() {
        let before = Counts::parse(METRICS);
        let after = Counts::parse(&METRICS.replace("} 7", "} 9").replace("} 0.25", "} 1.25"));
        let grown = after.since(&before);
        assert_eq!(
            grown.by_verb("priorityclasses"),
            [("GET".to_string(), 2)].into()
        );
        assert_eq!(grown.seconds_on("priorityclasses"), 1.0);
        assert_eq!(grown.seconds_on("apis"), 0.0);
    }
}
