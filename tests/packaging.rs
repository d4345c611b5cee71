//! Packaging: the example configuration (dist/picket.yaml) documents every key picket
//! honours and loads without a warning through every reader; the systemd unit passes
//! `systemd-analyze verify`; the logrotate file passes `logrotate -d`; the Debian package
//! built by scripts/package.sh holds what it should, and installs, runs and purges on a
//! copy-on-write copy of this machine's root (an overlay mount in a private mount
//! namespace: nothing of the host changes).
//!
//! Tools that are missing (systemd-analyze, logrotate, cargo-deb) or root for the install
//! make the test concerned print `SKIPPED: ...` and return.

use picket::config::{
    afxdp_config, capture_configs, ddos_config, detector_settings, http_config, nfq_config, stats_interval, Config,
    EngineSettings, EngineSettingsExt, KNOWN_KEYS,
};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

const PICKET: &str = env!("CARGO_BIN_EXE_picket");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn example_yaml() -> PathBuf {
    repo().join("dist/picket.yaml")
}

fn have(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program} >/dev/null")]).status().is_ok_and(|s| s.success())
}

fn is_root() -> bool {
    Command::new("id").arg("-u").output().is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

fn text(out: &Output) -> (String, String) {
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

#[test]
fn example_config_documents_every_known_key() {
    let (config, warnings) = Config::load(Some(&example_yaml()), &[]).expect("dist/picket.yaml loads");
    assert!(warnings.is_empty(), "dist/picket.yaml: {warnings:?}");
    let missing: Vec<&str> =
        KNOWN_KEYS.iter().map(|k| k.strip_suffix(".*").unwrap_or(k)).filter(|k| config.node(k).is_none()).collect();
    assert!(missing.is_empty(), "keys picket honours but dist/picket.yaml does not document: {missing:?}");
}

/// Every reader of the configuration accepts the example as it is, without a warning.
#[test]
fn example_config_passes_every_reader() {
    let (config, _) = Config::load(Some(&example_yaml()), &[]).expect("dist/picket.yaml loads");
    let (engine, warnings) = EngineSettings::from_config(&config).expect("engine settings");
    assert!(warnings.is_empty(), "engine settings: {warnings:?}");
    assert_eq!(engine.rule_paths(), vec![PathBuf::from("/etc/picket/rules/default.rules")]);
    let stop = Arc::new(AtomicBool::new(false));
    let (captures, warnings) =
        capture_configs(&config, &["eth0".to_string(), "eth1".to_string()], &Default::default(), &stop)
            .expect("af-packet section");
    assert!(warnings.is_empty(), "af-packet: {warnings:?}");
    assert_eq!(captures.len(), 2);
    let xdp = afxdp_config(&config, "eth0").expect("af-xdp section");
    assert!(xdp.warnings.is_empty(), "af-xdp: {:?}", xdp.warnings);
    let (_, warnings) = nfq_config(&config).expect("nfq section");
    assert!(warnings.is_empty(), "nfq: {warnings:?}");
    let ddos = ddos_config(&config).expect("ddos section");
    detector_settings(&config, ddos.block_time).expect("ddos.detectors section");
    http_config(&config).expect("app-layer http section");
    assert_eq!(stats_interval(&config).expect("stats.interval"), Some(std::time::Duration::from_secs(8)));
}

/// The binary's own start-up path: `-T` and an offline run with the example print no
/// warning (outputs, default-log-dir and every other section included).
#[test]
fn example_config_runs_without_warnings() {
    let rules_dir = repo().join("rules");
    let logs = tempfile::tempdir().expect("tempdir");
    let rule_path = format!("default-rule-path={}", rules_dir.display());
    let out = Command::new(PICKET)
        .args(["-T", "-c"])
        .arg(example_yaml())
        .args(["--set", &rule_path])
        .output()
        .expect("run picket -T");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "picket -T: {stderr}");
    assert!(stdout.contains("loaded  9"), "{stdout}");
    assert!(!stderr.contains("warning"), "picket -T warned: {stderr}");

    let out = Command::new(PICKET)
        .arg("-r")
        .arg(repo().join("data/sample.pcap"))
        .arg("-c")
        .arg(example_yaml())
        .args(["--set", &rule_path, "-l"])
        .arg(logs.path())
        .output()
        .expect("run picket -r");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "picket -r: {stderr}");
    assert!(!stderr.contains("warning"), "offline run with dist/picket.yaml warned: {stderr}");
    assert!(stdout.contains("alerts"), "{stdout}");
    let eve = std::fs::read_to_string(logs.path().join("eve.json")).expect("eve.json written");
    assert!(eve.lines().any(|l| l.contains("\"event_type\":\"alert\"")), "no alert in eve.json");
}

