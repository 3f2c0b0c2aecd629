use super::level::Secondary;
use super::*;
use toml::Value;

fn cat() -> &'static Catalog {
    Catalog::global()
}

fn ev(c: Classification) -> EventBody {
    match c {
        Classification::Event(e) => e,
        other => panic!("expected an event, got {other:?}"),
    }
}

// ------------------------------------------------------------ [[sample]]s

fn s<'a>(t: &'a toml::Table, k: &str) -> Option<&'a str> {
    t.get(k).and_then(Value::as_str)
}
fn i(t: &toml::Table, k: &str) -> Option<i64> {
    t.get(k).and_then(Value::as_integer)
}
fn f(t: &toml::Table, k: &str) -> Option<f64> {
    t.get(k).and_then(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
}

/// The Classification a sample's `expect` table describes.
fn expected(e: &toml::Table) -> Classification {
    let name = s(e, "event").expect("expect.event");
    let req_i = |k: &str| i(e, k).unwrap_or_else(|| panic!("expect.{k}"));
    let req_f = |k: &str| f(e, k).unwrap_or_else(|| panic!("expect.{k}"));
    let point = if name.starts_with("restartpoint") { PointKind::Restartpoint } else { PointKind::Checkpoint };
    Classification::Event(match name {
        "other" => return Classification::Other,
        "unparsed" => {
            let k = s(e, "kind").expect("expect.kind");
            return Classification::Unparsed(KIND_NAMES.iter().find(|n| **n == k).expect("known kind"));
        }
        "checkpoint_start" | "restartpoint_start" => EventBody::PointStart {
            kind: point,
            flags: e["flags"].as_array().expect("flags").iter().map(|v| v.as_str().unwrap().to_string()).collect(),
        },
        "checkpoint_complete" | "restartpoint_complete" => EventBody::PointComplete {
            kind: point,
            stats: Box::new(CompleteStats {
                buffers_written: req_i("buffers_written"),
                buffers_pct: req_f("buffers_pct"),
                slru_buffers_written: i(e, "slru_buffers_written"),
                wal_files_added: i(e, "wal_files_added"),
                wal_files_removed: i(e, "wal_files_removed"),
                wal_files_recycled: i(e, "wal_files_recycled"),
                write_s: req_f("write_s"),
                sync_s: req_f("sync_s"),
                total_s: req_f("total_s"),
                sync_files: i(e, "sync_files"),
                sync_longest_s: f(e, "sync_longest_s"),
                sync_average_s: f(e, "sync_average_s"),
                distance_kb: i(e, "distance_kb"),
                estimate_kb: i(e, "estimate_kb"),
                lsn: s(e, "lsn").map(str::to_string),
                redo_lsn: s(e, "redo_lsn").map(str::to_string),
            }),
        },
        "too_frequent" => EventBody::TooFrequent { seconds: req_i("seconds"), hint: false },
        "recovery_restart_point" => EventBody::RecoveryRestartPoint { lsn: s(e, "lsn").unwrap().into() },
        "parameter_changed" => {
            EventBody::ParameterChanged { name: s(e, "name").unwrap().into(), value: s(e, "value").unwrap().into() }
        }
        "config_reload" => EventBody::ConfigReload,
        "server_start" => EventBody::ServerStart { version: s(e, "version").map(str::to_string) },
        "server_ready" => EventBody::ServerReady { read_only: e["read_only"].as_bool().unwrap() },
        "shutdown_request" => EventBody::ShutdownRequest {
            mode: match s(e, "mode").unwrap() {
                "smart" => ShutdownMode::Smart,
                "fast" => ShutdownMode::Fast,
                "immediate" => ShutdownMode::Immediate,
                m => panic!("mode {m}"),
            },
        },
        "server_shutdown" => EventBody::ServerShutdown,
        "redo_start" => EventBody::RedoStart { lsn: s(e, "lsn").unwrap().into() },
        "redo_done" => EventBody::RedoDone { lsn: s(e, "lsn").unwrap().into(), elapsed_s: f(e, "elapsed_s") },
        "crash_reinit" => EventBody::CrashReinit,
        "archive_recovery_done" => EventBody::ArchiveRecoveryDone,
        other => panic!("unknown expect.event {other}"),
    })
}

#[test]
fn every_sample_parses_to_its_expected_fields() {
    let mut n = 0;
    let mut failures = Vec::new();
    for (file, text) in FAMILIES {
        let doc: toml::Table = toml::from_str(text).unwrap();
        for sample in doc.get("sample").and_then(Value::as_array).into_iter().flatten() {
            let t = sample.as_table().unwrap();
            let msg = s(t, "text").unwrap();
            let want = expected(t["expect"].as_table().unwrap());
            let got = cat().classify(msg);
            if got != want {
                failures
                    .push(format!("{file} [{}] {msg:?}\n  want {want:?}\n  got  {got:?}", s(t, "lang").unwrap_or("?")));
            }
            n += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {n} samples failed:\n{}", failures.len(), failures.join("\n"));
    assert!(n >= 100, "only {n} samples");
}

#[test]
fn every_hint_sample() {
    let mut n = 0;
    for (file, text) in FAMILIES {
        let doc: toml::Table = toml::from_str(text).unwrap();
        for sample in doc.get("hint_sample").and_then(Value::as_array).into_iter().flatten() {
            let t = sample.as_table().unwrap();
            let hint = s(t, "text").unwrap();
            let want = t["expect"].as_bool().unwrap();
            assert_eq!(cat().is_too_frequent_hint(hint), want, "{file}: {hint:?}");
            n += 1;
        }
    }
    assert!(n >= 5);
}

#[test]
fn samples_cover_every_message_family() {
    // Every English shape of the checkpoint messages has at least one sample.
    let mut texts = Vec::new();
    for (_, text) in FAMILIES {
        let doc: toml::Table = toml::from_str(text).unwrap();
        for sample in doc.get("sample").and_then(Value::as_array).into_iter().flatten() {
            texts.push(sample.as_table().unwrap()["text"].as_str().unwrap().to_string());
        }
    }
    let c = cat();
    for t in c.templates.iter().filter(|t| t.lang == "en") {
        let re = t.regex().unwrap();
        assert!(texts.iter().any(|x| re.is_match(x)), "no sample for English shape {:?}", t.format);
    }
}

// ------------------------------------------------------------ data integrity

#[test]
fn every_template_regex_compiles() {
    let c = cat();
    for t in c.templates.iter().chain(&c.usage) {
        assert!(t.regex().is_some(), "{} [{}]: {}", c.messages[t.msg].id, t.lang, t.pattern);
    }
    assert!(c.templates.len() > 300, "{} templates", c.templates.len());
}

#[test]
fn no_translation_is_dropped() {
    assert!(cat().skipped.is_empty(), "translations with mismatched conversions: {:?}", cat().skipped);
}

#[test]
fn needles_cover_every_template() {
    let c = cat();
    assert!(c.needles().len() <= 52, "{} needles", c.needles().len());
    let mut seen = HashSet::new();
    for n in c.needles() {
        assert!(n.len() >= 4, "needle {n:?} shorter than 4 bytes");
        assert!(seen.insert(n), "duplicate needle {n:?}");
    }
    let mut missing = Vec::new();
    for t in &c.templates {
        let covered = match &t.prefix {
            Some(p) => c.needles().iter().any(|n| p.contains(n.as_str())),
            None => c.needles().iter().any(|n| t.segments.iter().any(|s| s.contains(n.as_str()))),
        };
        if !covered {
            missing.push(format!("{} [{}] {:?}", c.messages[t.msg].id, t.lang, t.format));
        }
    }
    assert!(missing.is_empty(), "templates without a needle:\n{}", missing.join("\n"));
    // Every needle is useful.
    for (i, n) in c.needles().iter().enumerate() {
        assert!(!c.needle_templates[i].is_empty(), "needle {n:?} covers nothing");
    }
}

#[test]
fn statements_rarely_hit_a_needle() {
    let c = cat();
    let statements = [
        "statement: SELECT abalance FROM pgbench_accounts WHERE aid = 932668;",
        "duration: 0.083 ms  statement: INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (29, 9, 188377, -2756, CURRENT_TIMESTAMP);",
        "statement: UPDATE pgbench_tellers SET tbalance = tbalance + 2708 WHERE tid = 41;",
        "statement: BEGIN;",
        "statement: END;",
        "connection authorized: user=postgres database=postgres application_name=psql",
        "disconnection: session time: 0:00:00.004 user=postgres database=postgres host=[local]",
    ];
    for st in statements {
        assert!(
            c.automaton.find(st).is_none(),
            "{st:?} hits needle {:?}",
            c.automaton.find(st).map(|m| &c.needles()[m.pattern().as_usize()])
        );
    }
}

#[test]
fn builds_fast() {
    // Best of several runs: other tests run in parallel and steal the CPU.
    let best = (0..10)
        .map(|_| {
            let t = std::time::Instant::now();
            let c = Catalog::build().unwrap();
            assert!(!c.templates.is_empty());
            t.elapsed()
        })
        .min()
        .unwrap();
    // The 30 ms budget is for optimised builds (about 12 ms measured);
    // unoptimised test builds are 10-20x slower, so only a sanity bound there.
    let limit = if cfg!(debug_assertions) { 5_000 } else { 30 };
    assert!(best.as_millis() < limit, "build took {best:?}");
    eprintln!("catalog build: {best:?}");
}

// ------------------------------------------------------------ levels

#[test]
fn markers_and_severities() {
    let c = cat();
    let m: HashMap<&str, LineLevel> = c.markers().iter().map(|(s, l)| (s.as_str(), *l)).collect();
    assert_eq!(m["LOG:  "], LineLevel::Primary(LogSeverity::Log));
    assert_eq!(m["ERREUR:  "], LineLevel::Primary(LogSeverity::Error));
    assert_eq!(m["СООБЩЕНИЕ:  "], LineLevel::Primary(LogSeverity::Log));
    assert_eq!(m["FEHLER:  "], LineLevel::Primary(LogSeverity::Error));
    assert_eq!(m["HINT:  "], LineLevel::Secondary(Secondary::Hint));
    assert_eq!(m["TIPP:  "], LineLevel::Secondary(Secondary::Hint));
    assert_eq!(m["ASTUCE :  "], LineLevel::Secondary(Secondary::Hint));
    assert_eq!(m["DÉTAIL:  "], LineLevel::Secondary(Secondary::Detail));
    assert_eq!(m["İPUCU:"], LineLevel::Secondary(Secondary::Hint));
    assert_eq!(m["ヒント:  "], LineLevel::Secondary(Secondary::Hint));
    assert_eq!(m["STATEMENT:  "], LineLevel::Secondary(Secondary::Statement));
    assert_eq!(m["LOCATION:  "], LineLevel::Secondary(Secondary::Location));
    assert!(matches!(m["გაფრთხილება:  "], LineLevel::Primary(LogSeverity::Notice | LogSeverity::Warning)));
    assert_eq!(&c.markers()[0].0, "DEBUG:  ");
    let uniq: HashSet<&str> = c.markers().iter().map(|(s, _)| s.as_str()).collect();
    assert_eq!(uniq.len(), c.markers().len());

    assert_eq!(c.severity("LOG"), Some(LogSeverity::Log));
    assert_eq!(c.severity("СООБЩЕНИЕ"), Some(LogSeverity::Log));
    assert_eq!(c.severity("ERREUR"), Some(LogSeverity::Error));
    assert_eq!(c.severity("PANIK"), Some(LogSeverity::Panic));
    assert_eq!(c.severity("DEBUG2"), Some(LogSeverity::Debug));
    assert_eq!(c.severity("LOGG"), Some(LogSeverity::Log));
    assert_eq!(c.severity("statement"), None);
}

// ------------------------------------------------------------ real log lines

fn stats(c: Classification) -> (PointKind, CompleteStats) {
    match ev(c) {
        EventBody::PointComplete { kind, stats } => (kind, *stats),
        other => panic!("not a complete: {other:?}"),
    }
}

#[test]
fn fixture_15_i18n_de() {
    let c = cat();
    assert_eq!(
        ev(c.classify("Checkpoints passieren zu oft (alle 2 Sekunden)")),
        EventBody::TooFrequent { seconds: 2, hint: false }
    );
    assert!(c.is_too_frequent_hint("Erhöhen Sie eventuell den Konfigurationsparameter »max_wal_size«."));
    assert_eq!(
        ev(c.classify("Checkpoint beginnt: wal")),
        EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec!["wal".into()] }
    );
    let (k, st) = stats(c.classify("Checkpoint komplett: 33 Puffer geschrieben (0.8%); 0 WAL-Datei(en) hinzugefügt, 1 entfernt, 0 wiederverwendet; Schreiben=0,212 s, Sync=0,134 s, gesamt=0,391 s; sync. Dateien=30, längste=0,074 s, Durchschnitt=0.005 s; Entfernung=11722 kB, Schätzung=11722 kB"));
    assert_eq!(k, PointKind::Checkpoint);
    assert_eq!((st.buffers_written, st.buffers_pct, st.write_s, st.sync_s, st.total_s), (33, 0.8, 0.212, 0.134, 0.391));
    assert_eq!((st.sync_files, st.sync_longest_s, st.sync_average_s), (Some(30), Some(0.074), Some(0.005)));
    assert_eq!((st.wal_files_added, st.wal_files_removed, st.wal_files_recycled), (Some(0), Some(1), Some(0)));
    assert_eq!(
        (st.distance_kb, st.estimate_kb, st.lsn, st.slru_buffers_written),
        (Some(11722), Some(11722), None, None)
    );
    assert_eq!(
        ev(c.classify("PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit startet")),
        EventBody::ServerStart { version: Some("15.18".into()) }
    );
    assert_eq!(
        ev(c.classify("Datenbanksystem ist bereit, um Verbindungen anzunehmen")),
        EventBody::ServerReady { read_only: false }
    );
    assert_eq!(
        ev(c.classify("schnelles Herunterfahren verlangt")),
        EventBody::ShutdownRequest { mode: ShutdownMode::Fast }
    );
    assert_eq!(
        ev(c.classify("Checkpoint beginnt: shutdown immediate")),
        EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec!["shutdown".into(), "immediate".into()] }
    );
    assert_eq!(ev(c.classify("Datenbanksystem ist heruntergefahren")), EventBody::ServerShutdown);
    assert_eq!(c.classify("fahre herunter"), Classification::Other);
    assert_eq!(c.classify("etwaige aktive Transaktionen werden abgebrochen"), Classification::Other);
}

#[test]
fn fixture_15_i18n_fr() {
    let c = cat();
    assert_eq!(
        ev(c.classify("les points de vérification (checkpoints) arrivent trop fréquemment\n(toutes les 3 secondes)")),
        EventBody::TooFrequent { seconds: 3, hint: false }
    );
    assert_eq!(
        ev(c.classify("les points de vérification (checkpoints) arrivent trop fréquemment\n(toutes les 0 seconde)")),
        EventBody::TooFrequent { seconds: 0, hint: false }
    );
    assert!(c.is_too_frequent_hint("Considérez l'augmentation du paramètre « max_wal_size »."));
    assert_eq!(
        ev(c.classify("début du checkpoint : wal")),
        EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec!["wal".into()] }
    );
    let (k, st) = stats(c.classify("checkpoint terminé : a écrit 66 tampons (1.6%); 0 fichiers WAL ajoutés, 1 supprimés, 0 recyclés ; écriture=0.376 s, synchronisation=0.140 s, total=0.612 s; fichiers synchronisés=30, plus long=0.072 s, moyenne=0.005 s; distance=12933 kB, estimation=12933 kB"));
    assert_eq!(k, PointKind::Checkpoint);
    assert_eq!((st.buffers_written, st.total_s, st.distance_kb), (66, 0.612, Some(12933)));
    assert_eq!(
        ev(c.classify("démarrage de PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit")),
        EventBody::ServerStart { version: Some("15.18".into()) }
    );
    assert_eq!(
        ev(c.classify("le système de bases de données est prêt pour accepter les connexions")),
        EventBody::ServerReady { read_only: false }
    );
    assert_eq!(
        ev(c.classify("a reçu une demande d'arrêt rapide")),
        EventBody::ShutdownRequest { mode: ShutdownMode::Fast }
    );
    assert_eq!(ev(c.classify("le système de base de données est arrêté")), EventBody::ServerShutdown);
    assert_eq!(c.classify("arrêt en cours"), Classification::Other);
}

