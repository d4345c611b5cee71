//! The print-and-exit commands (`-V`, `--build-info`, `--list-keywords`,
//! `--list-app-layer-protos`, `--dump-config`, `--engine-analysis`), `picket generate`
//! (man page and completions, checked with man/groff and by running bash's completion),
//! and the progress output of offline runs (a bar on a terminal only, the final line's
//! alert count), all through the real binary.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const PICKET: &str = env!("CARGO_BIN_EXE_picket");

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn picket(args: &[&str]) -> Output {
    Command::new(PICKET).args(args).output().expect("run picket")
}

fn ok_stdout(args: &[&str]) -> String {
    let out = picket(args);
    assert!(out.status.success(), "picket {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8 output")
}

fn have(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program} >/dev/null")]).status().is_ok_and(|s| s.success())
}

#[test]
fn version_and_build_info() {
    let v = ok_stdout(&["-V"]);
    assert!(v.starts_with(&format!("picket {} (", env!("CARGO_PKG_VERSION"))), "{v}");
    let info = ok_stdout(&["--build-info"]);
    for want in
        ["This is picket version", "Rust compiler: rustc ", "Target: x86_64", "Profile: release", "PCRE2 version"]
    {
        assert!(info.contains(want), "--build-info lacks '{want}':\n{info}");
    }
    assert_eq!(info.contains("Hyperscan support: yes"), v.contains("hyperscan"), "{info}\n{v}");
    assert_eq!(info.contains("XDP program embedded: yes"), v.contains("xdp"), "{info}\n{v}");
}

/// The binary's built-in jemalloc options reach jemalloc (transparent huge pages for the
/// heap), and jemalloc's environment variable still overrides them.
#[test]
fn build_info_shows_the_heap_huge_page_mode() {
    let line = |info: &str| {
        info.lines().find(|l| l.starts_with("Allocator: jemalloc, transparent huge pages: ")).map(str::to_string)
    };
    let kernel_has_thp = Path::new("/sys/kernel/mm/transparent_hugepage/enabled").exists();
    let built_in = line(&ok_stdout(&["--build-info"])).expect("allocator line");
    let want = if kernel_has_thp { "always" } else { "not supported" };
    assert!(built_in.ends_with(&format!(": {want}")), "{built_in}");
    let out =
        Command::new(PICKET).arg("--build-info").env("_RJEM_MALLOC_CONF", "thp:never").output().expect("run picket");
    assert!(out.status.success());
    let overridden = line(&String::from_utf8_lossy(&out.stdout)).expect("allocator line");
    let want = if kernel_has_thp { "never" } else { "not supported" };
    assert!(overridden.ends_with(&format!(": {want}")), "{overridden}");
}

#[test]
fn list_keywords_covers_the_rules_we_ship() {
    let list = ok_stdout(&["--list-keywords"]);
    let names: Vec<&str> = list.lines().filter_map(|l| l.strip_prefix("- ")?.split_whitespace().next()).collect();
    let count: usize = list.lines().last().and_then(|l| l.split_whitespace().next()?.parse().ok()).expect("count line");
    assert_eq!(names.len(), count);
    assert!(count > 150, "only {count} keywords");
    // Every keyword of the bundled rules is listed.
    let rules = std::fs::read_to_string(repo().join("rules/default.rules")).expect("rules/default.rules");
    for rule in rules.lines().filter(|l| l.starts_with("alert")) {
        for keyword in option_keywords(rule) {
            assert!(names.contains(&keyword.as_str()), "{keyword} (in rules/default.rules) is not listed");
        }
    }
    for family in ["[sticky buffer]", "[buffer modifier]", "[transform]", "[content modifier]", "[app-layer]"] {
        assert!(list.contains(family), "no {family} keyword listed");
    }
}

