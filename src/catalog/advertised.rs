//! What a GPU node advertises to Kubernetes once it is shared or partitioned:
//! the NVIDIA device plugin's resource names, and the MIG layouts NVIDIA's
//! mig-manager knows for each model, with the MIG devices each one makes.
//!
//! Layout names follow the configurations recent GPU Operators generate from
//! the hardware: `all-disabled`, `all-enabled` (MIG mode on, no devices),
//! `all-balanced` and `all-<profile>` (as many of one profile as fit, `+`
//! spelled `.`: `all-1g.10gb.me`). Nodes pick one with the
//! `nvidia.com/mig.config` label.

use super::{Accelerator, MigProfile, all};

/// The resource a whole GPU is advertised as.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";
/// What the device plugin appends to a shared resource's name when it
/// renames shared devices (`renameByDefault`).
pub const SHARED_SUFFIX: &str = ".shared";

/// The layout that turns MIG off.
pub const MIG_DISABLED: &str = "all-disabled";
/// The layout that turns MIG on without making devices.
pub const MIG_ENABLED: &str = "all-enabled";
/// Two of the smallest one-slice profile, a two-slice and (on seven-slice
/// GPUs) a three-slice device.
pub const MIG_BALANCED: &str = "all-balanced";

/// The resource a MIG device of `profile` is advertised as under the mixed
/// MIG strategy: `nvidia.com/mig-1g.10gb` (`+me` becomes `.me`).
pub fn mig_resource(profile: &str) -> String {
    format!("nvidia.com/mig-{}", profile.replace('+', "."))
}

/// The resource shared devices of `resource` are advertised as when the
/// device plugin renames them: `nvidia.com/gpu.shared`.
pub fn shared_resource(resource: &str) -> String {
    format!("{resource}{SHARED_SUFFIX}")
}

/// The name of the layout that fills every GPU with `profile`: `all-1g.10gb`.
pub fn single_profile_layout(profile: &str) -> String {
    format!("all-{}", profile.replace('+', "."))
}

/// How one MIG layout splits each GPU of a model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MigLayout {
    /// The layout name, e.g. `all-1g.10gb`.
    pub name: String,
    /// Whether the GPU is in MIG mode (false only for `all-disabled`).
    pub mig_enabled: bool,
    /// The MIG devices per GPU and how many of each; empty when MIG is off
    /// (the GPU is advertised whole) or on without devices.
    pub devices: Vec<(&'static MigProfile, u8)>,
}

impl MigLayout {
    /// What one GPU advertises in this layout under the mixed strategy:
    /// (resource name, count) per device kind, or one whole GPU when MIG is
    /// off.
    pub fn resources(&self) -> Vec<(String, u32)> {
        if !self.mig_enabled {
            return vec![(GPU_RESOURCE.to_string(), 1)];
        }
        self.devices
            .iter()
            .map(|(profile, count)| (mig_resource(profile.name), u32::from(*count)))
            .collect()
    }
}

impl Accelerator {
    /// The MIG layouts mig-manager knows for this model: `all-disabled`,
    /// `all-enabled`, `all-balanced`, then `all-<profile>` for each profile;
    /// none when the model has no MIG.
    pub fn mig_layouts(&self) -> Vec<MigLayout> {
        if self.mig_profiles.is_empty() {
            return Vec::new();
        }
        let mut layouts = vec![
            MigLayout {
                name: MIG_DISABLED.to_string(),
                mig_enabled: false,
                devices: Vec::new(),
            },
            MigLayout {
                name: MIG_ENABLED.to_string(),
                mig_enabled: true,
                devices: Vec::new(),
            },
            MigLayout {
                name: MIG_BALANCED.to_string(),
                mig_enabled: true,
                devices: self.balanced(),
            },
        ];
        layouts.extend(self.mig_profiles.iter().map(|profile| MigLayout {
            name: single_profile_layout(profile.name),
            mig_enabled: true,
            devices: vec![(profile, profile.max_instances)],
        }));
        layouts
    }

