//! Builds the XDP program and AF_PACKET socket filter (bpf/picket_xdp.c) and the adaptive
//! fanout program (bpf/fanout.c) with Debian's clang for the BPF target. The objects are
//! embedded in the binary (src/xdp/mod.rs, src/capture/afpacket/adaptive.rs).
//!
//! Without clang or libbpf's headers the rest of picket still builds: the objects are left
//! empty, and `--ddos` / `--af-xdp` / `--fanout adaptive` then say at start-up that this
//! build has no eBPF program.

use std::path::{Path, PathBuf};
use std::process::Command;

/// libbpf's helper declarations, which the program includes.
const BPF_HELPERS: &str = "/usr/include/bpf/bpf_helpers.h";

/// The eBPF objects: (source, object in OUT_DIR, what it is for the messages).
const OBJECTS: [(&str, &str, &str); 2] =
    [("bpf/picket_xdp.c", "picket_xdp.o", "XDP program"), ("bpf/fanout.c", "picket_fanout.o", "eBPF fanout program")];

fn main() {
    record_build_facts();
    let out_dir = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    println!("cargo:rerun-if-changed=bpf");
    println!("cargo:rerun-if-env-changed=PICKET_CLANG");
    let clang = std::env::var("PICKET_CLANG").unwrap_or_else(|_| "clang".into());
    for (source, object, what) in OBJECTS {
        build_object(&clang, source, &out_dir.join(object), what);
    }
}

/// Builds one object; without clang or libbpf's headers it is left empty, and the part of
/// picket that needs it says so at start-up.
fn build_object(clang: &str, source: &str, out: &Path, what: &str) {
    // libbpf's headers (bpf_helpers.h) come with Debian's libbpf-dev; without them the
    // program cannot build, which is the same case as no clang.
    if !Path::new(BPF_HELPERS).exists() {
        println!("cargo:warning=no {BPF_HELPERS}: building without the {what} (apt install clang libbpf-dev)");
        std::fs::write(out, b"").expect("write an empty eBPF object");
        return;
    }
    let status = Command::new(clang)
        .args(["-O2", "-g", "-Wall", "-Werror", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c"])
        .arg(source)
        .arg("-o")
        .arg(out)
        .status();
    match status {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{clang} failed to build {source} ({s}); see its messages above"),
        Err(e) => {
            println!("cargo:warning=no {clang} ({e}): building without the {what} (apt install clang libbpf-dev)");
            std::fs::write(out, b"").expect("write an empty eBPF object");
        }
    }
}

/// Facts `picket --build-info` prints that only the build knows: the compiler, the target and
/// profile, and the versions of the system libraries pkg-config found (`unknown` without it).
fn record_build_facts() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=PICKET_BUILD_RUSTC={rustc_version}");
    for (var, key) in [("TARGET", "PICKET_BUILD_TARGET"), ("PROFILE", "PICKET_BUILD_PROFILE")] {
        println!("cargo:rustc-env={key}={}", std::env::var(var).unwrap_or_else(|_| "unknown".into()));
    }
    for (lib, key) in [("libhs", "PICKET_BUILD_LIBHS"), ("libpcre2-8", "PICKET_BUILD_PCRE2")] {
        let version = Command::new("pkg-config")
            .args(["--modversion", lib])
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        println!("cargo:rustc-env={key}={version}");
    }
}
