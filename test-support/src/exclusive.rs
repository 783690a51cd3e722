//! The tests of one tier run side by side in one process (libtest's
//! threads) against one cluster. The few that need something of it to
//! themselves hold one of these guards while they run, and the tests that
//! would disturb them hold the other side. A test that panics while holding
//! a guard does not poison it for the tests after.
//!
//! A guard excludes only within its process. `make test` runs the
//! acceptance tests that take one in a process of their own, beside the
//! others on the same cluster (scripts/test.sh), so that threads waiting
//! their turn do not idle the others' slots; it marks the other process
//! with `GPUFLEET_CLUSTER_POLICY_TESTS_ELSEWHERE`, where taking a guard is a failure.

use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

static CLUSTER_POLICY: RwLock<()> = RwLock::new(());

/// Set in a process whose tests must take no guard: those that do run in
/// another process at the same time, where this one's guards exclude nothing.
const ELSEWHERE: &str = "GPUFLEET_CLUSTER_POLICY_TESTS_ELSEWHERE";

fn not_elsewhere() {
    assert!(
        std::env::var_os(ELSEWHERE).is_none(),
        "this test takes a ClusterPolicy guard in a process whose guards exclude nothing ({ELSEWHERE} is set): \
         add its module, or its path, to cluster_policy_modules in scripts/test.sh"
    );
}

/// A ClusterPolicy of the test's own, the one that counts on the cluster
/// while it runs, and no other test's: `gpufleet_gpu_sharing` points the
/// first by name, and the simulated device plugin follows it on every node.
/// One the cluster held before the tests (any cluster with the GPU Operator
/// has one) may be there too: `fixtures::HelmClusterPolicy` names the
/// test's own to sort before it.
pub fn own_cluster_policy() -> RwLockWriteGuard<'static, ()> {
    not_elsewhere();
    CLUSTER_POLICY
        .write()
        .unwrap_or_else(PoisonError::into_inner)
}

/// No other test's ClusterPolicy while this one runs, so that what the
/// simulated device plugin advertises on its nodes comes from the
/// device-plugin ConfigMap alone, as on a cluster without the GPU Operator,
/// and so that MIG and MPS sharing, which plans and applies check against
/// the ClusterPolicy's MIG strategy, meet none of theirs. One the cluster
/// held before the tests may be there: a test under this guard neither
/// writes it (`manage_cluster_policy = false`) nor depends on it; one that
/// would owns a ClusterPolicy instead, or is about a cluster without the
/// operator and takes [`no_gpu_operator`].
pub fn no_cluster_policy() -> RwLockReadGuard<'static, ()> {
    not_elsewhere();
    CLUSTER_POLICY
        .read()
        .unwrap_or_else(PoisonError::into_inner)
}

/// [`no_cluster_policy`] for a test of a cluster without the GPU
/// Operator: a device plugin that gpufleet's sharing reaches through the
/// ConfigMap alone. On a cluster whose operator has a ClusterPolicy, which
/// reads no gpufleet ConfigMap until told to (so gpufleet rightly refuses
/// the test's sharing), `what` is skipped: `None`. Under this guard any
/// ClusterPolicy is the cluster's own, as tests own theirs exclusively.
pub fn no_gpu_operator(what: &str) -> Option<RwLockReadGuard<'static, ()>> {
    let guard = no_cluster_policy();
    let held = crate::block_on(async {
        crate::fixtures::cluster_policy_names(&crate::kube_client().await).await
    });
    match held.first() {
        None => Some(guard),
        Some(theirs) => {
            crate::skipped(
                what,
                &format!("the cluster holds the GPU Operator's ClusterPolicy {theirs:?}"),
            );
            None
        }
    }
}
