//! The command line, as clap types only; behaviour lives in `cmd/`.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// The heading of -v/-q in every command's help, after its own options.
const GLOBAL: &str = "Global options";

#[derive(Debug, Parser)]
#[command(
    name = "walwatch",
    version,
    about = "PostgreSQL checkpoint history, alerts and max_wal_size advice from the server log"
)]
pub struct Cli {
    /// More log output (-v info about each file, -vv debug).
    #[arg(short, long, action = clap::ArgAction::Count, global = true, help_heading = GLOBAL, display_order = 900)]
    pub(crate) verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true, help_heading = GLOBAL, display_order = 901)]
    pub(crate) quiet: bool,
    /// Tables show times in UTC, not in the local time zone (JSON and CSV are always UTC).
    #[arg(long, global = true, help_heading = GLOBAL, display_order = 902)]
    pub(crate) utc: bool,
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Import PostgreSQL log files (plain, .gz, .zst, or - for stdin) into the store.
    #[command(after_help = "Exit status: 0 every file read; 1 an error (a file that cannot be read, an unknown \
                            log_line_prefix, the store; what was read before it is kept); 3 a file held lines that \
                            look like PostgreSQL events but did not fit the format or prefix it was read with \
                            (stderr names the prefix and the first such line; nothing of that file was recorded as \
                            read, so an import with the right --format/--prefix reads it whole); 4 a file was \
                            read with problems: complete lines cut short (a pager's `>`, a file ending inside a \
                            line), stored up to the cut and marked truncated.")]
    Import(ImportArgs),
    /// List checkpoints and restartpoints.
    Checkpoints(CheckpointsArgs),
    /// Count checkpoints by trigger, warnings, setting changes.
    Summary(SummaryArgs),
    /// The history aggregated per cluster and hour, day, week or month, with sparklines.
    #[command(after_help = "Every bucket of the range is a row, empty ones as zeros. Without --since/--until the \
                            range is each cluster's first to last event; both are widened to whole buckets. \
                            Exit status: 0 (a range without data is said on stderr); 1 an error (an unknown \
                            --cluster or --tz, the store).")]
    History(HistoryArgs),
    /// Render the daily digest of a day (the mail the daemon sends each morning); print it, save it or send it now.
    #[command(after_help = "Without --to, --eml or --html the text part is printed. The day is the previous one \
                            in [digest] timezone (else the system's) unless --date is given. --to sends through \
                            [mail] now, without the queue, and does not count as the day's digest. Exit status: 0; \
                            1 an error (unknown --cluster, no [mail] for --to, the server refused the mail).")]
    Digest(DigestArgs),
    /// Work with the configuration file.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Follow the configured PostgreSQL logs (the daemon; see systemd/walwatch.service).
    Run(RunArgs),
    /// Show what the daemon follows, how far it has read, and what is wrong.
    #[command(after_help = "Exit status: 0 all well (the daemon runs, or none ever ran on this store); 1 an error; \
                            4 a cluster has a problem (a log the daemon cannot read, or one whose lines did not fit \
                            its format or prefix), shown as `problem:`; 5 a daemon ran on this store and is not \
                            running now (stopped, killed, crashed or hung: its heartbeat and its pid are checked); \
                            6 walwatch is behind (a followed file has 1 MB or more not read yet), shown as \
                            `behind:`. When several hold: 5, else 4, else 6. -q prints nothing; the JSON has \
                            exit_status and reasons.")]
    Status(StatusArgs),
    /// Show the settings walwatch knows for each cluster, their source, and the change timeline.
    Settings(SettingsArgs),
    /// Suggest max_wal_size (and min_wal_size) from the observed WAL distance.
    Suggest(SuggestArgs),
    /// Replay the logged WAL under other max_wal_size values: forced checkpoints, warnings, pg_wal, crash recovery.
    #[command(after_help = "Without --max-wal-size the settings in force are replayed (logged changes included), \
                            next to what the log shows: they should agree. The replay keeps the logged WAL: with \
                            rarer checkpoints fewer full-page writes make less WAL, so larger sizes are predicted \
                            conservatively. Exit status: 0; 1 an error (a value PostgreSQL would refuse, an unknown \
                            or missing --cluster, no checkpoint with a WAL position in the period, the store).")]
    Whatif(WhatifArgs),
    /// Run the alert rules once on the stored history (e.g. after an import).
    Analyze(AnalyzeArgs),
    /// List alerts; acknowledge, silence (list, end silences), or send a test mail.
    Alerts(AlertsArgs),
    /// Forget what was read of log files (their events and how far they were read), to read them again.
    #[command(after_help = "Exit status: 0 something was forgotten; 1 nothing matched (or an error).")]
    Forget(ForgetArgs),
    /// Check that PostgreSQL logs what walwatch needs, that walwatch may read it, and that the store, the mail and the daemon work.
    #[command(after_help = "Each finding is ok, warning or error, with why it matters and the exact fix. Run it as \
                            the user the daemon runs as, or as root: root checks file access for --user, else the \
                            walwatch user when it exists. Exit status: 0 no error (warnings allowed); 1 an error \
                            found (or doctor itself failed: a bad config, an unknown --cluster or --user).")]
    Doctor(DoctorArgs),
    /// Print the shell completion script for SHELL (the packages install bash, zsh and fish ones).
    // Blank lines between: the man page fills single line breaks.
    #[command(
        after_help = "bash: walwatch completions bash > ~/.local/share/bash-completion/completions/walwatch\n\n\
                            zsh:  walwatch completions zsh > ~/.zfunc/_walwatch (with fpath+=(~/.zfunc) before \
                            compinit)\n\n\
                            fish: walwatch completions fish > ~/.config/fish/completions/walwatch.fish"
    )]
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write one page per command and subcommand into a directory.
    #[command(after_help = "walwatch man | man -l -   reads it. After cargo install, walwatch man --dir \
                            ~/.cargo/share/man/man1 writes walwatch.1 and walwatch-<command>.1 for every command \
                            (walwatch-alerts-silence.1, ...) where man finds them while ~/.cargo/bin is on PATH.")]
    Man(ManArgs),
    /// Print a Vector agent config that ships a host's PostgreSQL logs to a central walwatch ([ingest]).
    #[command(
        name = "vector-config",
        after_help = "Install the output as /etc/vector/vector.toml on each database host, with the agent's token in \
                      WALWATCH_TOKEN (one line of the central's [ingest] token_file). It ships every line of the \
                      logs: walwatch refuses forged lines by the lines around them, so none may be filtered out."
    )]
    VectorConfig(VectorConfigArgs),
}

