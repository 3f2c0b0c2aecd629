//! syslog: `Mon DD HH:MM:SS host ident[pid]: [N-k] <log_line_prefix>LEVEL:  message`.

/// Whether `line` looks like PostgreSQL output relayed by a syslog daemon.
pub fn looks_like(line: &[u8]) -> bool {
    static RE: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::bytes::Regex::new(
            r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) \S+ [^\s\[]+\[\d+\]: \[\d+(?:-\d+)?\] ",
        )
        .expect("valid regex")
    })
    .is_match(line)
}