#[test]
fn systemd_unit_verifies() {
    if !have("systemd-analyze") {
        println!("SKIPPED: systemd-analyze not installed");
        return;
    }
    let unit = std::fs::read_to_string(repo().join("dist/picket.service")).expect("dist/picket.service");
    for line in ["Type=notify", "ExecReload=/bin/kill -USR2 $MAINPID", "Restart=on-failure", "User=picket"] {
        assert!(unit.lines().any(|l| l == line), "picket.service lacks {line}");
    }
    assert!(unit.contains("AmbientCapabilities=CAP_NET_RAW CAP_NET_ADMIN"), "capabilities instead of root");
    // The unit names the installed binary; point it at the one just built (nothing else
    // changes) so that verify can check the command exists.
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = dir.path().join("picket.service");
    std::fs::write(&copy, unit.replace("/usr/bin/picket", PICKET)).expect("write unit copy");
    let out = Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(&copy).output().expect("verify");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success() && stderr.trim().is_empty(), "systemd-analyze verify: {stdout}{stderr}");

    // The check itself is live: a broken directive is reported.
    std::fs::write(&copy, unit.replace("/usr/bin/picket", PICKET).replace("Type=notify", "Type=notfy"))
        .expect("write unit copy");
    let out = Command::new("systemd-analyze").args(["verify", "--man=no"]).arg(&copy).output().expect("verify");
    assert!(text(&out).1.contains("notfy"), "systemd-analyze did not notice a bad Type=: {:?}", text(&out));
}