/// `walwatch vector-config`.
#[derive(Debug, Args)]
pub(crate) struct VectorConfigArgs {
    /// The central walwatch, as the agents reach it: its [ingest] listen address (https:// behind a TLS proxy).
    #[arg(long, value_name = "URL", default_value = "http://walwatch-central:10188")]
    pub(crate) central: String,
    /// The PostgreSQL log files on the host (a glob; repeat for more). Default: the Debian and RHEL/PGDG layouts.
    #[arg(long, value_name = "GLOB")]
    pub(crate) logs: Vec<String>,
}

/// `walwatch completions`.
#[derive(Debug, Args)]
pub(crate) struct CompletionsArgs {
    /// The shell to complete for.
    #[arg(value_enum)]
    pub(crate) shell: clap_complete::Shell,
}

/// `walwatch man`.
#[derive(Debug, Args)]
pub(crate) struct ManArgs {
    /// Write walwatch.1 and walwatch-<command>.1 for every command into DIR (created if missing) instead of printing walwatch.1.
    #[arg(long, value_name = "DIR")]
    pub(crate) dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct DigestArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// The day to digest (YYYY-MM-DD) [default: yesterday in the digest's time zone]
    #[arg(long, value_name = "YYYY-MM-DD")]
    pub(crate) date: Option<jiff::civil::Date>,
    /// Only this cluster (repeat for several) [default: [digest] clusters, else all].
    #[arg(long)]
    pub(crate) cluster: Vec<String>,
    /// The zone whose day it is (IANA name) [default: [digest] timezone, else the system's]
    #[arg(long, value_name = "IANA")]
    pub(crate) tz: Option<String>,
    #[command(flatten)]
    pub(crate) output: DigestOutput,
}

/// Where `walwatch digest` puts the digest: one of them at most.
#[derive(Debug, Args)]
#[group(multiple = false)]
pub(crate) struct DigestOutput {
    /// Send it now to this address through [mail].
    #[arg(long, value_name = "ADDR")]
    pub(crate) to: Option<String>,
    /// Write the whole mail (RFC 5322, with the chart) to FILE.
    #[arg(long, value_name = "FILE")]
    pub(crate) eml: Option<PathBuf>,
    /// Write the HTML part to FILE, the charts beside it as FILE-N.png.
    #[arg(long, value_name = "FILE")]
    pub(crate) html: Option<PathBuf>,
    /// Print the text part (the default).
    #[arg(long)]
    pub(crate) text: bool,
}

