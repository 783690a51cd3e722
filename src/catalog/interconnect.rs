//! What a node's GPUs talk over besides PCIe: the EFA network interfaces EC2 gives a node of
//! a catalog model, where every instance type EC2 sells with that many of the model has the
//! same number.

use super::Accelerator;

/// The resource a pod requests to get EFA interfaces on EC2. Karpenter's AWS provider
/// advertises the instance type's `EfaInfo.MaximumEfaInterfaces` as its capacity
/// (karpenter-provider-aws, pkg/providers/instancetype/types.go, `efas`) and attaches that
/// many EFA interfaces only when a pod on the node requests it
/// (pkg/providers/instance/instance.go, `getEFACountForInstance`).
pub const EFA_RESOURCE: &str = "vpc.amazonaws.com/efa";

/// EFA interfaces per node for `gpus` GPUs of `model` on EC2.
struct EfaShape {
    model: &'static str,
    gpus: u32,
    interfaces: u32,
}

const fn efa(model: &'static str, gpus: u32, interfaces: u32) -> EfaShape {
    EfaShape {
        model,
        gpus,
        interfaces,
    }
}

/// `EfaInfo.MaximumEfaInterfaces` from EC2's DescribeInstanceTypes (moto 5.2.5's copy, checked
/// in tests/acceptance/fleet/ec2.rs) for the GPU counts whose EC2 instance types all agree:
/// p3dn.24xlarge, p4d/p4de.24xlarge, p5.4xlarge/48xlarge, p6-b200/b300.48xlarge and the
/// G-family types with 2 or more GPUs. Left out: 8 H200, as EC2 also sells p5e.48xlarge,
/// which moto's data lacks, and GPU counts where sizes differ (one L4: g6.xlarge has no EFA,
/// g6.8xlarge one; four L40S: g6e.12xlarge one, g6e.24xlarge two).
const EFA_SHAPES: &[EfaShape] = &[
    efa("V100-32GB", 8, 1),
    efa("T4", 4, 1),
    efa("T4", 8, 1),
    efa("A100-40GB", 8, 4),
    efa("A100-80GB", 8, 4),
    efa("A10G", 4, 1),
    efa("A10G", 8, 1),
    efa("L4", 4, 1),
    efa("L4", 8, 1),
    efa("L40S", 8, 4),
    efa("H100", 1, 1),
    efa("H100", 8, 32),
    efa("B200", 8, 8),
    efa("B300", 8, 16),
    efa("RTX-PRO-4500", 2, 1),
    efa("RTX-PRO-4500", 4, 1),
    efa("RTX-PRO-4500", 8, 2),
    efa("RTX-PRO-6000", 2, 1),
    efa("RTX-PRO-6000", 4, 2),
    efa("RTX-PRO-6000", 8, 4),
];

impl Accelerator {
    /// The EFA interfaces every EC2 node with `gpus` of this model has, where the catalog
    /// knows them to agree.
    pub fn ec2_efa_interfaces(&self, gpus: u32) -> Option<u32> {
        EFA_SHAPES
            .iter()
            .find(|s| s.model == self.name && s.gpus == gpus)
            .map(|s| s.interfaces)
    }
}

/// The EFA interfaces every EC2 node with `gpus` GPUs of any of `models` has: `None` unless
/// the catalog knows one number for all of them (and it is not 0).
pub fn ec2_efa_interfaces(models: &[&Accelerator], gpus: u32) -> Option<u32> {
    let mut counts = models.iter().map(|m| m.ec2_efa_interfaces(gpus));
    let first = counts.next()??;
    counts.all(|c| c == Some(first)).then_some(first)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::lookup;

    #[test]
    fn efa_interfaces_are_known_only_where_every_model_agrees() {
        let h100 = lookup("H100").unwrap();
        let a100 = [lookup("A100-40GB").unwrap(), lookup("A100-80GB").unwrap()];
        assert_eq!(ec2_efa_interfaces(&[h100], 8), Some(32));
        assert_eq!(ec2_efa_interfaces(&a100, 8), Some(4));
        assert_eq!(ec2_efa_interfaces(&[h100, a100[0]], 8), None);
        assert_eq!(ec2_efa_interfaces(&[h100], 2), None);
        assert_eq!(ec2_efa_interfaces(&[lookup("H200").unwrap()], 8), None);
        assert_eq!(ec2_efa_interfaces(&[], 8), None);
        for shape in EFA_SHAPES {
            let model = lookup(shape.model).unwrap();
            assert_eq!(model.name, shape.model, "canonical names only");
            assert!(
                model
                    .label_value(crate::catalog::LabelScheme::Aws)
                    .is_some()
            );
        }
    }
}