/// The keywords of a rule's options (`;` inside quotes does not end an option).
fn option_keywords(rule: &str) -> Vec<String> {
    let options = &rule[rule.find('(').expect("options") + 1..rule.rfind(')').expect("closing")];
    let (mut keywords, mut current, mut quoted, mut escaped) = (Vec::new(), String::new(), false, false);
    for c in options.chars() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => quoted = !quoted,
            ';' if !quoted => {
                let keyword = current.split(':').next().unwrap_or_default().trim().to_string();
                if !keyword.is_empty() {
                    keywords.push(keyword);
                }
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    keywords
}

#[test]
fn list_one_keyword_and_an_unknown_one() {
    let content = ok_stdout(&["--list-keywords=content"]);
    assert!(content.starts_with("= content =\n"), "{content}");
    assert!(content.contains("Family: payload") && content.contains("Example: content:"), "{content}");
    let file_data = ok_stdout(&["--list-keywords=file_data"]);
    assert!(file_data.contains("Buffer: file.data") && file_data.contains("Sticky buffer names: file.data, file_data"));
    let out = picket(&["--list-keywords=no_such_keyword"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--list-keywords=no_such_keyword: no such keyword"), "{err}");
}

#[test]
fn list_app_layer_protocols() {
    let list = ok_stdout(&["--list-app-layer-protos"]);
    let parsed: Vec<&str> =
        list.lines().skip(1).take_while(|l| !l.starts_with('=')).filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(parsed[..6], ["http", "tls", "dns", "ssh", "smtp", "ftp"], "{list}");
    // Then the protocols detected without a parser, with their default ports.
    assert!(parsed.contains(&"rfb") && parsed.contains(&"bittorrent-dht"), "{list}");
    assert!(list.lines().any(|l| l.starts_with("http ") && l.contains("parsed")), "{list}");
    for proto in ["ssh ", "smtp ", "http2 "] {
        assert!(list.lines().any(|l| l.starts_with(proto) && l.contains("detected, parsed")), "{proto}: {list}");
    }
    assert!(list.lines().any(|l| l.starts_with("ftp ") && l.contains("not parsed")), "{list}");
    assert!(list.lines().any(|l| l.starts_with("modbus ") && l.contains("not parsed") && l.ends_with("502")), "{list}");
    assert!(list.lines().any(|l| l == "imap"), "header-only protocols are listed too:\n{list}");
}

#[test]
fn dump_config_prints_the_merged_tree() {
    let yaml = repo().join("dist/picket.yaml");
    let yaml = yaml.to_str().expect("utf-8 path");
    let dump = ok_stdout(&["--dump-config", "-c", yaml, "--set", "stream.memcap=1gb"]);
    for line in [
        "stream = (null)",
        "stream.memcap = 1gb",
        "stream.reassembly.depth = 1mb",
        "rule-files.0 = default.rules",
        "outputs.1.eve-log.filename = eve.json",
        "outputs.1.eve-log.types.0.alert.xff.header = X-Forwarded-For",
        "af-packet.0.interface = eth0",
        "classification-file = (null)",
    ] {
        assert!(dump.lines().any(|l| l == line), "--dump-config lacks '{line}'");
    }
    // No configuration: nothing to print, still a success.
    assert_eq!(ok_stdout(&["--dump-config"]), "");
}

#[test]
fn engine_analysis_reports_fast_patterns_and_reasons() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rules = dir.path().join("a.rules");
    std::fs::write(
        &rules,
        "alert tcp any any -> any any (msg:\"a\"; content:\"GET \"; content:\"/admin|0d 0a|\"; sid:1;)\n\
         alert http any any -> any any (msg:\"b\"; http.uri; to_lowercase; content:\"/login\"; sid:2;)\n\
         alert ip 192.0.2.1 any -> any any (msg:\"c\"; sid:3;)\n\
         alert tcp any any -> any any (msg:\"d\"; content:!\"x\"; sid:4;)\n\
         alert tcp any any -> any 23 (msg:\"e\"; flags:S; sid:5;)\n",
    )
    .expect("write rules");
    let logs = dir.path().join("logs");
    let out =
        ok_stdout(&["--engine-analysis", "-S", rules.to_str().expect("path"), "-l", logs.to_str().expect("path")]);
    assert!(out.starts_with("engine analysis: 5 rules, 2 with a prefilter pattern, 3 without"), "{out}");
    let fast = std::fs::read_to_string(logs.join("rules_fast_pattern.txt")).expect("rules_fast_pattern.txt");
    let block = |sid: u32| {
        let start = fast.find(&format!("== Sid: {sid} ==")).unwrap_or_else(|| panic!("sid {sid} missing:\n{fast}"));
        let rest = &fast[start..];
        rest[..rest.find("\n\n").unwrap_or(rest.len())].to_string()
    };
    assert!(block(1).contains("Prefilter: content \"/admin|0D 0A|\" in pkt_data, 8 bytes"), "{}", block(1));
    assert!(block(2).contains("content \"/login\" in http.uri after [ToLowercase]"), "{}", block(2));
    assert!(block(3).contains("none: IP-only rule"), "{}", block(3));
    assert!(block(4).contains("none: only negated contents"), "{}", block(4));
    assert!(block(5).contains("none: no content keyword"), "{}", block(5));
    let analysis = std::fs::read_to_string(logs.join("rules_analysis.txt")).expect("rules_analysis.txt");
    assert!(analysis.contains("    Type: app-layer\n    Buffers: http.uri\n"), "{analysis}");
    assert!(analysis.contains("Warning: no prefilter: the rule is checked on every packet"), "{analysis}");
}

#[test]
fn engine_analysis_without_rules_fails_clearly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = picket(&["--engine-analysis", "-l", dir.path().to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no rules loaded"), "{out:?}");
}

#[test]
fn generate_man_page_renders() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = picket(&["generate", "man", "--out", dir.path().to_str().expect("path")]);
    assert!(out.status.success(), "{out:?}");
    let page = std::fs::read_to_string(dir.path().join("picket.1")).expect("picket.1 written");
    assert!(page.contains(".TH picket 1"), "{page}");
    for flag in ["\\-\\-engine\\-analysis", "\\-\\-pidfile", "\\-\\-af\\-packet"] {
        assert!(page.contains(flag), "man page lacks {flag}");
    }
    if !have("groff") {
        println!("SKIPPED: rendering (groff not installed)");
        return;
    }
    let rendered = Command::new("groff")
        .args(["-man", "-Tascii", "-P-cbou", "-ww"])
        .arg(dir.path().join("picket.1"))
        .output()
        .expect("run groff");
    let text = String::from_utf8_lossy(&rendered.stdout);
    assert!(rendered.status.success() && text.contains("SYNOPSIS") && text.contains("--list-keywords"), "{text}");
    assert!(rendered.stderr.is_empty(), "groff warnings: {}", String::from_utf8_lossy(&rendered.stderr));
}

/// Runs bash's completion function on a partial command line and returns its candidates.
fn bash_complete(script: &Path, words: &[&str]) -> Vec<String> {
    let quoted: Vec<String> = words.iter().map(|w| format!("'{w}'")).collect();
    let program = format!(
        "source '{}'; COMP_WORDS=({}); COMP_CWORD={}; COMP_LINE='{}'; COMP_POINT=${{#COMP_LINE}}; \
         _picket picket '{}' '{}'; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display(),
        quoted.join(" "),
        words.len() - 1,
        words.join(" "),
        words[words.len() - 1],
        words[words.len().saturating_sub(2)],
    );
    let out = Command::new("bash").args(["--norc", "-c", &program]).output().expect("run bash");
    assert!(out.status.success(), "bash completion failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect()
}

#[test]
fn generate_bash_completion_completes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = picket(&["generate", "bash", "--out", dir.path().to_str().expect("path")]);
    assert!(out.status.success(), "{out:?}");
    let script = dir.path().join("picket");
    let syntax = Command::new("bash").arg("-n").arg(&script).output().expect("bash -n");
    assert!(syntax.status.success(), "bash -n: {}", String::from_utf8_lossy(&syntax.stderr));
    let flags = bash_complete(&script, &["picket", "--list-k"]);
    assert_eq!(flags, ["--list-keywords"], "completing --list-k");
    let subcommands = bash_complete(&script, &["picket", "ge"]);
    assert!(subcommands.iter().any(|c| c == "generate"), "completing ge: {subcommands:?}");
}

#[test]
fn generate_other_shells_and_refuse_unknown() {
    for (shell, marker) in [
        ("zsh", "#compdef picket"),
        ("fish", "complete -c picket"),
        ("elvish", "edit:completion"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let text = ok_stdout(&["generate", shell]);
        assert!(text.contains(marker), "{shell} completion lacks {marker}");
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = picket(&["generate", "zsh", "--out", dir.path().to_str().expect("path")]);
    assert!(out.status.success() && dir.path().join("_picket").is_file(), "{out:?}");
    let out = picket(&["generate", "tcsh"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("generate tcsh: unknown target"), "{out:?}");
}

/// The final line states the alert count, equal to the alerts in eve.json; with stderr
/// not a terminal nothing but the usual lines reaches it (no bar, no escape codes).
#[test]
fn progress_final_line_and_silence_off_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(PICKET)
        .arg("-r")
        .arg(repo().join("data/sample.pcap"))
        .arg("-S")
        .arg(repo().join("rules/default.rules"))
        .arg("-l")
        .arg(dir.path())
        .stderr(Stdio::piped())
        .output()
        .expect("run picket");
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let eve = std::fs::read_to_string(dir.path().join("eve.json")).expect("eve.json");
    let alerts = eve.lines().filter(|l| l.contains("\"event_type\":\"alert\"")).count();
    assert!(alerts > 0);
    let line = stdout.lines().next().unwrap_or_default();
    assert!(
        line.starts_with("picket: 233 packets from file ") && line.ends_with(&format!(", {alerts} alerts")),
        "{line}"
    );
    assert!(!stderr.contains('\x1b') && !stderr.contains("pkt/s"), "progress output off a terminal: {stderr:?}");
}

/// On a terminal (a pty from `script`), a slow capture fed through a FIFO shows the bar
/// with packets, packets/s and alerts while it runs.
#[test]
fn progress_bar_on_a_terminal() {
    if !have("script") || !have("mkfifo") {
        println!("SKIPPED: script or mkfifo not installed");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("capture.pcap");
    assert!(Command::new("mkfifo").arg(&fifo).status().expect("mkfifo").success());
    let sample = std::fs::read(repo().join("data/sample.pcap")).expect("sample.pcap");
    const PCAP_HEADER: usize = 24;
    const REPEATS: usize = 8;
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            use std::io::Write;
            let mut f = std::fs::OpenOptions::new().write(true).open(&fifo).expect("open fifo");
            f.write_all(&sample[..PCAP_HEADER]).expect("header");
            for _ in 0..REPEATS {
                f.write_all(&sample[PCAP_HEADER..]).expect("records");
                f.flush().expect("flush");
                std::thread::sleep(Duration::from_millis(150));
            }
        })
    };
    let command = format!(
        "{PICKET} -r {} -S {} -l {}",
        fifo.display(),
        repo().join("rules/default.rules").display(),
        dir.path().display()
    );
    let out = Command::new("timeout")
        .args(["30", "script", "-qfec", &command, "/dev/null"])
        .env_remove("PICKET_NO_PROGRESS")
        .output()
        .expect("run script");
    writer.join().expect("fifo writer");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("pkt/s") && text.contains(" alerts"), "no progress bar on the terminal:\n{text}");
    assert!(text.contains(&format!("picket: {} packets from file", 233 * REPEATS)), "{text}");
}