#[derive(Debug, Args)]
pub(crate) struct ForgetArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Only this cluster's sources; without FILE, all of them.
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// Log files to forget, found by their content (or, when gone, by the path they were read under).
    #[arg(value_name = "FILE")]
    pub(crate) files: Vec<String>,
    /// Forget the records of damage to shipped files — spools cut outside walwatch, bytes the agent never shipped — which status names until then (set-aside spools stay in the spool's quarantine/ directory).
    #[arg(long, conflicts_with_all = ["cluster", "files"])]
    pub(crate) damaged: bool,
}

/// The configuration (cluster settings, thresholds, mail) and the store.
#[derive(Debug, Args, Clone)]
pub(crate) struct ConfigDbArgs {
    /// Configuration file [default: /etc/walwatch/walwatch.toml; built-in defaults if absent]
    #[arg(long, value_name = "PATH", env = "WALWATCH_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) db: DbArg,
}

/// A per-cluster report from the config and the store (`settings`, `suggest`).
#[derive(Debug, Args)]
pub(crate) struct ClusterReportArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Only this cluster.
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// Output: a table to read, or JSON for scripts.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ReportFormat,
}

/// `walwatch whatif`.
#[derive(Debug, Args)]
pub(crate) struct WhatifArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    #[command(flatten)]
    pub(crate) window: WindowArgs,
    /// A max_wal_size to replay (1GB, 512MB; a bare number is MB); repeat it or give several, one row each [default: the settings in force]
    #[arg(long, value_name = "SIZE", num_args = 1..)]
    pub(crate) max_wal_size: Vec<String>,
    /// The checkpoint_timeout to replay with (5min, 300s; a bare number is seconds) [default: the one in force]
    #[arg(long, value_name = "T")]
    pub(crate) checkpoint_timeout: Option<String>,
    /// The checkpoint_completion_target to replay with, 0 to 1 [default: the one in force]
    #[arg(long, value_name = "F")]
    pub(crate) checkpoint_completion_target: Option<String>,
    /// Output: a table to read, or JSON (an array, one object per setting) for scripts.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ReportFormat,
}

pub(crate) type SettingsArgs = ClusterReportArgs;
pub(crate) type SuggestArgs = ClusterReportArgs;

#[derive(Debug, Args)]
pub(crate) struct AnalyzeArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Only this cluster.
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// Record the alerts but do not deliver them now.
    #[arg(long)]
    pub(crate) no_send: bool,
    /// Output: a table to read, or JSON for scripts.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ReportFormat,
}

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct AlertsArgs {
    #[command(subcommand)]
    pub(crate) command: Option<AlertsCommand>,
    #[command(flatten)]
    pub(crate) list: AlertsListArgs,
}

#[derive(Debug, Args)]
pub(crate) struct AlertsListArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Only this cluster.
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// Resolved alerts too, not only open ones.
    #[arg(long)]
    pub(crate) all: bool,
    /// Output: a table to read, JSON for scripts, or CSV for a spreadsheet.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: OutputFormat,
}

