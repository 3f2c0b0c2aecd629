//! The packaged systemd unit, sysusers snippet and package metadata, checked
//! with systemd's own tools rather than by eye:
//!
//! * the unit text has the directives the daemon's contract relies on
//!   (Type=notify, the watchdog, the config check before start, ...);
//! * `systemd-analyze verify` is clean. It insists that ExecStart= names an
//!   existing executable, and /usr/bin/walwatch only exists once the package
//!   is installed, so the unit is verified as a copy whose /usr/bin/walwatch
//!   is the binary cargo just built; a second test runs verify on the file
//!   exactly as shipped and accepts only the "/usr/bin/walwatch is missing"
//!   complaint (packaging/test/smoke.sh verifies the installed unit);
//! * `systemd-analyze security --offline=yes` rates the sandbox at an overall
//!   exposure of at most 2.0;
//! * `systemd-sysusers` accepts the sysusers.d snippets (Debian's with the
//!   adm membership, the RPM's without) and creates the user from them, in a
//!   scratch root, not on this host;
//! * the cargo-deb / cargo-generate-rpm metadata points at files that exist
//!   (cargo-generate-rpm silently treats a script path that does not exist as
//!   the script's text).
//!
//! systemd-analyze and systemd-sysusers come with Debian's `systemd` package;
//! a machine without them fails here with a message saying so, rather than
//! skipping the checks.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

/// The most `systemd-analyze security` may report (0 = locked down, 10 = none).
const MAX_EXPOSURE: f64 = 2.0;
/// Where the packages install the binary, as the unit names it.
const INSTALLED_BIN: &str = "/usr/bin/walwatch";

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn read(rel: &str) -> String {
    let path = repo().join(rel);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// A systemd tool from PATH or the usual places, or a clear failure.
fn systemd_tool(name: &str) -> Command {
    let from_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).map(|d| d.join(name)).collect::<Vec<_>>())
        .unwrap_or_default();
    let fallback = ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].map(|d| Path::new(d).join(name));
    let found = from_path.into_iter().chain(fallback).find(|p| p.is_file());
    let Some(path) = found else {
        panic!(
            "{name} not found (PATH and /usr/bin): it comes with the `systemd` package \
             (Debian: apt-get install systemd). This test checks systemd/walwatch.service with it \
             and does not skip."
        );
    };
    let mut cmd = Command::new(path);
    // Plain, unpaged, uncoloured output that the parsing below understands.
    cmd.env("SYSTEMD_COLORS", "0").env("SYSTEMD_PAGER", "cat").env("LC_ALL", "C").env_remove("SYSTEMD_LOG_COLOR");
    cmd
}

fn output_text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// A fresh directory under cargo's per-target scratch space.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("systemd_unit-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    dir
}

/// `[section] key=value` assignments in file order, as systemd reads them:
/// comments (# ;) skipped, backslash-continued lines joined.
fn parse_unit(text: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut section = String::new();
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if pending.is_empty() && (line.is_empty() || line.starts_with('#') || line.starts_with(';')) {
            continue;
        }
        if let Some(cont) = line.strip_suffix('\\') {
            pending.push_str(cont);
            pending.push(' ');
            continue;
        }
        pending.push_str(line);
        let logical = std::mem::take(&mut pending);
        if logical.starts_with('[') && logical.ends_with(']') {
            section = logical[1..logical.len() - 1].to_string();
        } else if let Some((k, v)) = logical.split_once('=') {
            out.push((section.clone(), k.trim().to_string(), v.trim().to_string()));
        } else {
            panic!("unit line is neither a section nor key=value: {logical:?}");
        }
    }
    out
}

struct Unit(Vec<(String, String, String)>);