#[test]
fn fixture_15_i18n_ja() {
    let c = cat();
    assert_eq!(
        ev(c.classify("チェックポイントの発生周期が短すぎます(3秒間隔)")),
        EventBody::TooFrequent { seconds: 3, hint: false }
    );
    assert!(c.is_too_frequent_hint("設定パラメータ\"max_wal_size\"を増やすことを検討してください"));
    assert_eq!(
        ev(c.classify("チェックポイント開始: wal")),
        EventBody::PointStart { kind: PointKind::Checkpoint, flags: vec!["wal".into()] }
    );
    let (_, st) = stats(c.classify("チェックポイント完了: 155個のバッファを出力 (3.8%); 0個のWALファイルを追加、1個を削除、0個を再利用; 書き出し=0.237秒, 同期=0.159秒, 全体=0.510秒; 同期したファイル=30, 最長=0.092秒, 平均=0.006秒; 距離=12284 kB, 予測=12284 kB"));
    assert_eq!((st.buffers_written, st.buffers_pct, st.write_s, st.sync_average_s), (155, 3.8, 0.237, Some(0.006)));
    assert_eq!(
        ev(c.classify("PostgreSQL 15.18 (Debian 15.18-0+deb12u1) on x86_64-pc-linux-gnu, compiled by gcc (Debian 12.2.0-14+deb12u1) 12.2.0, 64-bit を起動しています")),
        EventBody::ServerStart { version: Some("15.18".into()) }
    );
    assert_eq!(
        ev(c.classify("データベースシステムの接続受け付け準備が整いました")),
        EventBody::ServerReady { read_only: false }
    );
    assert_eq!(
        ev(c.classify("高速シャットダウン要求を受け取りました")),
        EventBody::ShutdownRequest { mode: ShutdownMode::Fast }
    );
    assert_eq!(ev(c.classify("データベースシステムはシャットダウンしました")), EventBody::ServerShutdown);
}

