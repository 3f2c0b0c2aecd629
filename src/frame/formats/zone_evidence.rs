//! What a record says of the zone its log's times are written in, for the
//! `CST` that is China's rather than US Central
//! ([`TimeContext::learn_zone`], [`TimeContext::learn_language`]): the
//! postmaster's `parameter "log_timezone" changed to "X"`, and the
//! language a server process writes in. Read before the record's own time,
//! since the reload line is itself written in the new zone.

use crate::catalog::{Catalog, Classification};
use crate::frame::time::TimeContext;
use crate::frame::{LogSeverity, Record};
use crate::model::event::EventBody;

/// The setting whose reload line dates the lines after it (and itself).
pub(crate) const LOG_TIMEZONE: &str = "log_timezone";

/// The zone a record sets when it reads as the postmaster's reload of
/// log_timezone by the trust checks' rules for it (`classify::trust`, a
/// layer above): LOG, not doubted, no session, postmaster if the format
/// says who wrote it, no CONTEXT or STATEMENT.
pub(crate) fn zone_set_by(catalog: &Catalog, record: &Record) -> Option<String> {
    if !record.message.contains(LOG_TIMEZONE) || !postmasters(record) {
        return None;
    }
    match catalog.classify(&record.message) {
        Classification::Event(EventBody::ParameterChanged { name, value }) if name == LOG_TIMEZONE => Some(value),
        _ => None,
    }
}

fn postmasters(record: &Record) -> bool {
    record.severity == LogSeverity::Log
        && record.origin.doubt.is_none()
        && !record.origin.session
        && record.origin.backend_type.as_deref().is_none_or(|b| b == "postmaster")
        && record.context.is_none()
        && record.statement.is_none()
}