impl Unit {
    fn shipped() -> Unit {
        Unit(parse_unit(&read("systemd/walwatch.service")))
    }
    /// Every assignment of `key` in `section`, in order.
    fn all(&self, section: &str, key: &str) -> Vec<&str> {
        self.0.iter().filter(|(s, k, _)| s == section && k == key).map(|(_, _, v)| v.as_str()).collect()
    }
    /// The value in force for a single-valued setting (the last one wins).
    fn last(&self, section: &str, key: &str) -> Option<&str> {
        self.all(section, key).last().copied()
    }
    /// Items of a list setting after systemd's rules: an empty assignment
    /// resets the list, later ones add to it.
    fn list(&self, section: &str, key: &str) -> Vec<&str> {
        let mut items = Vec::new();
        for v in self.all(section, key) {
            if v.is_empty() {
                items.clear();
            }
            items.extend(v.split_whitespace());
        }
        items
    }
}

#[test]
fn unit_has_the_directives_the_daemon_relies_on() {
    let u = Unit::shipped();
    let exact = [
        ("Service", "Type", "notify"),
        ("Service", "NotifyAccess", "main"),
        ("Service", "ExecStartPre", "/usr/bin/walwatch config check"),
        ("Service", "ExecStart", "/usr/bin/walwatch run"),
        ("Service", "ExecReload", "/bin/kill -HUP $MAINPID"),
        ("Service", "Restart", "on-failure"),
        ("Service", "TimeoutStopSec", "10"),
        ("Service", "User", "walwatch"),
        ("Service", "Group", "walwatch"),
        ("Service", "StateDirectory", "walwatch"),
        ("Service", "ConfigurationDirectory", "walwatch"),
        ("Service", "ProtectSystem", "strict"),
        ("Service", "NoNewPrivileges", "yes"),
        ("Service", "UMask", "0027"),
        ("Service", "StateDirectoryMode", "0750"),
        ("Service", "CapabilityBoundingSet", ""),
        ("Service", "AmbientCapabilities", ""),
        ("Install", "WantedBy", "multi-user.target"),
    ];
    for (section, key, want) in exact {
        assert_eq!(u.last(section, key), Some(want), "[{section}] {key}= in systemd/walwatch.service");
    }
    for key in ["ExecStart", "ExecStartPre", "ExecReload"] {
        assert_eq!(u.all("Service", key).len(), 1, "exactly one {key}=");
    }

    let watchdog = u.last("Service", "WatchdogSec").expect("WatchdogSec= is set");
    assert!(!["", "0", "infinity"].contains(&watchdog), "WatchdogSec={watchdog} disables the watchdog");

    // Debian's PostgreSQL logs are readable through group adm.
    assert!(u.list("Service", "SupplementaryGroups").contains(&"adm"), "SupplementaryGroups= has adm");

    // sd_notify needs AF_UNIX; SMTP and the planned HTTP listener need IP.
    let families = u.list("Service", "RestrictAddressFamilies");
    for family in ["AF_UNIX", "AF_INET", "AF_INET6"] {
        assert!(families.contains(&family), "RestrictAddressFamilies= allows {family}: {families:?}");
    }
    // The SMTP relay may be any host: an IP deny list would break mail.
    assert!(u.all("Service", "IPAddressDeny").is_empty(), "no IPAddressDeny= in the shipped unit");

    let filters = u.all("Service", "SystemCallFilter");
    assert!(filters.contains(&"@system-service"), "SystemCallFilter=@system-service: {filters:?}");
}

/// The unit with /usr/bin/walwatch replaced by the binary cargo built, in a
/// scratch directory under the same file name (systemd derives the unit name
/// from it).
fn unit_with_built_binary() -> PathBuf {
    let built = env!("CARGO_BIN_EXE_walwatch");
    assert!(Path::new(built).is_file(), "cargo built {built}");
    assert!(!built.contains(char::is_whitespace), "binary path {built:?} would need quoting in ExecStart=");
    let text = read("systemd/walwatch.service");
    let mut replaced = 0;
    let rewritten: String = text
        .lines()
        .map(|line| {
            let is_exec = line.trim_start().starts_with("Exec");
            if is_exec && line.contains(INSTALLED_BIN) {
                replaced += 1;
                format!("{}\n", line.replace(INSTALLED_BIN, built))
            } else {
                format!("{line}\n")
            }
        })
        .collect();
    assert_eq!(replaced, 2, "ExecStartPre= and ExecStart= both run {INSTALLED_BIN}");
    let dir = scratch_dir("verify");
    let path = dir.join("walwatch.service");
    fs::write(&path, rewritten).unwrap();
    path
}