#[test]
fn fixture_18_pgbadger_std() {
    let c = cat();
    assert_eq!(
        ev(c.classify("starting PostgreSQL 18.4 on x86_64-pc-linux-gnu, compiled by gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0, 64-bit")),
        EventBody::ServerStart { version: Some("18.4".into()) }
    );
    assert_eq!(
        ev(c.classify("checkpoints are occurring too frequently (1 second apart)")),
        EventBody::TooFrequent { seconds: 1, hint: false }
    );
    let (k, st) = stats(c.classify("checkpoint complete: wrote 37 buffers (0.9%), wrote 3 SLRU buffers; 0 WAL file(s) added, 1 removed, 0 recycled; write=0.312 s, sync=0.140 s, total=0.536 s; sync files=37, longest=0.072 s, average=0.004 s; distance=9937 kB, estimate=9937 kB; lsn=0/31012D8, redo lsn=0/21008D0"));
    assert_eq!(k, PointKind::Checkpoint);
    assert_eq!(
        st,
        CompleteStats {
            buffers_written: 37,
            buffers_pct: 0.9,
            slru_buffers_written: Some(3),
            wal_files_added: Some(0),
            wal_files_removed: Some(1),
            wal_files_recycled: Some(0),
            write_s: 0.312,
            sync_s: 0.140,
            total_s: 0.536,
            sync_files: Some(37),
            sync_longest_s: Some(0.072),
            sync_average_s: Some(0.004),
            distance_kb: Some(9937),
            estimate_kb: Some(9937),
            lsn: Some("0/31012D8".into()),
            redo_lsn: Some("0/21008D0".into()),
        }
    );
}