    /// The layout called `name`, if this model has it.
    pub fn mig_layout(&self, name: &str) -> Option<MigLayout> {
        self.mig_layouts().into_iter().find(|l| l.name == name)
    }

    /// `all-balanced`: two of the first one-slice profile, one two-slice
    /// and, where the GPU has seven slices, one three-slice device (plain
    /// profiles only, no `+me`).
    fn balanced(&self) -> Vec<(&'static MigProfile, u8)> {
        let slices = |p: &MigProfile| {
            p.name
                .split_once("g.")
                .and_then(|(s, _)| s.parse::<u8>().ok())
        };
        let gpu_slices = self
            .mig_profiles
            .iter()
            .filter_map(slices)
            .max()
            .unwrap_or(0);
        let first = |n: u8| {
            self.mig_profiles
                .iter()
                .find(|p| slices(p) == Some(n) && !p.name.contains('+'))
        };
        let wanted: &[(u8, u8)] = if gpu_slices >= 7 {
            &[(1, 2), (2, 1), (3, 1)]
        } else {
            &[(1, 2), (2, 1)]
        };
        wanted
            .iter()
            .filter_map(|&(n, count)| first(n).map(|p| (p, count)))
            .collect()
    }

    /// Every resource name nodes with this model can advertise: whole GPUs,
    /// renamed shared GPUs and, with MIG, each profile's device (plain and
    /// renamed when time-sliced).
    pub fn resource_names(&self) -> Vec<String> {
        let mut names = vec![GPU_RESOURCE.to_string(), shared_resource(GPU_RESOURCE)];
        for profile in self.mig_profiles {
            let resource = mig_resource(profile.name);
            names.push(shared_resource(&resource));
            names.push(resource);
        }
        names
    }
}

