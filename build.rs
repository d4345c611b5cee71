//! Builds the XDP program and AF_PACKET socket filter (bpf/picket_xdp.c) with Debian's
//! clang for the BPF target. The object is embedded in the binary (src/xdp/mod.rs).
//!
//! Without clang or libbpf's headers the rest of picket still builds: the object is left
//! empty, and `--ddos` / `--af-xdp` then say at start-up that this build has no XDP program.

use std::path::{Path, PathBuf};
use std::process::Command;

/// libbpf's helper declarations, which the program includes.
const BPF_HELPERS: &str = "/usr/include/bpf/bpf_helpers.h";

fn main() {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("picket_xdp.o");
    println!("cargo:rerun-if-changed=bpf");
    println!("cargo:rerun-if-env-changed=PICKET_CLANG");
    let clang = std::env::var("PICKET_CLANG").unwrap_or_else(|_| "clang".into());
    // libbpf's headers (bpf_helpers.h) come with Debian's libbpf-dev; without them the
    // program cannot build, which is the same case as no clang.
    if !Path::new(BPF_HELPERS).exists() {
        println!("cargo:warning=no {BPF_HELPERS}: building without the XDP program (apt install clang libbpf-dev)");
        std::fs::write(&out, b"").expect("write an empty XDP object");
        return;
    }
    let status = Command::new(&clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
        .arg("bpf/picket_xdp.c")
        .arg("-o")
        .arg(&out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed to build bpf/picket_xdp.c ({s}); see its messages above"),
        Err(e) => {
            println!("cargo:warning=no {clang} ({e}): building without the XDP program (apt install clang libbpf-dev)");
            std::fs::write(&out, b"").expect("write an empty XDP object");
        }
    }
}