#[test]
fn systemd_analyze_verify_is_clean() {
    let unit = unit_with_built_binary();
    let out = systemd_tool("systemd-analyze").arg("verify").arg(&unit).output().unwrap();
    let text = output_text(&out);
    assert!(out.status.success(), "systemd-analyze verify {} failed:\n{text}", unit.display());
    // verify also loads the units walwatch is ordered against from this
    // host; only complaints about our own unit count as ours.
    let ours: Vec<&str> = text.lines().filter(|l| l.contains("walwatch")).collect();
    assert!(ours.is_empty(), "systemd-analyze verify complains about walwatch.service:\n{}", ours.join("\n"));
    if !text.trim().is_empty() {
        eprintln!("systemd-analyze verify, about other units on this host:\n{text}");
    }
}

#[test]
fn shipped_unit_only_lacks_the_installed_binary() {
    let out =
        systemd_tool("systemd-analyze").arg("verify").arg(repo().join("systemd/walwatch.service")).output().unwrap();
    let text = output_text(&out);
    let ours: Vec<&str> = text.lines().filter(|l| l.contains("walwatch")).collect();
    if Path::new(INSTALLED_BIN).exists() {
        // Installed on this machine (e.g. the package smoke test host).
        assert!(out.status.success() && ours.is_empty(), "systemd-analyze verify on the shipped unit:\n{text}");
    } else {
        let expected = format!("Command {INSTALLED_BIN} is not executable");
        let other: Vec<&&str> = ours.iter().filter(|l| !l.contains(&expected)).collect();
        assert!(other.is_empty(), "besides the missing {INSTALLED_BIN}, verify reports:\n{text}");
        assert!(!ours.is_empty(), "verify should have noticed that {INSTALLED_BIN} is missing:\n{text}");
    }
}

/// "→ Overall exposure level for walwatch.service: 1.3 OK 🙂" → 1.3 (the
/// arrow and the face are ASCII when colours are off).
fn overall_exposure(report: &str) -> Option<f64> {
    let line = report.lines().find(|l| l.contains("Overall exposure level for walwatch.service:"))?;
    let after = line.split_once("walwatch.service:")?.1;
    after.split_whitespace().next()?.parse().ok()
}

#[test]
fn exposure_parser_reads_systemds_line() {
    let sample = "✓ UMask= Files created by service are accessible only by service's own user\n\n\
                  → Overall exposure level for walwatch.service: 1.3 OK 🙂\n";
    assert_eq!(overall_exposure(sample), Some(1.3));
    // With SYSTEMD_COLORS=0 (as run here) systemd prints ASCII instead.
    assert_eq!(overall_exposure("-> Overall exposure level for walwatch.service: 1.3 OK :-)"), Some(1.3));
    assert_eq!(overall_exposure("nothing here"), None);
}

#[test]
fn systemd_analyze_security_exposure_is_at_most_2() {
    let unit = repo().join("systemd/walwatch.service");
    let out =
        systemd_tool("systemd-analyze").args(["security", "--offline=yes", "--no-pager"]).arg(&unit).output().unwrap();
    let text = output_text(&out);
    let Some(exposure) = overall_exposure(&text) else {
        panic!("no \"Overall exposure level for walwatch.service\" line in systemd-analyze security output:\n{text}");
    };
    assert!(
        exposure <= MAX_EXPOSURE,
        "walwatch.service exposure {exposure} > {MAX_EXPOSURE}; the ✗ lines say what to tighten:\n{text}"
    );
}

