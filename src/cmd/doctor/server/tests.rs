use super::*;
use crate::cmd::doctor::finding::Status;

const CONF: &str = "/etc/postgresql/15/main/postgresql.conf";

fn set(name: &'static str, value: &str) -> Setting {
    Setting { name, value: value.into(), set_at: Some(format!("{CONF}:7")), by_alter_system: false }
}

fn prefix(spec: &str) -> Finding {
    log_line_prefix(&set("log_line_prefix", spec), "stderr", "auto", CONF)
}

#[test]
fn prefix_verdicts() {
    let good = prefix("%m [%p] %q%u@%d ");
    assert_eq!((good.status, good.message.as_str()), (Status::Ok, "'%m [%p] %q%u@%d ' (/etc/postgresql/15/main/postgresql.conf:7): time, pid and the session fields the trust check reads"));
    assert_eq!(prefix("%m [%p] %b ").status, Status::Ok);
    let bare = prefix("%m [%p] ");
    assert_eq!(bare.status, Status::Warning);
    assert!(
        bare.why.starts_with("log_line_prefix '%m [%p] ' does not tell client sessions from the checkpointer"),
        "{}",
        bare.why
    );
    assert_eq!(
        bare.fix,
        "set `log_line_prefix = '%m [%p] %q%u@%d '` in /etc/postgresql/15/main/postgresql.conf, then reload (SELECT pg_reload_conf();)"
    );
    let empty = prefix("");
    assert_eq!(
        (empty.status, empty.message.as_str()),
        (Status::Error, "'' (/etc/postgresql/15/main/postgresql.conf:7) has no time and no pid")
    );
    let seconds = prefix("%t ");
    assert_eq!(
        (seconds.status, seconds.message.as_str()),
        (Status::Error, "'%t ' (/etc/postgresql/15/main/postgresql.conf:7) has no pid")
    );
    assert!(seconds.why.starts_with("without the pid (%p) before %q walwatch cannot tell which process wrote a line"));
    // A pid printed for sessions only is no pid for the checkpointer.
    assert_eq!(prefix("%m %q[%p] %u ").status, Status::Error);
    // Padded names leave room for two server lines (README's weaker rows).
    assert_eq!(prefix("%m [%p] %-10u %-10d ").status, Status::Warning);
}

#[test]
fn prefix_of_a_structured_log_or_one_walwatch_is_told_otherwise() {
    let csv = log_line_prefix(&set("log_line_prefix", ""), "csvlog", "auto", CONF);
    assert_eq!(csv.status, Status::Ok);
    let told = log_line_prefix(&set("log_line_prefix", "%m [%p] "), "stderr", "%t [%p] ", CONF);
    assert_eq!(told.status, Status::Error);
    assert_eq!(told.fix, "set prefix = \"auto\" (or \"%m [%p] \") in the [[cluster]] table of walwatch.toml");
}

#[test]
fn lc_messages_values() {
    for ok in ["C", "POSIX", "en_US.UTF-8", "C.UTF-8", "en_GB"] {
        assert_eq!(lc_messages(&set("lc_messages", ok), CONF).status, Status::Ok, "{ok}");
    }
    let de = lc_messages(&set("lc_messages", "de_DE.UTF-8"), CONF);
    assert_eq!(de.status, Status::Warning);
    assert_eq!(de.message, "'de_DE.UTF-8': the log is translated (/etc/postgresql/15/main/postgresql.conf:7)");
    assert_eq!(
        de.fix,
        "set `lc_messages = 'C'` in /etc/postgresql/15/main/postgresql.conf, then reload (SELECT pg_reload_conf();)"
    );
    let unset = Setting::of(&Parsed::default(), "lc_messages", Some(15));
    assert_eq!(lc_messages(&unset, CONF).status, Status::Warning);
}

#[test]
fn log_checkpoints_off_and_its_default_by_version() {
    let off = log_checkpoints(&set("log_checkpoints", "off"), CONF);
    assert_eq!(off.status, Status::Error);
    assert_eq!(
        off.fix,
        "set `log_checkpoints = on` in /etc/postgresql/15/main/postgresql.conf, then reload (SELECT pg_reload_conf();)"
    );
    let none = Parsed::default();
    assert_eq!(log_checkpoints(&Setting::of(&none, "log_checkpoints", Some(14)), CONF).status, Status::Error);
    let on15 = log_checkpoints(&Setting::of(&none, "log_checkpoints", Some(15)), CONF);
    assert_eq!((on15.status, on15.message.as_str()), (Status::Ok, "on (the default)"));
    // ALTER SYSTEM's value wins over postgresql.conf: the fix says ALTER SYSTEM.
    let altered = Setting { by_alter_system: true, ..set("log_checkpoints", "off") };
    assert_eq!(
        log_checkpoints(&altered, CONF).fix,
        "ALTER SYSTEM SET log_checkpoints = on; then reload (SELECT pg_reload_conf();)"
    );
}

#[test]
fn destinations_against_what_walwatch_follows() {
    let stderr = set("log_destination", "stderr");
    let (on, off) = (set("logging_collector", "on"), set("logging_collector", "off"));
    assert_eq!(destination(&stderr, &on, Follows::CurrentLogfiles, CONF).status, Status::Ok);
    // Debian: stderr into /var/log/postgresql without the collector.
    assert_eq!(destination(&stderr, &off, Follows::Globs("stderr"), CONF).status, Status::Ok);
    let no_collector = destination(&stderr, &off, Follows::CurrentLogfiles, CONF);
    assert_eq!(no_collector.status, Status::Error);
    assert!(no_collector.fix.starts_with(
        "set `logging_collector = on` in /etc/postgresql/15/main/postgresql.conf, then restart PostgreSQL"
    ));
    let json = set("log_destination", "stderr,jsonlog");
    assert_eq!(destination(&json, &off, Follows::Globs("stderr"), CONF).status, Status::Error);
    let csv_wanted = destination(&stderr, &on, Follows::Globs("csvlog"), CONF);
    assert_eq!(csv_wanted.status, Status::Error);
    assert!(csv_wanted.fix.starts_with("set `log_destination = 'csvlog'`"));
}
