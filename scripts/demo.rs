//! `make demo`'s scenario: the system test's own (test-support's
//! `scenario`), narrated step by step, with its state in STATE_DIR and the
//! fleets left declared on the cluster. scripts/demo.sh installs the
//! provider, starts the cluster and runs it:
//!
//!   demo KUBECONFIG STATE_DIR
//!
//! The CLI is `terraform` from PATH, else the OpenTofu testbed/build.sh
//! built. An assertion that fails ends the demo with a non-zero exit,
//! saying which.

use common::repo_root;
use common::scenario::{Audience, Scenario};
use common::terraform::find_cli;

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kubeconfig, state] = &args[..] else {
        eprintln!("usage: demo KUBECONFIG STATE_DIR");
        std::process::exit(2);
    };
    let cli = find_cli("terraform", &[])
        .or_else(|| find_cli("tofu", &[repo_root().join("target/tools/bin/tofu")]))
        .expect("neither terraform on PATH nor tofu in target/tools/bin (testbed/build.sh)");
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |panic| {
        report(panic);
        let payload = panic.payload();
        let why = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("a check failed");
        eprintln!("\nDEMO FAILED: {}", why.lines().next().unwrap_or_default());
    }));
    Scenario::new(&cli, kubeconfig, Audience::Demo(state.into()))
        .await
        .play()
        .await;
}
