use super::*;
use crate::cmd::doctor::finding::Status;

/// Writes `files` (name, text) into a directory; returns it and the main
/// file's path (the first one).
fn config(files: &[(&str, &str)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text.replace("DIR", &dir.path().display().to_string())).unwrap();
    }
    let main = dir.path().join(files[0].0);
    (dir, main)
}

fn finding(files: &[(&str, &str)]) -> (Finding, String) {
    let (dir, main) = config(files);
    let f = check("syslog", Some("syslog"), &main).unwrap();
    (f, dir.path().display().to_string())
}

/// Debian 12's rsyslog.conf as installed: imuxsock without the kernel's pid.
const DEBIAN: &str = "# /etc/rsyslog.conf configuration file for rsyslog\n#\n#################\n#### MODULES ####\n#################\n\nmodule(load=\"imuxsock\") # provides support for local system logging\nmodule(load=\"imklog\")   # provides kernel logging support\n#module(load=\"immark\")  # provides --MARK-- message capability\n\n$IncludeConfig DIR/rsyslog.d/*.conf\n*.*;auth,authpriv.none\t\t-/var/log/syslog\n";

#[test]
fn debians_default_writes_the_claimed_pid_and_the_fix_is_the_exact_line() {
    let (f, dir) = finding(&[("rsyslog.conf", DEBIAN)]);
    assert_eq!(f.status, Status::Warning);
    assert_eq!(
        f.message,
        format!(
            "{dir}/rsyslog.conf:7 loads imuxsock without the kernel's pid: rsyslog writes the pid the sender claims"
        )
    );
    assert!(f.why.starts_with("any local user can send lines tagged with the checkpointer's pid (`logger -t postgres --id=<checkpointer pid>"), "{}", f.why);
    assert_eq!(
        f.fix,
        format!("add SysSock.UsePIDFromSystem=\"on\" to the imuxsock load at {dir}/rsyslog.conf:7: `module(load=\"imuxsock\" SysSock.UsePIDFromSystem=\"on\")` (legacy syntax: `$SystemLogUsePIDFromSystem on` after `$ModLoad imuxsock`), then restart rsyslog (systemctl restart rsyslog); or log to stderr, csvlog or jsonlog files, which only the server writes")
    );
}

#[test]
fn the_kernels_pid_is_found_in_every_spelling_and_in_included_files() {
    let fixed =
        DEBIAN.replace("module(load=\"imuxsock\")", "module(load=\"imuxsock\" SysSock.UsePIDFromSystem=\"on\")");
    let cases: Vec<Vec<(&str, String)>> = vec![
        vec![("rsyslog.conf", fixed)],
        // Over several lines, keys in another case, single quotes.
        vec![("rsyslog.conf", "module(\n  load=\"imuxsock\"\n  sysSock.usePIDFromSystem='on'   # the kernel's\n)\n".into())],
        // Legacy directives, the setting in an included file.
        vec![
            ("rsyslog.conf", "$ModLoad imuxsock\n$IncludeConfig DIR/rsyslog.d/*.conf\n".into()),
            ("rsyslog.d/10-pid.conf", "$SystemLogUsePIDFromSystem on\n".into()),
        ],
        // include() and a listener of its own on /dev/log.
        vec![
            ("rsyslog.conf", "module(load=\"imuxsock\" SysSock.Use=\"on\")\ninclude(file=\"DIR/conf.d/*.conf\" mode=\"optional\")\n".into()),
            ("conf.d/pg.conf", "input(type=\"imuxsock\" Socket=\"/dev/log\" UsePIDFromSystem=\"on\")\n".into()),
        ],
        // RHEL: no system socket, the journal read with _PID.
        vec![("rsyslog.conf", "module(load=\"imuxsock\" SysSock.Use=\"off\")\nmodule(load=\"imjournal\" UsePid=\"system\" StateFile=\"imjournal.state\")\n".into())],
    ];
    for files in cases {
        let files: Vec<(&str, &str)> = files.iter().map(|(n, t)| (*n, t.as_str())).collect();
        let (f, _) = finding(&files);
        assert_eq!(f.status, Status::Ok, "{files:?}: {f:?}");
        assert!(f.message.starts_with("rsyslog writes the pid the kernel gives for each sender ("), "{}", f.message);
    }
}

#[test]
fn settings_commented_out_or_missing_do_not_count() {
    let cases = [
        "module(load=\"imuxsock\")\n#$SystemLogUsePIDFromSystem on\n/* module(load=\"imuxsock\" SysSock.UsePIDFromSystem=\"on\") */\n",
        "$ModLoad imuxsock\n$SystemLogUsePIDFromSystem off\n",
        "module(load=\"imuxsock\" SysSock.UsePIDFromSystem=\"off\")\n",
    ];
    for text in cases {
        let (f, _) = finding(&[("rsyslog.conf", text)]);
        assert_eq!(
            (f.status, f.message.contains("loads imuxsock without the kernel's pid")),
            (Status::Warning, true),
            "{text}"
        );
    }
    // RHEL's default: imjournal takes SYSLOG_PID first.
    let (f, dir) = finding(&[(
        "rsyslog.conf",
        "module(load=\"imuxsock\" SysSock.Use=\"off\")\nmodule(load=\"imjournal\" StateFile=\"imjournal.state\")\n",
    )]);
    assert_eq!(
        f.message,
        format!(
            "{dir}/rsyslog.conf:2 loads imjournal without the kernel's pid: rsyslog writes the pid the sender claims"
        )
    );
    assert!(f.fix.starts_with(&format!("add UsePid=\"system\" to the imjournal load at {dir}/rsyslog.conf:2: `module(load=\"imjournal\" UsePid=\"system\")`")), "{}", f.fix);
    let (f, dir) = finding(&[("rsyslog.conf", "*.* /var/log/all\n")]);
    assert_eq!(
        (f.status, f.message),
        (Status::Warning, format!("{dir}/rsyslog.conf (and what it includes) loads neither imuxsock nor imjournal"))
    );
}

#[test]
fn which_clusters_get_the_check() {
    let missing = Path::new("/nonexistent/rsyslog.conf");
    assert_eq!(check("stderr", Some("stderr"), missing), None);
    assert_eq!(check("csvlog", None, missing), None);
    let unread = check("stderr", Some("stderr, Syslog"), missing).unwrap();
    assert_eq!(unread.status, Status::Warning);
    assert!(
        unread.message.starts_with("cannot read rsyslog's config /nonexistent/rsyslog.conf: "),
        "{}",
        unread.message
    );
    assert_eq!(check("journald-json", Some("syslog"), missing).unwrap().status, Status::Ok);
    assert_eq!(check("journald", None, missing).unwrap().status, Status::Warning);
}