#[test]
fn fixture_16_default_std() {
    let (_, st) = stats(cat().classify("checkpoint complete: wrote 3160 buffers (77.1%); 0 WAL file(s) added, 2 removed, 1 recycled; write=0.655 s, sync=0.023 s, total=0.742 s; sync files=38, longest=0.005 s, average=0.001 s; distance=37518 kB, estimate=37518 kB; lsn=0/AF71D30, redo lsn=0/A005330"));
    assert_eq!((st.buffers_written, st.slru_buffers_written), (3160, None));
    assert_eq!((st.lsn.as_deref(), st.redo_lsn.as_deref()), (Some("0/AF71D30"), Some("0/A005330")));
    assert_eq!(
        ev(cat().classify("starting PostgreSQL 16.14 on x86_64-pc-linux-gnu, compiled by gcc (Ubuntu 7.5.0-3ubuntu1~18.04) 7.5.0, 64-bit")),
        EventBody::ServerStart { version: Some("16.14".into()) }
    );
}

#[test]
fn fixture_13_default_std() {
    let c = cat();
    assert_eq!(
        ev(c.classify("checkpoints are occurring too frequently (2 seconds apart)")),
        EventBody::TooFrequent { seconds: 2, hint: false }
    );
    let (_, st) = stats(c.classify("checkpoint complete: wrote 59 buffers (1.4%); 0 WAL file(s) added, 0 removed, 1 recycled; write=0.326 s, sync=0.105 s, total=0.540 s; sync files=26, longest=0.070 s, average=0.005 s; distance=11583 kB, estimate=11583 kB"));
    assert_eq!((st.buffers_written, st.wal_files_recycled, st.estimate_kb, st.lsn), (59, Some(1), Some(11583), None));
    assert_eq!(
        ev(c.classify("database system is ready to accept connections")),
        EventBody::ServerReady { read_only: false }
    );
}

