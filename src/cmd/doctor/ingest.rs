//! A central walwatch's `[ingest]`: the agents' tokens, the certificate, the
//! spool the shipped files are kept in.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use crate::config::IngestSection;

use super::access::Account;
use super::finding::Finding;

const CHECK: &str = "ingest";

pub(super) fn check(section: &IngestSection, db: &Path, account: &Account) -> Vec<Finding> {
    let Some(listen) = section.listen else { return Vec::new() };
    let mut findings = vec![tokens(section, account)];
    match &section.tls {
        Some((cert, key)) => findings.push(tls(cert, key, account)),
        None if !listen.ip().is_loopback() => findings.push(Finding::warning(
            CHECK,
            format!("{listen} takes batches over plain HTTP"),
            "the agents' bearer tokens and the log lines cross the network in clear",
            "set tls_cert and tls_key in [ingest] (PEM files), and https:// in the agents' uri \
             (walwatch vector-config --central https://…)",
        )),
        None => {}
    }
    findings.push(spool(&section.spool_dir(db), account));
    findings
}

fn tokens(section: &IngestSection, account: &Account) -> Finding {
    let user = &account.name;
    let Some(path) = &section.token_file else {
        return Finding::ok(CHECK, "listens on a loopback address without tokens");
    };
    let why = "the receiver reads the tokens at start and at each reload: without them it does not start";
    let fix = format!("chown root:{user} {0} && chmod 0640 {0}", path.display());
    if let Err(e) = account.may_read(path) {
        return Finding::error(CHECK, format!("{user} cannot read {}: {e}", path.display()), why, fix);
    }
    // Read as the receiver reads it: the same tokens, the same refusal.
    let tokens = match crate::receive::read_tokens(path) {
        Ok(tokens) => tokens,
        Err(e) => {
            let fix = format!(
                "write one token a line into {}, each followed by the host (or host glob) its agent ships as                  (e.g. `echo \"$(openssl rand -hex 24) db-1\" >> {0}`)",
                path.display()
            );
            return Finding::error(CHECK, e.to_string(), why, fix);
        }
    };
    let n = tokens.len();
    let mode = std::fs::metadata(path).map(|m| m.permissions().mode()).unwrap_or(0);
    if mode & 0o004 != 0 {
        return Finding::warning(
            CHECK,
            format!("{} ({n} tokens) is readable by every user (mode {:o})", path.display(), mode & 0o777),
            "anyone on this host can take a token and write events into the store",
            fix,
        );
    }
    if let Some(finding) = loose_tokens(path, &tokens) {
        return finding;
    }
    Finding::ok(
        CHECK,
        format!("{} holds {n} token(s), each bound to its hosts; {user} may read it, not every user", path.display()),
    )
}

/// Tokens that may write any host, or that are short enough to guess.
fn loose_tokens(path: &Path, tokens: &[crate::receive::Token]) -> Option<Finding> {
    let lines = |pick: &dyn Fn(&crate::receive::Token) -> bool| -> Vec<String> {
        tokens.iter().filter(|t| pick(t)).map(|t| t.line.to_string()).collect()
    };
    let any = lines(&|t| t.any_host());
    if !any.is_empty() {
        return Some(Finding::warning(
            CHECK,
            format!("{}: the token(s) on line(s) {} may write any host", path.display(), any.join(", ")),
            "one stolen agent token could then write every host's clusters (their alerts, their history)",
            format!(
                "write after each token the host name (or glob) its agent ships as: `TOKEN db-1`; a batch naming                  another host is then refused (403). Lines of {}",
                path.display()
            ),
        ));
    }
    let weak = lines(&|t| t.weak());
    (!weak.is_empty()).then(|| {
        Finding::warning(
            CHECK,
            format!(
                "{}: the token(s) on line(s) {} are shorter than {} characters",
                path.display(),
                weak.join(", "),
                crate::receive::tokens::STRONG
            ),
            "a short token can be guessed by anyone who reaches the port",
            "make each token long and random: `openssl rand -hex 24`",
        )
    })
}