#[test]
fn logrotate_file_parses_and_signals_hup() {
    let conf = std::fs::read_to_string(repo().join("dist/picket.logrotate")).expect("dist/picket.logrotate");
    assert!(conf.contains("kill -HUP \"$(cat /run/picket/picket.pid)\""), "postrotate sends SIGHUP");
    if !have("logrotate") {
        println!("SKIPPED: logrotate not installed (apt install logrotate)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // The file creates logs for the `picket` user the package adds (the install test checks
    // it as installed); on a machine without that user, check it with root's.
    let mut file = repo().join("dist/picket.logrotate");
    if !Command::new("getent").args(["passwd", "picket"]).status().is_ok_and(|s| s.success()) {
        file = dir.path().join("picket.logrotate");
        std::fs::write(&file, conf.replace("create 0640 picket picket", "create 0640 root root")).expect("write");
    }
    let out = Command::new("logrotate")
        .args(["-d", "-s"])
        .arg(dir.path().join("state"))
        .arg(&file)
        .output()
        .expect("run logrotate -d");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "logrotate -d: {stdout}{stderr}");
    assert!(!stderr.contains("error"), "logrotate -d: {stderr}");
}

/// Paths the package must install.
const PACKAGE_FILES: &[&str] = &[
    "./usr/bin/picket",
    "./usr/share/man/man1/picket.1.gz",
    "./usr/share/bash-completion/completions/picket",
    "./usr/share/zsh/vendor-completions/_picket",
    "./usr/share/fish/vendor_completions.d/picket.fish",
    "./usr/lib/systemd/system/picket.service",
    "./etc/logrotate.d/picket",
    "./etc/default/picket",
    "./etc/picket/picket.yaml",
    "./etc/picket/rules/default.rules",
    "./usr/share/doc/picket/README.md",
    "./usr/share/doc/picket/copyright",
];

const CONFFILES: &[&str] =
    &["/etc/picket/picket.yaml", "/etc/picket/rules/default.rules", "/etc/default/picket", "/etc/logrotate.d/picket"];

/// Builds the package with scripts/package.sh into the target directory of this test's
/// binary; returns the .deb.
fn build_package() -> PathBuf {
    let target_dir = Path::new(PICKET).parent().and_then(Path::parent).expect("target dir of the picket binary");
    let out = Command::new("bash")
        .arg(repo().join("scripts/package.sh"))
        .env("CARGO_TARGET_DIR", target_dir)
        .env("PICKET_SKIP_BUILD", "1")
        .output()
        .expect("run scripts/package.sh");
    let (stdout, stderr) = text(&out);
    assert!(out.status.success(), "scripts/package.sh failed: {stdout}{stderr}");
    let deb = PathBuf::from(stdout.lines().last().expect("package.sh prints the .deb").trim());
    assert!(deb.extension().is_some_and(|e| e == "deb") && deb.is_file(), "no .deb at {}", deb.display());
    deb
}

#[test]
fn debian_package_contents_and_install() {
    if !Command::new("cargo").args(["deb", "--version"]).output().is_ok_and(|o| o.status.success()) {
        println!("SKIPPED: cargo-deb not installed (cargo install cargo-deb --locked)");
        return;
    }
    if Path::new(PICKET).parent().and_then(Path::file_name).is_none_or(|d| d != "release") {
        println!("SKIPPED: the package is built from the release binary (cargo test --release)");
        return;
    }
    let deb = build_package();
    let listing = Command::new("dpkg-deb").arg("-c").arg(&deb).output().expect("dpkg-deb -c");
    let (listing, _) = text(&listing);
    let paths: Vec<&str> = listing.lines().filter_map(|l| l.split_whitespace().nth(5)).collect();
    for want in PACKAGE_FILES {
        assert!(paths.contains(want), "{} lacks {want}; it has:\n{listing}", deb.display());
    }
    let conffiles = Command::new("sh")
        .args(["-c", "dpkg-deb --ctrl-tarfile \"$1\" | tar -xO ./conffiles", "sh"])
        .arg(&deb)
        .output()
        .expect("read conffiles");
    let (conffiles, _) = text(&conffiles);
    for want in CONFFILES {
        assert!(conffiles.lines().any(|l| l == *want), "{want} is not a conffile: {conffiles}");
    }

    if !is_root() {
        println!("SKIPPED: installing the package needs root (a private overlay of /)");
        return;
    }
    if let Some(missing) = ["adduser", "unshare", "setpriv", "dpkg"].into_iter().find(|p| !have(p)) {
        println!("SKIPPED: installing the package needs {missing}");
        return;
    }
    install_on_overlay(&deb);
}

/// Installs the package on an overlay of `/` (upper layer on a tmpfs, in a private mount
/// namespace), then inside that root: the user, directories, man page, unit verification,
/// the installed config loading its installed rules, an offline run as the `picket` user
/// with the unit's capabilities only, removal keeping the conffiles, purge removing them
/// and the user. The host is untouched: everything written goes to the tmpfs, which
/// vanishes with the namespace.
fn install_on_overlay(deb: &Path) {
    let sample = repo().join("data/sample.pcap");
    let script = r#"
set -eu
deb="$1"; sample="$2"
O=$(mktemp -d /tmp/picket-overlay.XXXXXX)
mount -t tmpfs tmpfs "$O" || { echo "overlay: unavailable (tmpfs)"; exit 0; }
mkdir -p "$O/upper" "$O/work" "$O/root"
mount -t overlay overlay -o lowerdir=/,upperdir="$O/upper",workdir="$O/work" "$O/root" 2>&1 \
    || { echo "overlay: unavailable (overlayfs on /)"; exit 0; }
mount -t proc proc "$O/root/proc"
mount --bind /dev "$O/root/dev"
cp "$deb" "$O/root/tmp/picket.deb"
cp "$sample" "$O/root/tmp/sample.pcap"
chroot "$O/root" sh -eu -c '
    dpkg -i /tmp/picket.deb >/dev/null
    echo "user: $(getent passwd picket | cut -d: -f1,6,7)"
    echo "logdir: $(stat -c %U:%G:%a /var/log/picket)"
    echo "version: $(picket -V)"
    if command -v man >/dev/null; then echo "man: $(man -w picket)"; else ls /usr/share/man/man1/picket.1.gz | sed "s/^/man: /"; fi
    if command -v systemd-analyze >/dev/null; then
        systemd-analyze verify --man=no /lib/systemd/system/picket.service && echo "unit: verified"
    else
        echo "unit: verified (systemd-analyze not installed)"
    fi
    if command -v logrotate >/dev/null; then
        logrotate -d -s /tmp/logrotate.state /etc/logrotate.d/picket 2>&1 | grep -q "^error" || echo "logrotate: ok"
    else
        echo "logrotate: ok (not installed)"
    fi
    picket -T -c /etc/picket/picket.yaml | sed "s/^/check: /"
    mkdir -p /tmp/logs && chown picket /tmp/logs /tmp/sample.pcap
    setpriv --reuid=picket --regid=picket --init-groups \
        --inh-caps=-all,+net_raw,+net_admin,+bpf,+perfmon,+ipc_lock \
        --ambient-caps=-all,+net_raw,+net_admin,+bpf,+perfmon,+ipc_lock \
        picket -c /etc/picket/picket.yaml -r /tmp/sample.pcap -l /tmp/logs | sed "s/^/run: /"
    echo "eve owner: $(stat -c %U /tmp/logs/eve.json)"
    dpkg -r picket >/dev/null
    test -f /etc/picket/picket.yaml && echo "removed: conffile kept"
    dpkg -P picket >/dev/null 2>&1
    test ! -e /etc/picket/picket.yaml && echo "purged: conffile gone"
    getent passwd picket >/dev/null || echo "purged: user gone"
'
"#;
    let out = Command::new("unshare")
        .args(["--mount", "--propagation", "private", "--fork", "sh", "-c", script, "sh"])
        .arg(deb)
        .arg(&sample)
        .output()
        .expect("run unshare");
    let (stdout, stderr) = text(&out);
    if let Some(why) = stdout.lines().find_map(|l| l.strip_prefix("overlay: ")) {
        println!("SKIPPED: installing the package: this machine cannot mount an overlay of / ({why})");
        return;
    }
    if stderr.starts_with("unshare: ") {
        println!("SKIPPED: installing the package needs a private mount namespace: {}", stderr.trim());
        return;
    }
    assert!(out.status.success(), "install on an overlay root failed:\n{stdout}\n{stderr}");
    for want in [
        "user: picket:/nonexistent:/usr/sbin/nologin",
        "logdir: picket:picket:750",
        "version: picket ",
        "man: /usr/share/man/man1/picket.1.gz",
        "unit: verified",
        "logrotate: ok",
        "check: loaded  9",
        "eve owner: picket",
        "removed: conffile kept",
        "purged: conffile gone",
        "purged: user gone",
    ] {
        assert!(stdout.lines().any(|l| l.starts_with(want)), "missing '{want}' in:\n{stdout}\n{stderr}");
    }
    assert!(stdout.lines().any(|l| l.starts_with("run: picket: 233 packets")), "offline run as picket:\n{stdout}");
}