#[test]
fn fixture_15_standby() {
    let c = cat();
    assert_eq!(
        ev(c.classify("restartpoint starting: wal")),
        EventBody::PointStart { kind: PointKind::Restartpoint, flags: vec!["wal".into()] }
    );
    let (k, st) = stats(c.classify("restartpoint complete: wrote 2117 buffers (51.7%); 1 WAL file(s) added, 1 removed, 0 recycled; write=2.605 s, sync=0.013 s, total=2.669 s; sync files=16, longest=0.003 s, average=0.001 s; distance=16384 kB, estimate=16384 kB"));
    assert_eq!((k, st.buffers_written, st.wal_files_added), (PointKind::Restartpoint, 2117, Some(1)));
    assert_eq!(
        ev(c.classify("recovery restart point at 0/B000028")),
        EventBody::RecoveryRestartPoint { lsn: "0/B000028".into() }
    );
    assert_eq!(ev(c.classify("redo starts at 0/A000028")), EventBody::RedoStart { lsn: "0/A000028".into() });
    assert_eq!(
        ev(c.classify("database system is ready to accept read-only connections")),
        EventBody::ServerReady { read_only: true }
    );
    assert_eq!(c.classify("consistent recovery state reached at 0/A000100"), Classification::Other);
    assert_eq!(
        c.classify("starting backup recovery with redo LSN 0/A000028, checkpoint LSN 0/A000060, on timeline ID 1"),
        Classification::Other
    );
}

