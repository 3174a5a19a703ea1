//! Compiles the vendored Kubernetes .protos (see proto/README.md) into one
//! FileDescriptorSet that the crate embeds and loads at first use.

use std::path::PathBuf;

const FILES: &[&str] = &[
    "k8s.io/api/core/v1/generated.proto",
    "k8s.io/api/apps/v1/generated.proto",
    "k8s.io/api/batch/v1/generated.proto",
    "k8s.io/api/rbac/v1/generated.proto",
    "k8s.io/api/scheduling/v1/generated.proto",
    "k8s.io/api/policy/v1/generated.proto",
    "k8s.io/api/authentication/v1/generated.proto",
    "k8s.io/api/authorization/v1/generated.proto",
    "k8s.io/api/coordination/v1/generated.proto",
    "k8s.io/api/discovery/v1/generated.proto",
    "k8s.io/api/autoscaling/v1/generated.proto",
    "k8s.io/api/networking/v1/generated.proto",
    "k8s.io/apimachinery/pkg/apis/meta/v1/generated.proto",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("cargo:rerun-if-changed=proto");
    let files = FILES.iter().map(|f| format!("proto/{f}"));
    let bytes = protox::Compiler::new(["proto"])?
        .include_imports(true)
        .include_source_info(false)
        .open_files(files)?
        .encode_file_descriptor_set();
    let out = PathBuf::from(std::env::var("OUT_DIR")?).join("k8s.fds");
    std::fs::write(out, bytes)?;
    Ok(())
}
