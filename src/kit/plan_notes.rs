//! Notes resources leave for each other while one provider process plans a
//! run. Terraform plans each resource on its own, in any order and in
//! parallel, but through one provider process: a resource that depends on
//! what another in the same configuration declares (a cluster-wide setting
//! and the fleets it affects) records what it is here, and whichever of the
//! two is planned second sees the other.

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Per topic, per resource, a short note.
#[derive(Default)]
pub struct PlanNotes(Mutex<BTreeMap<&'static str, BTreeMap<String, String>>>);

impl PlanNotes {
    /// Records `note` for resource `who` under `topic` (replacing its
    /// earlier note) and returns the notes of the other resources.
    pub fn exchange(
        &self,
        topic: &'static str,
        who: &str,
        note: String,
    ) -> BTreeMap<String, String> {
        let mut notes = self.0.lock().expect("plan notes lock");
        let topic = notes.entry(topic).or_default();
        topic.insert(who.to_string(), note);
        topic
            .iter()
            .filter(|(k, _)| k.as_str() != who)
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