#[test]
fn fixture_15_crashimm() {
    let c = cat();
    assert_eq!(
        ev(c.classify("checkpoint starting: immediate force wait")),
        EventBody::PointStart {
            kind: PointKind::Checkpoint,
            flags: vec!["immediate".into(), "force".into(), "wait".into()]
        }
    );
    assert_eq!(ev(c.classify("received SIGHUP, reloading configuration files")), EventBody::ConfigReload);
    assert_eq!(
        ev(c.classify("parameter \"max_wal_size\" changed to \"64MB\"")),
        EventBody::ParameterChanged { name: "max_wal_size".into(), value: "64MB".into() }
    );
    assert_eq!(
        ev(c.classify("received immediate shutdown request")),
        EventBody::ShutdownRequest { mode: ShutdownMode::Immediate }
    );
    assert_eq!(ev(c.classify("database system is shut down")), EventBody::ServerShutdown);
    assert_eq!(ev(c.classify("redo starts at 0/44002FA8")), EventBody::RedoStart { lsn: "0/44002FA8".into() });
    assert_eq!(
        ev(c.classify("redo done at 0/475F4EB8 system usage: CPU: user: 0.03 s, system: 0.06 s, elapsed: 0.16 s")),
        EventBody::RedoDone { lsn: "0/475F4EB8".into(), elapsed_s: Some(0.16) }
    );
    assert_eq!(
        ev(c.classify("checkpoint starting: end-of-recovery immediate wait")),
        EventBody::PointStart {
            kind: PointKind::Checkpoint,
            flags: vec!["end-of-recovery".into(), "immediate".into(), "wait".into()]
        }
    );
    assert_eq!(
        ev(c.classify("received fast shutdown request")),
        EventBody::ShutdownRequest { mode: ShutdownMode::Fast }
    );
    assert_eq!(c.classify("invalid record length at 0/475F4EE0: wanted 24, got 0"), Classification::Other);
    assert_eq!(c.classify("shutting down"), Classification::Other);
}