fn tls(cert: &Path, key: &Path, account: &Account) -> Finding {
    let user = &account.name;
    let why = "the receiver does not start without its certificate";
    for path in [cert, key] {
        if let Err(e) = account.may_read(path) {
            let fix = format!("chown root:{user} {0} && chmod 0640 {0}", path.display());
            return Finding::error(CHECK, format!("{user} cannot read {}: {e}", path.display()), why, fix);
        }
    }
    match crate::serve::server_config(cert, key).map(drop) {
        Ok(()) => Finding::ok(CHECK, format!("HTTPS with {} and its key", cert.display())),
        Err(e) => Finding::error(
            CHECK,
            e,
            why,
            "give tls_cert the certificate chain (PEM, the server's certificate first) and tls_key its private key",
        ),
    }
}

/// The spool directory, or the nearest directory above it that exists.
fn spool(dir: &Path, account: &Account) -> Finding {
    let user = &account.name;
    let existing = dir.ancestors().find(|d| d.exists()).unwrap_or(Path::new("/"));
    match account.may_write(existing) {
        Ok(()) => Finding::ok(CHECK, format!("{user} may keep shipped files in {}", dir.display())),
        Err(e) => Finding::error(
            CHECK,
            format!("{user} cannot write {}: {e}", existing.display()),
            "every batch is kept in the spool before it is answered: none can be taken",
            format!("chown {user}: {}, or set [ingest] spool to a directory {user} owns", existing.display()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(dir: &Path, extra: &str) -> IngestSection {
        let text = format!("[store]\npath = \"{}/w.db\"\n[ingest]\nlisten = \"0.0.0.0:10188\"\n{extra}", dir.display());
        crate::config::parse(&text, Path::new("w.toml")).unwrap().ingest
    }

    #[test]
    fn tokens_certificate_and_spool() {
        let dir = tempfile::tempdir().unwrap();
        let me = Account::this_process();
        let tokens = dir.path().join("tokens");
        let statuses = |s: &IngestSection| -> Vec<(String, String)> {
            check(s, &dir.path().join("w.db"), &me)
                .into_iter()
                .map(|f| (format!("{:?}", f.status), f.message))
                .collect()
        };
        std::fs::write(&tokens, "# none yet\n").unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o640)).unwrap();
        let s = section(dir.path(), &format!("token_file = {:?}\n", tokens.display().to_string()));
        let got = statuses(&s);
        let empty =
            format!("[ingest] token_file {}: holds no token (one a line): no agent could send", tokens.display());
        assert_eq!(got[0], ("Error".into(), empty));
        assert_eq!(got[1].0, "Warning", "plain HTTP on the network: {got:?}");
        assert_eq!(
            got[2],
            ("Ok".into(), format!("{} may keep shipped files in {}/w-ingest", me.name, dir.path().display()))
        );
        std::fs::write(&tokens, "a\nb\n").unwrap();
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(statuses(&s)[0].0, "Warning");
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o640)).unwrap();
        let any = format!("{}: the token(s) on line(s) 1, 2 may write any host", tokens.display());
        assert_eq!(statuses(&s)[0], ("Warning".into(), any));
        std::fs::write(&tokens, "aaaaaaaaaaaaaaaaaaaa db-1\nb db-*\n").unwrap();
        let weak = format!("{}: the token(s) on line(s) 2 are shorter than 16 characters", tokens.display());
        assert_eq!(statuses(&s)[0], ("Warning".into(), weak));
        std::fs::write(&tokens, "aaaaaaaaaaaaaaaaaaaa db-1\nbbbbbbbbbbbbbbbbbbbb db-*\n").unwrap();
        let ok = format!(
            "{} holds 2 token(s), each bound to its hosts; {} may read it, not every user",
            tokens.display(),
            me.name
        );
        assert_eq!(statuses(&s)[0], ("Ok".into(), ok));

        // A certificate and a key that do not make a pair.
        let (cert, key) = (dir.path().join("c.pem"), dir.path().join("k.pem"));
        std::fs::write(&cert, "not a certificate\n").unwrap();
        std::fs::write(&key, "not a key\n").unwrap();
        let extra = format!(
            "token_file = {:?}\ntls_cert = {:?}\ntls_key = {:?}\n",
            tokens.display().to_string(),
            cert.display().to_string(),
            key.display().to_string()
        );
        let got = statuses(&section(dir.path(), &extra));
        assert_eq!(got.len(), 3);
        assert_eq!(got[1].0, "Error");
        assert!(got[1].1.contains("no PEM certificate"), "{got:?}");
    }
}