#[derive(Debug, Subcommand)]
pub(crate) enum AlertsCommand {
    /// Acknowledge an alert: no more reminders for it.
    Ack {
        #[command(flatten)]
        common: ConfigDbArgs,
        /// The alert id (first column of `walwatch alerts`).
        id: i64,
    },
    /// Send no notification for RULE (on one cluster or all) for a while.
    Silence {
        #[command(flatten)]
        common: ConfigDbArgs,
        /// Rule id, e.g. forced_checkpoints.
        rule: String,
        /// Only this cluster [default: all].
        #[arg(long)]
        cluster: Option<String>,
        /// How long, e.g. 2h, 30m, 1d.
        #[arg(long = "for", value_name = "DURATION")]
        duration: String,
    },
    /// List the silences running now (with --all, the ended ones too).
    Silences {
        #[command(flatten)]
        common: ConfigDbArgs,
        /// Ended and expired silences too.
        #[arg(long)]
        all: bool,
        /// Output: a table to read, JSON for scripts, or CSV for a spreadsheet.
        #[arg(long, value_enum, default_value = "table")]
        format: OutputFormat,
    },
    /// End a silence now (its id is the first column of `walwatch alerts silences`).
    Unsilence {
        #[command(flatten)]
        common: ConfigDbArgs,
        /// The silence id.
        id: i64,
    },
    /// Send a test message through the configured transports.
    TestMail {
        #[command(flatten)]
        common: ConfigDbArgs,
    },
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// Configuration file [default: /etc/walwatch/walwatch.toml]
    #[arg(long, value_name = "PATH", env = "WALWATCH_CONFIG")]
    pub(crate) config: Option<PathBuf>,
    /// Store to write to, overriding the config's [store] path.
    #[arg(long, value_name = "PATH")]
    pub(crate) db: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub(crate) struct StatusArgs {
    // The config gives [alerts.clock_skew] (events dated ahead) and, without --db, the store.
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Only this cluster.
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// Output: a table to read, or JSON for scripts.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ReportFormat,
}

#[derive(Debug, Subcommand)]
pub(crate) enum ConfigCommand {
    /// Validate the configuration (every error names file:line:column and the key).
    Check(ConfigArgs),
}

#[derive(Debug, Args)]
pub(crate) struct ConfigArgs {
    /// Configuration file [default: /etc/walwatch/walwatch.toml]
    #[arg(long, value_name = "PATH", env = "WALWATCH_CONFIG")]
    pub(crate) config: Option<PathBuf>,
}

/// Where the store lives.
#[derive(Debug, Args, Clone)]
pub(crate) struct DbArg {
    /// SQLite store [default: the config's [store] path (/var/lib/walwatch/walwatch.db) when a config file is read, else $XDG_STATE_HOME/walwatch/walwatch.db]
    #[arg(long, value_name = "PATH", env = "WALWATCH_DB")]
    pub(crate) db: Option<PathBuf>,
}

/// Input format of a log file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum FormatArg {
    Auto,
    Stderr,
    Csvlog,
    Jsonlog,
    Syslog,
    /// Cloud SQL's log exported from Cloud Logging: JSON lines with textPayload or jsonPayload.message.
    Cloudsql,
    /// CloudNativePG's JSON lines (csvlog records under "record", stderr lines under "msg").
    Cnpg,
    /// `journalctl -o json` output.
    #[value(name = "journald-json")]
    JournaldJson,
    /// `journalctl` plain output of a server logging to stderr.
    Journald,
    /// Azure Database for PostgreSQL's diagnostic log records (JSON lines).
    Azure,
    /// Docker's json-file driver: {"log":…,"stream":…,"time":…} lines.
    #[value(name = "docker-json")]
    DockerJson,
    /// A container runtime's (CRI) log files under /var/log/pods: `<time> stderr F <line>`.
    Cri,
    /// What `docker logs`, `docker compose logs` and `kubectl logs` print, with or without --timestamps.
    Docker,
    /// `fly logs`: `<time> app[<machine>] <region> [info]postgres | <line>`.
    Flyio,
    /// Heroku Postgres in logplex: `<time> app[postgres.<pid>]: [DB] [N-k] sql_error_code = … LOG: …`.
    Heroku,
}

#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Cluster the events belong to [default: derived from the file path].
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// The log's format: stderr (any log_line_prefix), csvlog, jsonlog, syslog, a collector's or a platform's wrapper around one, or auto to tell from the file.
    #[arg(long, value_enum, default_value = "auto")]
    pub(crate) format: FormatArg,
    /// The server's log_line_prefix (SHOW log_line_prefix), or "auto" to infer it from the file.
    #[arg(long, default_value = "auto", value_name = "STR")]
    pub(crate) prefix: String,
    /// The server's log_timezone (IANA name), used for ambiguous zone abbreviations.
    #[arg(long, value_name = "TZ")]
    pub(crate) timezone: Option<String>,
    /// Read stderr logs whose lines carry no time (an empty log_line_prefix, a paste without it) in file order:
    /// counts, triggers and distances are reported, nothing is stored (undated events cannot join the history,
    /// the alert rules or the digest).
    #[arg(long)]
    pub(crate) undated: bool,
    /// How the report of each file is printed: table (text to read), or json (one array of one object per file
    /// on standard output, printed at the end; a file that could not be read has its "error").
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) report: ReportFormat,
    /// Log files; "-" reads standard input.
    #[arg(required = true, value_name = "FILE")]
    pub(crate) files: Vec<String>,
}