#[test]
fn statements_are_not_events() {
    let c = cat();
    assert_eq!(c.classify("statement: SELECT 'checkpoint starting: wal'::int;"), Classification::Other);
    assert_eq!(c.classify("checkpoint starting: wal; DROP TABLE x"), Classification::Unparsed("checkpoint_start"));
    assert_eq!(c.classify("checkpoint complete: wrote"), Classification::Unparsed("checkpoint_complete"));
    assert_eq!(c.classify(""), Classification::Other);
    assert_eq!(c.classify("checkpoint"), Classification::Other);
}

// ------------------------------------------------------------ robustness

/// Tiny deterministic PRNG (xorshift64*).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn garbage_never_panics() {
    let c = cat();
    let mut fragments: Vec<String> = c.needles().to_vec();
    for t in c.templates.iter().step_by(3) {
        fragments.extend(t.segments.iter().cloned());
    }
    fragments.extend(
        [
            "%",
            "%%",
            "%s",
            "\n",
            "\t",
            "\u{0}",
            "\u{FFFD}",
            "é",
            "секунд",
            "秒",
            "0/",
            "FFFFFFFF",
            "99999999999999999999999",
            "-1",
            ",",
            ".",
            " ",
            "(",
            ")",
        ]
        .map(String::from),
    );
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20_000 {
        let mut s = String::new();
        for _ in 0..rng.below(12) {
            s.push_str(&fragments[rng.below(fragments.len())]);
            if rng.below(4) == 0 {
                s.push(char::from_u32(rng.below(0x11_0000) as u32).unwrap_or('\u{FFFD}'));
            }
        }
        let _ = c.classify(&s);
        let _ = c.is_too_frequent_hint(&s);
        let _ = c.severity(&s);
    }
    // Huge inputs and overflowing numbers.
    let huge = "checkpoint complete: ".to_string() + &"wrote 1 buffers ".repeat(100_000);
    assert_eq!(c.classify(&huge), Classification::Unparsed("checkpoint_complete"));
    let _ = c.classify(&"heckpoint".repeat(200_000));
    let big = "checkpoints are occurring too frequently (99999999999999999999999 seconds apart)";
    assert_eq!(c.classify(big), Classification::Unparsed("too_frequent"));
    let lossy = String::from_utf8_lossy(b"checkpoint starting: \xff\xfe wal");
    assert_eq!(c.classify(&lossy), Classification::Unparsed("checkpoint_start"));
}

proptest::proptest! {
    #[test]
    fn arbitrary_strings_never_panic(s in ".{0,300}") {
        let c = cat();
        let _ = c.classify(&s);
        let _ = c.is_too_frequent_hint(&s);
        let with_prefix = format!("checkpoint complete: {s}");
        proptest::prop_assert!(!matches!(c.classify(&with_prefix), Classification::Other));
    }
}

