//! Compiles the wire definitions in `proto/` with protox (pure Rust), so a
//! fresh machine needs no system `protoc`.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let files = [
        "proto/tfplugin6.proto",
        "proto/plugin/grpc_controller.proto",
        "proto/plugin/grpc_stdio.proto",
        "proto/plugin/grpc_broker.proto",
    ];
    for file in files {
        println!("cargo:rerun-if-changed={file}");
    }
    let descriptors = protox::compile(files, ["proto"])?;
    tonic_prost_build::configure()
        .build_client(true)
        .build_server(true)
        .compile_fds(descriptors)?;
    Ok(())
}