/// Output format of query commands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    Table,
    Json,
    Csv,
}

/// Time window shared by query commands.
#[derive(Debug, Args, Clone)]
pub(crate) struct WindowArgs {
    /// Only this cluster.
    #[arg(long)]
    pub(crate) cluster: Option<String>,
    /// From this time: RFC 3339, a date (2026-11-22), or a duration back from now (24h, 7d).
    #[arg(long, value_name = "T")]
    pub(crate) since: Option<String>,
    /// Up to this time (same forms as --since).
    #[arg(long, value_name = "T")]
    pub(crate) until: Option<String>,
}

#[derive(Debug, Args)]
pub(crate) struct CheckpointsArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    #[command(flatten)]
    pub(crate) window: WindowArgs,
    /// Only this trigger: shutdown, end-of-recovery, wal, time, manual.
    #[arg(long, value_name = "T")]
    pub(crate) trigger: Option<String>,
    /// Output: a table to read, JSON for scripts, or CSV for a spreadsheet.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: OutputFormat,
}

/// Bucket width of `history`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ByArg {
    Hour,
    Day,
    Week,
    Month,
}

#[derive(Debug, Args)]
pub(crate) struct HistoryArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    #[command(flatten)]
    pub(crate) window: WindowArgs,
    /// Bucket width; weeks start on Monday.
    #[arg(long, value_enum, default_value = "day")]
    pub(crate) by: ByArg,
    /// Time zone of the buckets (IANA name, e.g. Europe/Berlin) [default: the system's]
    #[arg(long, value_name = "IANA")]
    pub(crate) tz: Option<String>,
    /// Output: a table to read, JSON for scripts, or CSV for a spreadsheet.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: OutputFormat,
    /// Per cluster, the whole range against the period of as many buckets before it, with the change in %.
    #[arg(long)]
    pub(crate) compare: bool,
    /// Also draw the range's WAL rate per checkpoint cycle as a PNG (one cluster: with several, add --cluster).
    #[arg(long, value_name = "FILE.png")]
    pub(crate) chart: Option<std::path::PathBuf>,
}

/// Output format of `summary`, `analyze`, `whatif`, `doctor` and `import`'s report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum ReportFormat {
    Table,
    Json,
}

#[derive(Debug, Args)]
pub(crate) struct SummaryArgs {
    // The config gives [alerts.clock_skew] (events dated ahead) and, without --db, the store.
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    #[command(flatten)]
    pub(crate) window: WindowArgs,
    /// Output: a table to read, or JSON for scripts.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ReportFormat,
}

#[derive(Debug, Args)]
pub(crate) struct DoctorArgs {
    #[command(flatten)]
    pub(crate) common: ConfigDbArgs,
    /// Only this configured (or discovered) cluster.
    #[arg(long, conflicts_with = "data_directory")]
    pub(crate) cluster: Option<String>,
    /// Check this data directory's server instead of the configured clusters.
    #[arg(long, value_name = "DIR")]
    pub(crate) data_directory: Option<PathBuf>,
    /// Check file access for this user [default: the current one; as root, walwatch when it exists]
    #[arg(long, value_name = "NAME")]
    pub(crate) user: Option<String>,
    /// rsyslog's config (with what it includes), for whether it writes the pid the kernel gives for a
    /// syslog line's sender
    #[arg(long, value_name = "PATH", default_value = "/etc/rsyslog.conf")]
    pub(crate) rsyslog_conf: PathBuf,
    /// Output: a report to read, or JSON (an array of findings) for scripts.
    #[arg(long, value_enum, default_value = "table")]
    pub(crate) format: ReportFormat,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every option and argument of every command says what it is for in
    /// `--help`, and -v/-q come last, under their own heading.
    #[test]
    fn every_option_of_every_command_is_described() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if ["help", "version"].contains(&id) {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut cli = super::Cli::command();
        cli.build();
        let mut missing = Vec::new();
        walk(&cli, "walwatch", &mut missing);
        assert!(missing.is_empty(), "options without a description: {missing:?}");
        let help = cli.find_subcommand_mut("checkpoints").unwrap().render_help().to_string();
        let (own, global) = help.split_once("Global options:").expect(&help);
        assert!(own.contains("--format") && !own.contains("--verbose"), "{help}");
        assert!(global.contains("--verbose") && global.contains("--quiet"), "{help}");
    }
}