/// Non-comment, non-blank lines.
fn config_lines(text: &str) -> Vec<&str> {
    text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).collect()
}

/// Runs systemd-sysusers on a snippet in an empty scratch root (never on
/// this host's /etc) and returns that root.
fn apply_sysusers(rel: &str, name: &str) -> PathBuf {
    let root = scratch_dir(name);
    fs::create_dir_all(root.join("etc")).unwrap();
    let mut child = systemd_tool("systemd-sysusers")
        .arg(format!("--root={}", root.display()))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(read(rel).as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let text = output_text(&out);
    assert!(out.status.success(), "systemd-sysusers rejected {rel}:\n{text}");
    root
}

/// The walwatch line of `<root>/etc/passwd`, checked field by field.
fn check_walwatch_user(root: &Path) {
    let passwd = fs::read_to_string(root.join("etc/passwd")).unwrap();
    let user = passwd.lines().find(|l| l.starts_with("walwatch:")).unwrap_or_else(|| panic!("no user:\n{passwd}"));
    let fields: Vec<&str> = user.split(':').collect();
    assert_eq!(fields[4], "walwatch PostgreSQL checkpoint monitor", "{user}");
    assert_eq!(fields[5], "/var/lib/walwatch", "home is the state directory: {user}");
    assert!(fields[6].ends_with("nologin"), "no login shell: {user}");
    let group = fs::read_to_string(root.join("etc/group")).unwrap();
    assert!(group.lines().any(|l| l.starts_with("walwatch:")), "walwatch group:\n{group}");
}

#[test]
fn rpm_sysusers_snippet_creates_the_user() {
    let root = apply_sysusers("packaging/rpm/walwatch.sysusers", "sysusers-rpm");
    check_walwatch_user(&root);
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn sysusers_snippet_creates_the_user_and_adm_membership() {
    let root = apply_sysusers("systemd/walwatch.sysusers", "sysusers");
    check_walwatch_user(&root);
    let group = fs::read_to_string(root.join("etc/group")).unwrap();
    let adm = group.lines().find(|l| l.starts_with("adm:")).unwrap_or_else(|| panic!("no adm group:\n{group}"));
    let members = adm.rsplit(':').next().unwrap_or("");
    assert!(members.split(',').any(|m| m == "walwatch"), "walwatch is in adm: {adm}");
    let _ = fs::remove_dir_all(&root);
}

#[test]
fn rpm_sysusers_is_the_same_user_and_pre_scriptlet_repeats_it() {
    // The RPM's snippet is the Debian one without `m walwatch adm` (rpm would
    // turn it into Requires: group(adm), unresolvable on RHEL 8/9).
    let deb = read("systemd/walwatch.sysusers");
    let rpm = read("packaging/rpm/walwatch.sysusers");
    let deb_without_adm: Vec<&str> = config_lines(&deb).into_iter().filter(|l| !l.starts_with("m ")).collect();
    assert_eq!(config_lines(&rpm), deb_without_adm, "packaging/rpm/walwatch.sysusers vs systemd/walwatch.sysusers");

    // %pre must create the user before rpm unpacks root:walwatch files, so it
    // carries its own copy of the snippet; the two must not drift apart.
    let pre = read("packaging/rpm/pre.sh");
    let body = pre
        .split_once("<<'SYSUSERS'\n")
        .and_then(|(_, rest)| rest.split_once("\nSYSUSERS\n"))
        .map(|(body, _)| body)
        .expect("packaging/rpm/pre.sh has a <<'SYSUSERS' here-document");
    assert_eq!(config_lines(body), config_lines(&rpm), "packaging/rpm/pre.sh here-document");
}

#[test]
fn maintainer_scripts_parse_as_posix_sh() {
    let scripts = [
        "packaging/deb/postinst",
        "packaging/deb/prerm",
        "packaging/deb/postrm",
        "packaging/rpm/pre.sh",
        "packaging/rpm/post.sh",
        "packaging/rpm/preun.sh",
        "packaging/rpm/postun.sh",
        "packaging/test/smoke.sh",
        "packaging/build-assets.sh",
    ];
    for rel in scripts {
        let path = repo().join(rel);
        assert!(path.is_file(), "{rel} exists");
        let out = Command::new("sh").arg("-n").arg(&path).output().unwrap();
        assert!(out.status.success(), "sh -n {rel}:\n{}", output_text(&out));
    }
    // The package tests are bash (arrays, [[ ]]).
    for rel in ["packaging/test/deb-lifecycle.sh", "packaging/test/rpm-check.sh"] {
        let out = Command::new("bash").arg("-n").arg(repo().join(rel)).output().unwrap();
        assert!(out.status.success(), "bash -n {rel}:\n{}", output_text(&out));
    }
    #[cfg(unix)]
    for rel in [
        "packaging/deb/postinst",
        "packaging/deb/prerm",
        "packaging/deb/postrm",
        "packaging/test/smoke.sh",
        "packaging/build-assets.sh",
        "packaging/test/deb-lifecycle.sh",
        "packaging/test/rpm-check.sh",
    ] {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(repo().join(rel)).unwrap().permissions().mode();
        assert!(mode & 0o111 != 0, "{rel} is executable (mode {mode:o})");
    }
}

#[test]
fn package_metadata_installs_the_expected_files() {
    let manifest: toml::Value = read("Cargo.toml").parse().expect("Cargo.toml parses");
    let metadata = &manifest["package"]["metadata"];
    // A glob (the docs) must match at least one file.
    let exists = |src: &str| {
        let pattern = repo().join(src);
        src.starts_with("target/release/") || glob::glob(pattern.to_str().unwrap()).unwrap().flatten().next().is_some()
    };

    // cargo-deb: [source, dest, mode] arrays.
    let deb = &metadata["deb"];
    let mut deb_assets = Vec::new();
    for asset in deb["assets"].as_array().expect("[package.metadata.deb] assets") {
        let a = asset.as_array().expect("deb asset is [source, dest, mode]");
        let (src, dest) = (a[0].as_str().unwrap(), a[1].as_str().unwrap());
        assert!(exists(src), "deb asset source {src} exists");
        deb_assets.push((src.to_string(), format!("/{}", dest.trim_start_matches('/'))));
    }
    let scripts = deb["maintainer-scripts"].as_str().expect("deb maintainer-scripts");
    for script in ["postinst", "prerm", "postrm"] {
        assert!(repo().join(scripts).join(script).is_file(), "{scripts}{script} exists");
    }

    // cargo-generate-rpm: tables; script paths that do not exist would be
    // taken as inline script text, so insist that they exist.
    let rpm = &metadata["generate-rpm"];
    let mut rpm_assets = Vec::new();
    for asset in rpm["assets"].as_array().expect("[package.metadata.generate-rpm] assets") {
        let src = asset["source"].as_str().unwrap();
        assert!(exists(src), "rpm asset source {src} exists");
        rpm_assets.push((src.to_string(), asset["dest"].as_str().unwrap().to_string()));
    }
    for key in ["pre_install_script", "post_install_script", "pre_uninstall_script", "post_uninstall_script"] {
        let rel = rpm[key].as_str().unwrap_or_else(|| panic!("generate-rpm {key} is set"));
        assert!(repo().join(rel).is_file(), "generate-rpm {key} = {rel} is a file");
    }
    let config =
        rpm["assets"].as_array().unwrap().iter().find(|a| a["dest"].as_str() == Some("/etc/walwatch/walwatch.toml"));
    let config = config.expect("rpm installs /etc/walwatch/walwatch.toml");
    assert_eq!(config["config"].as_str(), Some("noreplace"), "rpm config is %config(noreplace)");

    let wanted = [
        ("target/release/walwatch", "/usr/bin/walwatch"),
        ("config/walwatch.toml", "/etc/walwatch/walwatch.toml"),
        ("systemd/walwatch.service", "/usr/lib/systemd/system/walwatch.service"),
        ("README.md", "/usr/share/doc/walwatch/README.md"),
        ("packaging/prometheus/walwatch-rules.yml", "/usr/share/walwatch/prometheus/walwatch-rules.yml"),
        ("packaging/prometheus/walwatch-promql-rules.yml", "/usr/share/walwatch/prometheus/walwatch-promql-rules.yml"),
        ("packaging/prometheus/walwatch-federation.yml", "/usr/share/walwatch/prometheus/walwatch-federation.yml"),
        ("packaging/vector/vector.toml", "/usr/share/walwatch/vector/vector.toml"),
    ];
    for (src, dest) in wanted {
        let pair = (src.to_string(), dest.to_string());
        assert!(deb_assets.contains(&pair), "deb installs {src} as {dest}: {deb_assets:?}");
        assert!(rpm_assets.contains(&pair), "rpm installs {src} as {dest}: {rpm_assets:?}");
    }
    // Both license texts (Cargo.toml's `MIT OR Apache-2.0`) and the changelog.
    for file in ["LICENSE-MIT", "LICENSE-APACHE", "CHANGELOG.md"] {
        let deb = (file.to_string(), format!("/usr/share/doc/walwatch/{file}"));
        assert!(deb_assets.contains(&deb), "deb installs {deb:?}: {deb_assets:?}");
        let dir = if file.starts_with("LICENSE") { "licenses" } else { "doc" };
        let rpm = (file.to_string(), format!("/usr/share/{dir}/walwatch/{file}"));
        assert!(rpm_assets.contains(&rpm), "rpm installs {rpm:?}: {rpm_assets:?}");
    }
    let sysusers = "/usr/lib/sysusers.d/walwatch.conf".to_string();
    let deb_pair = ("systemd/walwatch.sysusers".to_string(), sysusers.clone());
    assert!(deb_assets.contains(&deb_pair), "deb installs {deb_pair:?}: {deb_assets:?}");
    let rpm_pair = ("packaging/rpm/walwatch.sysusers".to_string(), sysusers);
    assert!(rpm_assets.contains(&rpm_pair), "rpm installs {rpm_pair:?}: {rpm_assets:?}");

    // The promtool unit tests beside their rules, so they run where installed.
    for file in ["walwatch-rules.test.yml", "walwatch-promql-rules.test.yml"] {
        let pair = (format!("packaging/prometheus/{file}"), format!("/usr/share/walwatch/prometheus/{file}"));
        assert!(deb_assets.contains(&pair), "deb installs {pair:?}: {deb_assets:?}");
        assert!(rpm_assets.contains(&pair), "rpm installs {pair:?}: {rpm_assets:?}");
    }
    // Completions and manual pages, made by packaging/build-assets.sh; zsh's
    // directory for packaged functions differs between the distributions.
    let assets = "target/release/assets";
    let both = [
        (format!("{assets}/completions/walwatch.bash"), "/usr/share/bash-completion/completions/walwatch"),
        (format!("{assets}/completions/walwatch.fish"), "/usr/share/fish/vendor_completions.d/walwatch.fish"),
        (format!("{assets}/man/*.1.gz"), "/usr/share/man/man1/"),
    ];
    for (src, dest) in both {
        let pair = (src.clone(), dest.to_string());
        assert!(deb_assets.contains(&pair), "deb installs {pair:?}: {deb_assets:?}");
        assert!(rpm_assets.contains(&pair), "rpm installs {pair:?}: {rpm_assets:?}");
    }
    let zsh = format!("{assets}/completions/_walwatch");
    let deb_zsh = (zsh.clone(), "/usr/share/zsh/vendor-completions/_walwatch".to_string());
    assert!(deb_assets.contains(&deb_zsh), "deb installs {deb_zsh:?}: {deb_assets:?}");
    let rpm_zsh = (zsh, "/usr/share/zsh/site-functions/_walwatch".to_string());
    assert!(rpm_assets.contains(&rpm_zsh), "rpm installs {rpm_zsh:?}: {rpm_assets:?}");

    // Both packages install the same files, but for the known differences:
    // the license texts' directory and zsh's.
    let normalize = |dest: &str| {
        dest.replace("/usr/share/licenses/walwatch/", "/usr/share/doc/walwatch/")
            .replace("/usr/share/zsh/site-functions/", "/usr/share/zsh/vendor-completions/")
    };
    let mut deb_dests: Vec<String> = deb_assets.iter().map(|(_, d)| d.clone()).collect();
    let mut rpm_dests: Vec<String> = rpm_assets.iter().map(|(_, d)| normalize(d)).collect();
    deb_dests.sort();
    rpm_dests.sort();
    assert_eq!(deb_dests, rpm_dests, "the deb's and the rpm's files");
}

/// packaging/build-assets.sh, run on the binary cargo built, makes every
/// generated file the package metadata names under target/release/assets,
/// one manual page per command, and nothing the metadata leaves out.
#[test]
fn build_assets_makes_what_the_packages_ship() {
    let release = scratch_dir("build-assets");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_walwatch"), release.join("walwatch")).unwrap();
    let out = Command::new(repo().join("packaging/build-assets.sh")).arg(&release).output().unwrap();
    assert!(out.status.success(), "packaging/build-assets.sh:\n{}", output_text(&out));

    let manifest: toml::Value = read("Cargo.toml").parse().unwrap();
    let deb = manifest["package"]["metadata"]["deb"]["assets"].as_array().unwrap();
    let mut matched = Vec::new();
    for asset in deb {
        let Some(rel) = asset[0].as_str().unwrap().strip_prefix("target/release/") else { continue };
        if rel == "walwatch" {
            continue;
        }
        let pattern = release.join(rel);
        let found: Vec<PathBuf> = glob::glob(pattern.to_str().unwrap()).unwrap().map(Result::unwrap).collect();
        assert!(!found.is_empty(), "build-assets.sh made nothing for {rel}");
        matched.extend(found);
    }
    let mut made = Vec::new();
    for dir in ["completions", "man"] {
        for entry in fs::read_dir(release.join("assets").join(dir)).unwrap() {
            made.push(entry.unwrap().path());
        }
    }
    matched.sort();
    made.sort();
    assert_eq!(matched, made, "what build-assets.sh makes vs what the deb metadata ships");

    // walwatch.1 and one page per (sub)command, as `walwatch --help` lists them.
    let pages: Vec<String> =
        made.iter().filter_map(|p| p.file_name()?.to_str()?.strip_suffix(".1.gz").map(str::to_string)).collect();
    assert!(pages.contains(&"walwatch".to_string()) && pages.contains(&"walwatch-alerts-silence".to_string()));
    let help = Command::new(env!("CARGO_BIN_EXE_walwatch")).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let commands = help.split_once("Commands:\n").unwrap().1.split("\n\n").next().unwrap();
    for line in commands.lines() {
        let name = line.split_whitespace().next().unwrap();
        if name != "help" {
            assert!(pages.contains(&format!("walwatch-{name}")), "no page for {name}: {pages:?}");
        }
    }
    // gzip -n: no time stamp, so a rebuild packages the same bytes.
    let page = fs::read(release.join("assets/man/walwatch.1.gz")).unwrap();
    assert_eq!(&page[4..8], &[0, 0, 0, 0], "walwatch.1.gz has a gzip time stamp");
    let _ = fs::remove_dir_all(&release);
}