/// Whether some catalog model has a layout called `name`.
pub fn is_known_layout(name: &str) -> bool {
    all().iter().any(|a| a.mig_layout(name).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::lookup;

    fn resources(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
        pairs.iter().map(|(r, n)| (r.to_string(), *n)).collect()
    }

    /// A layout's name and what one GPU advertises in it.
    type Written = (&'static str, &'static [(&'static str, u32)]);

    /// Every layout of a few models, in order, with what one GPU
    /// advertises in it (MIG user guide; mig-manager's own defaults are
    /// compared in tests/offline/upstream_nvidia.rs).
    #[test]
    fn every_layout_of_a_few_models() {
        let expected: [(&str, &[Written]); 4] = [
            (
                "H100",
                &[
                    ("all-disabled", &[("nvidia.com/gpu", 1)]),
                    ("all-enabled", &[]),
                    (
                        "all-balanced",
                        &[
                            ("nvidia.com/mig-1g.10gb", 2),
                            ("nvidia.com/mig-2g.20gb", 1),
                            ("nvidia.com/mig-3g.40gb", 1),
                        ],
                    ),
                    ("all-1g.10gb", &[("nvidia.com/mig-1g.10gb", 7)]),
                    ("all-1g.10gb.me", &[("nvidia.com/mig-1g.10gb.me", 1)]),
                    ("all-1g.20gb", &[("nvidia.com/mig-1g.20gb", 4)]),
                    ("all-2g.20gb", &[("nvidia.com/mig-2g.20gb", 3)]),
                    ("all-3g.40gb", &[("nvidia.com/mig-3g.40gb", 2)]),
                    ("all-4g.40gb", &[("nvidia.com/mig-4g.40gb", 1)]),
                    ("all-7g.80gb", &[("nvidia.com/mig-7g.80gb", 1)]),
                ],
            ),
            (
                "H200",
                &[
                    ("all-disabled", &[("nvidia.com/gpu", 1)]),
                    ("all-enabled", &[]),
                    (
                        "all-balanced",
                        &[
                            ("nvidia.com/mig-1g.18gb", 2),
                            ("nvidia.com/mig-2g.35gb", 1),
                            ("nvidia.com/mig-3g.71gb", 1),
                        ],
                    ),
                    ("all-1g.18gb", &[("nvidia.com/mig-1g.18gb", 7)]),
                    ("all-1g.18gb.me", &[("nvidia.com/mig-1g.18gb.me", 1)]),
                    ("all-1g.35gb", &[("nvidia.com/mig-1g.35gb", 4)]),
                    ("all-2g.35gb", &[("nvidia.com/mig-2g.35gb", 3)]),
                    ("all-3g.71gb", &[("nvidia.com/mig-3g.71gb", 2)]),
                    ("all-4g.71gb", &[("nvidia.com/mig-4g.71gb", 1)]),
                    ("all-7g.141gb", &[("nvidia.com/mig-7g.141gb", 1)]),
                ],
            ),
            (
                // Four slices: no three-slice device in all-balanced.
                "A30",
                &[
                    ("all-disabled", &[("nvidia.com/gpu", 1)]),
                    ("all-enabled", &[]),
                    (
                        "all-balanced",
                        &[("nvidia.com/mig-1g.6gb", 2), ("nvidia.com/mig-2g.12gb", 1)],
                    ),
                    ("all-1g.6gb", &[("nvidia.com/mig-1g.6gb", 4)]),
                    ("all-1g.6gb.me", &[("nvidia.com/mig-1g.6gb.me", 1)]),
                    ("all-2g.12gb", &[("nvidia.com/mig-2g.12gb", 2)]),
                    ("all-2g.12gb.me", &[("nvidia.com/mig-2g.12gb.me", 1)]),
                    ("all-4g.24gb", &[("nvidia.com/mig-4g.24gb", 1)]),
                ],
            ),
            (
                // 1g.10gb is two slices' memory here, so only four fit.
                "A100-40GB",
                &[
                    ("all-disabled", &[("nvidia.com/gpu", 1)]),
                    ("all-enabled", &[]),
                    (
                        "all-balanced",
                        &[
                            ("nvidia.com/mig-1g.5gb", 2),
                            ("nvidia.com/mig-2g.10gb", 1),
                            ("nvidia.com/mig-3g.20gb", 1),
                        ],
                    ),
                    ("all-1g.5gb", &[("nvidia.com/mig-1g.5gb", 7)]),
                    ("all-1g.5gb.me", &[("nvidia.com/mig-1g.5gb.me", 1)]),
                    ("all-1g.10gb", &[("nvidia.com/mig-1g.10gb", 4)]),
                    ("all-2g.10gb", &[("nvidia.com/mig-2g.10gb", 3)]),
                    ("all-3g.20gb", &[("nvidia.com/mig-3g.20gb", 2)]),
                    ("all-4g.20gb", &[("nvidia.com/mig-4g.20gb", 1)]),
                    ("all-7g.40gb", &[("nvidia.com/mig-7g.40gb", 1)]),
                ],
            ),
        ];
        for (model, layouts) in expected {
            let ours: Vec<(String, Vec<(String, u32)>)> = lookup(model)
                .unwrap()
                .mig_layouts()
                .iter()
                .map(|l| (l.name.clone(), l.resources()))
                .collect();
            let written: Vec<(String, Vec<(String, u32)>)> = layouts
                .iter()
                .map(|(name, devices)| (name.to_string(), resources(devices)))
                .collect();
            assert_eq!(ours, written, "{model}");
        }
        assert!(lookup("H200").unwrap().mig_layout("all-1g.10gb").is_none());
        assert!(lookup("L4").unwrap().mig_layouts().is_empty());
        assert!(is_known_layout("all-1g.18gb") && !is_known_layout("all-1g.19gb"));
    }

    #[test]
    fn resource_names() {
        let names = lookup("A30").unwrap().resource_names();
        assert_eq!(&names[..2], ["nvidia.com/gpu", "nvidia.com/gpu.shared"]);
        assert!(names.contains(&"nvidia.com/mig-1g.6gb.me".to_string()));
        assert!(names.contains(&"nvidia.com/mig-2g.12gb.shared".to_string()));
        assert_eq!(lookup("T4").unwrap().resource_names().len(), 2);
    }
}
