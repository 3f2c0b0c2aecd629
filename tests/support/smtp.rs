//! A real SMTP server process for the mail tests: `smtp_sink.py` (aiosmtpd
//! under Debian's /usr/bin/python3 — the pyenv `python3` on PATH lacks it)
//! writes each accepted message to a directory; this side starts and stops
//! it and reads the messages back, parsed by mailparse.

use std::fs;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use mailparse::{MailHeaderMap, ParsedMail};
use serde_json::Value;

/// The interpreter with python3-aiosmtpd.
pub const PYTHON: &str = "/usr/bin/python3";

/// How the sink speaks TLS, with a certificate for "localhost".
#[derive(Debug, Clone)]
pub struct SinkTls {
    pub cert: PathBuf,
    pub key: PathBuf,
    /// "starttls" or "implicit".
    pub mode: &'static str,
}

#[derive(Debug, Clone, Default)]
pub struct SinkOptions {
    /// Require AUTH with this user and password.
    pub auth: Option<(String, String)>,
    /// When this file holds a pid, the sink SIGKILLs it after storing the
    /// next message and before answering 250 (then deletes the file).
    pub kill_file: Option<PathBuf>,
    pub tls: Option<SinkTls>,
}

/// A private CA (`ca.pem`) and a server certificate for "localhost" signed
/// by it (`localhost.pem`, `localhost.key`), made with the openssl command.
pub struct TestCa {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

pub fn make_ca(dir: &Path) -> TestCa {
    fs::create_dir_all(dir).unwrap();
    let p = |name: &str| dir.join(name);
    fs::write(
        p("leaf.ext"),
        "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
    )
    .unwrap();
    let s = |path: PathBuf| path.to_str().unwrap().to_string();
    let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
    openssl(
        &[
            &["req", "-x509"][..],
            &ec,
            &["-keyout", &s(p("ca.key")), "-out", &s(p("ca.pem")), "-days", "2"],
            &[
                "-subj",
                "/CN=walwatch test CA",
                "-addext",
                "basicConstraints=critical,CA:TRUE",
                "-addext",
                "keyUsage=critical,keyCertSign,cRLSign",
            ],
        ]
        .concat(),
    );
    openssl(
        &[
            &["req"][..],
            &ec,
            &["-keyout", &s(p("localhost.key")), "-out", &s(p("localhost.csr")), "-subj", "/CN=localhost"],
        ]
        .concat(),
    );
    openssl(&[
        "x509",
        "-req",
        "-in",
        &s(p("localhost.csr")),
        "-CA",
        &s(p("ca.pem")),
        "-CAkey",
        &s(p("ca.key")),
        "-CAcreateserial",
        "-out",
        &s(p("localhost.pem")),
        "-days",
        "2",
        "-extfile",
        &s(p("leaf.ext")),
    ]);
    TestCa { ca: p("ca.pem"), cert: p("localhost.pem"), key: p("localhost.key") }
}

fn openssl(args: &[&str]) {
    let out = Command::new("openssl").args(args).output().expect("openssl");
    assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

pub struct SmtpSink {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    options: SinkOptions,
}

/// A port nothing listens on right now.
/// The `[mail]` section of a config that mails to the test SMTP server on
/// 127.0.0.1:`port` (retries after 1 s, at most 2 s apart); `[mail.smtp]`
/// is last, so a test may append keys to it.
#[allow(dead_code)] // not every test that compiles this module mails
pub fn mail_config(port: u16) -> String {
    format!(
        r#"[mail]
transport = "smtp"
from = "walwatch <walwatch@db1.example.com>"
to = ["dba@example.com"]
retry_initial = "1s"
retry_max = "2s"

[mail.smtp]
host = "127.0.0.1"
port = {port}
security = "none"
"#
    )
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

impl SmtpSink {
    /// Starts a sink on `port` storing into `dir` (created), and waits until
    /// it accepts connections.
    pub fn start(dir: &Path, port: u16, options: SinkOptions) -> SmtpSink {
        fs::create_dir_all(dir).unwrap();
        let mut sink = SmtpSink { child: None, port, dir: dir.to_path_buf(), options };
        sink.restart();
        sink
    }

    /// (Re)starts the process on the same port and directory.
    pub fn restart(&mut self) {
        assert!(self.child.is_none(), "sink already running");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/smtp_sink.py");
        let mut cmd = Command::new(PYTHON);
        cmd.arg(script).arg("--port").arg(self.port.to_string()).arg("--dir").arg(&self.dir);
        if let Some((user, password)) = &self.options.auth {
            cmd.arg("--auth").arg(format!("{user}:{password}"));
        }
        if let Some(kill) = &self.options.kill_file {
            cmd.arg("--kill-file").arg(kill);
        }
        if let Some(tls) = &self.options.tls {
            cmd.arg("--tls-cert").arg(&tls.cert).arg("--tls-key").arg(&tls.key).arg("--tls-mode").arg(tls.mode);
        }
        let stderr = fs::File::create(self.dir.with_extension("stderr.log")).unwrap();
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("{PYTHON} smtp_sink.py: {e} (needs Debian's python3-aiosmtpd)"));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        assert_eq!(
            line.trim(),
            "ready",
            "smtp_sink.py did not start; see {}",
            self.dir.with_extension("stderr.log").display()
        );
        self.child = Some(child);
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The messages received so far, in arrival order.
    pub fn messages(&self) -> Vec<Received> {
        let mut names: Vec<PathBuf> = fs::read_dir(&self.dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "eml"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|eml| {
                let meta: Value = serde_json::from_slice(&fs::read(eml.with_extension("json")).unwrap()).unwrap();
                Received { raw: fs::read(&eml).unwrap(), meta }
            })
            .collect()
    }

    /// Waits until at least `n` messages arrived.
    pub fn wait_for(&self, n: usize, deadline: Duration) -> Vec<Received> {
        let start = Instant::now();
        loop {
            let messages = self.messages();
            if messages.len() >= n || start.elapsed() > deadline {
                return messages;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.stop();
    }
}

/// One message as the server stored it, with its SMTP envelope.
pub struct Received {
    pub raw: Vec<u8>,
    pub meta: Value,
}

impl Received {
    pub fn parsed(&self) -> ParsedMail<'_> {
        mailparse::parse_mail(&self.raw).expect("the received message parses")
    }

    /// Every value of header `name`, decoded (RFC 2047).
    pub fn headers(&self, name: &str) -> Vec<String> {
        self.parsed().headers.get_all_values(name)
    }

    pub fn header(&self, name: &str) -> String {
        let values = self.headers(name);
        assert_eq!(values.len(), 1, "exactly one {name} header, got {values:?}");
        values[0].clone()
    }

    pub fn message_id(&self) -> String {
        self.header("Message-ID")
    }

    /// Every header name, in order.
    pub fn header_names(&self) -> Vec<String> {
        self.parsed().headers.iter().map(|h| h.get_key()).collect()
    }

    /// The decoded body of the part with this MIME type.
    pub fn part(&self, mimetype: &str) -> String {
        let parsed = self.parsed();
        let parts: Vec<&ParsedMail> = parsed.subparts.iter().filter(|p| p.ctype.mimetype == mimetype).collect();
        assert_eq!(parts.len(), 1, "exactly one {mimetype} part");
        // Lines end in CRLF on the wire; the assertions use \n.
        parts[0].get_body().unwrap().replace("\r\n", "\n")
    }

    pub fn rcpt_tos(&self) -> Vec<String> {
        self.meta["rcpt_tos"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().to_string()).collect()
    }

    pub fn mail_from(&self) -> String {
        self.meta["mail_from"].as_str().unwrap().to_string()
    }

    pub fn login(&self) -> Option<String> {
        self.meta["login"].as_str().map(str::to_string)
    }
}
