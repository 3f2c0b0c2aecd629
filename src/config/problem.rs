//! A value of the file that is wrong, at its byte range, and the checks
//! shared by the sections (paths, durations, names from a list, time zones).
//! [`super::parse`] turns a [`Problem`] into file:line:column and key.

use std::ops::Range;
use std::path::Path;

use toml::Spanned;

/// An error at a byte range of the file.
#[derive(Debug)]
pub(super) struct Problem {
    pub(crate) span: Range<usize>,
    pub(crate) message: String,
}

impl Problem {
    pub(crate) fn at<T>(value: &Spanned<T>, message: String) -> Problem {
        Problem { span: value.span(), message }
    }

    /// toml's messages may span lines; an error report is one line.
    pub(crate) fn from_toml(e: &toml::de::Error) -> Problem {
        let mut message = e.message().trim().lines().map(str::trim).collect::<Vec<_>>().join("; ");
        // `[cluster]` where `[[cluster]]` was meant: say what to write.
        if message.contains("invalid type: map, expected a sequence") {
            message.push_str(" (a list of tables: write [[name]] above each entry, with two brackets, not [name])");
        }
        Problem { span: e.span().unwrap_or(0..0), message }
    }
}

/// Paths are absolute: a relative one would depend on the daemon's working
/// directory and most likely match nothing, silently.
pub(super) fn absolute<P: AsRef<Path>>(value: &Spanned<P>) -> Result<&Path, Problem> {
    let path = value.get_ref().as_ref();
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(Problem::at(value, format!("{:?} is not an absolute path", path.display().to_string())))
    }
}

/// A positive duration such as "500ms", "1s" or "2m".
pub(super) fn interval(text: &Spanned<String>) -> Result<std::time::Duration, Problem> {
    crate::timefmt::parse_duration(text.get_ref()).map_err(|message| Problem::at(text, message))
}

/// `[store] keep`: a duration of at least a day ("400d", "57w"), or
/// "forever"/"off" to never prune. A day at least, so that a unit typo
/// ("400s", "400m") cannot empty the store.
pub(super) fn keep(text: &Spanned<String>) -> Result<Option<std::time::Duration>, Problem> {
    if ["forever", "off"].contains(&text.get_ref().as_str()) {
        return Ok(None);
    }
    let hint = "e.g. \"400d\", or \"forever\" to never prune";
    let keep = crate::timefmt::parse_duration(text.get_ref()).map_err(|m| Problem::at(text, format!("{m}; {hint}")))?;
    if keep < super::MIN_KEEP {
        let message =
            format!("keep {:?} is shorter than a day: every row older would be deleted; {hint}", text.get_ref());
        return Err(Problem::at(text, message));
    }
    Ok(Some(keep))
}

pub(super) fn one_of(value: &Spanned<String>, allowed: &[&str], what: &str) -> Result<String, Problem> {
    let v = value.get_ref();
    if allowed.contains(&v.as_str()) {
        Ok(v.clone())
    } else {
        Err(Problem::at(value, format!("unknown {what} {v:?}, expected one of {}", allowed.join(", "))))
    }
}

/// The zone must exist now, not when the first ambiguous timestamp arrives.
/// `name`, an IANA time zone this machine knows; `meaning` says whose zone
/// it should be ("the server's log_timezone").
pub(super) fn time_zone(name: &Spanned<String>, meaning: &str) -> Result<String, Problem> {
    match jiff::tz::TimeZone::get(name.get_ref()) {
        Ok(_) => Ok(name.get_ref().clone()),
        Err(e) => Err(Problem::at(
            name,
            format!(
                "unknown time zone {:?} ({e}); expected an IANA name such as \"Europe/Berlin\", {meaning}",
                name.get_ref()
            ),
        )),
    }
}

/// A `listen` value: an IP address and port. A host name would be resolved
/// once at startup, silently, to an address the user never wrote.
/// `examples` are the addresses the error suggests.
pub(super) fn socket_address(text: &Spanned<String>, examples: [&str; 2]) -> Result<std::net::SocketAddr, Problem> {
    text.get_ref().parse().map_err(|_| {
        let [a, b] = examples;
        let message = format!("listen: {:?} is not an IP address and port, e.g. \"{a}\" (or \"{b}\")", text.get_ref());
        Problem::at(text, message)
    })
}