#[test]
fn every_parsers_toml_is_embedded() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("parsers");
    for entry in std::fs::read_dir(dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".toml") && name != "levels.toml" {
            assert!(FAMILIES.iter().any(|(f, _)| *f == name), "parsers/{name} is not in FAMILIES");
        }
    }
}

// ------------------------------------------------------------ cut lines

/// The figures [`Catalog::classify_cut`] reads off `message`, by name.
fn cut(message: &str) -> Option<(PointKind, Vec<(&'static str, String)>)> {
    match cat().classify_cut(message)? {
        EventBody::PointCut { kind, stats } => {
            let named = CompleteStats::FIGURES.iter().zip(stats.values()).filter_map(|(name, f)| {
                let text = f.to_string();
                (!text.is_empty()).then_some((*name, text))
            });
            Some((kind, named.collect()))
        }
        other => panic!("expected a cut complete line, got {other:?}"),
    }
}

/// Real lines (tests/fixtures/16-stderr-default-std, 15-stderr-default-i18n-de)
/// cut at several points: each figure printed whole before the cut, none
/// at or after it.
#[test]
fn a_cut_line_gives_the_figures_before_its_cut() {
    let en = "checkpoint complete: wrote 33 buffers (0.8%); 0 WAL file(s) added, 1 removed, 0 recycled; write=0.232 s, sync=0.071 s, total=0.344 s; sync files=30, longest=0.065 s, average=0.003 s; distance=12425 kB, estimate=12425 kB; lsn=0/33CE800, redo lsn=0/2101448";
    let at = |s: &str| &en[..en.find(s).unwrap() + s.len()];
    let owned = |v: &[(&'static str, &str)]| v.iter().map(|(k, t)| (*k, t.to_string())).collect::<Vec<_>>();
    let c = PointKind::Checkpoint;
    assert_eq!(cut(at("(0.8%)")), Some((c, owned(&[("buffers_written", "33"), ("buffers_pct", "0.8")]))));
    assert_eq!(cut(at("(0.8")), Some((c, owned(&[("buffers_written", "33")]))), "0.8 may go on");
    assert_eq!(cut(at("wrote 3")), Some((c, vec![])), "33 may be cut to 3");
    assert_eq!(cut(at("wrote ")), Some((c, vec![])));
    let write = owned(&[
        ("buffers_written", "33"),
        ("buffers_pct", "0.8"),
        ("wal_files_added", "0"),
        ("wal_files_removed", "1"),
        ("wal_files_recycled", "0"),
    ]);
    assert_eq!(cut(at("write=0.23")), Some((c, write.clone())));
    assert_eq!(cut(at("write=0.")), Some((c, write.clone())), "a value cut after its separator");
    assert_eq!(cut(at("wri")), Some((c, write)));
    let (_, figures) = cut(at("lsn=0/33CE800, redo")).unwrap();
    assert_eq!(figures.len(), 14, "every figure of a 16 line but the redo LSN: {figures:?}");
    // The event is named whole, or the line is no complete line of ours.
    assert_eq!(cut("checkpoint complete: wro"), None);
    assert_eq!(cut("checkpoint compl"), None);
    assert_eq!(cut("checkpoint complete: wrote 33 buffers (0.8%) and more"), None, "another text");
    // German, decimal commas.
    let de = "Checkpoint komplett: 33 Puffer geschrieben (0.8%); 0 WAL-Datei(en) hinzugefügt, 1 entfernt, 0 wiederverwendet; Schreiben=0,212 s, Sync=0,134 s, gesamt=0,391 s; sync. Dateien=30, längste=0,074 s, Durchschnitt=0.005 s; Entfernung=11722 kB, Schätzung=11722 kB";
    let (kind, figures) = cut(&de[..de.find("Sync=0,1").unwrap() + 8]).unwrap();
    assert_eq!(kind, c);
    assert_eq!(figures.last(), Some(&("write_s", "0.212".to_string())));
    assert_eq!(figures.len(), 6);
}