/// What a csvlog or jsonlog record (whose columns name the process and
/// cannot be forged by a client's text) says of its log's zone, learned
/// before its time is read: the severity word (csvlog translates it), the
/// message of a server process (jsonlog does not translate the severity;
/// a client's text never counts), a reload of log_timezone.
pub(crate) fn learn_from_columns(time: &TimeContext, catalog: &Catalog, record: &Record, severity_word: &str) {
    time.learn_language(severity_word);
    let server = matches!(record.origin.backend_type.as_deref(), Some("postmaster" | "checkpointer" | "startup"));
    if server && !record.origin.session {
        time.learn_text_language(&record.message);
    }
    if let Some(zone) = zone_set_by(catalog, record) {
        time.learn_zone(&zone);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame::{Cut, Origin};

    /// The postmaster's reload line as PostgreSQL 15 writes it (csvlog of
    /// tests/fixtures/cst/reload-asia-shanghai.csv), as a record.
    fn reload() -> Record {
        Record {
            offset: 0,
            line: 1,
            time: None,
            origin: Origin {
                pid: Some(16484),
                backend_type: Some("postmaster".into()),
                session_checkable: true,
                ..Origin::default()
            },
            severity: LogSeverity::Log,
            message: "parameter \"log_timezone\" changed to \"Asia/Shanghai\"".into(),
            detail: None,
            hint: None,
            context: None,
            statement: None,
            cut: Cut::Whole,
        }
    }

    /// "2026-11-29 09:38:30.602 CST" read after `learn`, as UTC.
    fn cst_after(learn: impl Fn(&TimeContext)) -> String {
        let time = TimeContext::new(None).unwrap();
        learn(&time);
        time.parse_quietly("2026-11-29 09:38:30.602 CST").unwrap().to_string()
    }

    const CHINA: &str = "2026-11-29T01:38:30.602Z";
    const US_CENTRAL: &str = "2026-11-29T15:38:30.602Z";

    /// Only the postmaster's own reload of log_timezone sets a zone: each
    /// other shape of the record, one field changed, sets none.
    #[test]
    fn only_the_postmasters_reload_of_log_timezone_sets_the_zone() {
        let catalog = Catalog::global();
        assert_eq!(zone_set_by(catalog, &reload()).as_deref(), Some("Asia/Shanghai"));
        let mut stderr = reload();
        stderr.origin.backend_type = None;
        assert_eq!(zone_set_by(catalog, &stderr).as_deref(), Some("Asia/Shanghai"), "no %b: no process type to check");
        let changed: [fn(&mut Record); 7] = [
            |r| r.origin.session = true,
            |r| r.origin.backend_type = Some("client backend".into()),
            |r| r.origin.doubt = Some("spliced"),
            |r| r.severity = LogSeverity::Warning,
            |r| r.context = Some("PL/pgSQL function f() line 1 at RAISE".into()),
            |r| r.statement = Some("SELECT f()".into()),
            |r| r.message = "parameter \"log_min_messages\" changed to \"log_timezone\"".into(),
        ];
        for (i, change) in changed.iter().enumerate() {
            let mut r = reload();
            change(&mut r);
            assert_eq!(zone_set_by(catalog, &r), None, "change {i}");
        }
        let mut other = reload();
        other.message = "received SIGHUP, reloading configuration files".into();
        assert_eq!(zone_set_by(catalog, &other), None);
    }

    /// What a csvlog or jsonlog row teaches before its time is read: the
    /// reload's zone, a Chinese severity word, a server process's Chinese
    /// message; never a client's.
    #[test]
    fn columns_teach_the_zone_only_from_the_server() {
        let catalog = Catalog::global();
        assert_eq!(cst_after(|_| {}), US_CENTRAL);
        assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &reload(), "LOG")), CHINA);
        assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &reload(), "日志")), CHINA);
        let mut ready = reload();
        ready.message = "数据库系统准备接受连接".into();
        assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &ready, "LOG")), CHINA);
        for process in ["checkpointer", "startup"] {
            ready.origin.backend_type = Some(process.into());
            assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &ready, "LOG")), CHINA, "{process}");
        }
        let mut client = ready.clone();
        client.origin.backend_type = Some("client backend".into());
        assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &client, "LOG")), US_CENTRAL);
        client.origin.backend_type = Some("postmaster".into());
        client.origin.session = true;
        assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &client, "LOG")), US_CENTRAL);
        ready.origin.backend_type = None;
        assert_eq!(cst_after(|t| learn_from_columns(t, catalog, &ready, "LOG")), US_CENTRAL, "no process type");
    }

    /// Han characters make Chinese; with kana (Japanese) or hangul
    /// (Korean) they do not; nor does Latin text.
    #[test]
    fn chinese_text_is_han_without_kana_or_hangul() {
        assert_eq!(cst_after(|t| t.learn_text_language("数据库系统准备接受连接")), CHINA);
        assert_eq!(
            cst_after(|t| t.learn_text_language("データベースシステムは接続を受け付ける準備ができました")),
            US_CENTRAL
        );
        assert_eq!(cst_after(|t| t.learn_text_language("데이터베이스 시스템 연결 준비 완료 數據")), US_CENTRAL);
        assert_eq!(cst_after(|t| t.learn_text_language("database system is ready to accept connections")), US_CENTRAL);
    }

    /// A zone from a conf file reads the abbreviation and says which file
    /// set it; a reload in the log then takes over, and says so.
    #[test]
    fn a_conf_files_zone_is_named_and_the_log_takes_over() {
        let time = TimeContext::new(None).unwrap();
        assert!(time.learn_zone_from_conf("Asia/Shanghai", std::path::Path::new("/etc/pg/postgresql.conf")));
        assert_eq!(time.parse("2026-11-29 09:38:30.602 CST").unwrap().to_string(), CHINA);
        assert!(time.learn_zone("America/Chicago"));
        assert_eq!(time.parse("2026-11-29 09:38:30.602 CST").unwrap().to_string(), US_CENTRAL);
        let notes = time.take_warnings();
        assert_eq!(
            notes,
            [
                "time zone abbreviation \"CST\" read in Asia/Shanghai, the log_timezone /etc/pg/postgresql.conf sets",
                "time zone abbreviation \"CST\" read in America/Chicago, the log_timezone the log itself set \
                 (`parameter \"log_timezone\" changed to \"America/Chicago\"`)"
            ]
        );
        assert!(!TimeContext::new(Some("UTC"))
            .unwrap()
            .learn_zone_from_conf("Asia/Shanghai", std::path::Path::new("x")));
    }
}
