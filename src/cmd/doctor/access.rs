//! Whether the user walwatch runs as may read the logs and the conf and
//! write the store. For this process's own user the kernel answers
//! (access(2)); for another one (root checking the `walwatch` service user)
//! a short-lived thread takes that user's uid, gid and groups — on Linux
//! credentials are per thread — and asks the kernel the same, so ACLs,
//! read-only mounts and capabilities count exactly as they will for the daemon.

use std::io;
use std::path::Path;

use anyhow::{bail, Context, Result};
use rustix::fs::{Access, AtFlags, CWD};
use rustix::process::{Gid, Uid};

/// The service user when doctor runs as root and no --user is given.
const SERVICE_USER: &str = "walwatch";

/// Whose access is checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Account {
    pub(crate) name: String,
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
    /// This process's own user: no credentials to take.
    own: bool,
}

impl Account {
    /// `--user`, else as root the `walwatch` user when it exists, else this process's user.
    pub(crate) fn resolve(flag: Option<&str>) -> Result<Account> {
        let me = rustix::process::geteuid().as_raw();
        let wanted = match flag {
            Some(name) => Some(name.to_string()),
            None if me == 0 && lookup(SERVICE_USER)?.is_some() => Some(SERVICE_USER.to_string()),
            None => None,
        };
        let Some(name) = wanted else { return Ok(own(me)) };
        let mut account =
            lookup(&name)?.with_context(|| format!("no user {name:?} (getent passwd {name} finds none)"))?;
        account.own = account.uid == me;
        if !account.own && me != 0 {
            bail!("only root can check file access for another user ({name}); run doctor as {name}, or as root");
        }
        Ok(account)
    }

    /// This process's own user, whoever the service user is.
    #[cfg(test)]
    pub(crate) fn this_process() -> Account {
        own(rustix::process::geteuid().as_raw())
    }

    pub(crate) fn may_read(&self, path: &Path) -> io::Result<()> {
        self.access(path, Access::READ_OK)
    }

    pub(crate) fn may_list(&self, dir: &Path) -> io::Result<()> {
        self.access(dir, Access::READ_OK | Access::EXEC_OK)
    }

    pub(crate) fn may_write(&self, path: &Path) -> io::Result<()> {
        self.access(path, Access::WRITE_OK)
    }

    fn access(&self, path: &Path, mode: Access) -> io::Result<()> {
        if self.own {
            return Ok(rustix::fs::accessat(CWD, path, mode, AtFlags::EACCESS)?);
        }
        let (account, path) = (self.clone(), path.to_path_buf());
        let checked = std::thread::spawn(move || -> io::Result<()> {
            // Groups and gid first: after the uid changes, they no longer can.
            let groups: Vec<Gid> = account.groups.iter().map(|g| Gid::from_raw(*g)).collect();
            rustix::thread::set_thread_groups(&groups)?;
            let gid = Gid::from_raw(account.gid);
            rustix::thread::set_thread_res_gid(gid, gid, gid)?;
            let uid = Uid::from_raw(account.uid);
            rustix::thread::set_thread_res_uid(uid, uid, uid)?;
            Ok(rustix::fs::accessat(CWD, &path, mode, AtFlags::EACCESS)?)
        });
        checked.join().unwrap_or_else(|_| Err(io::Error::other("the access check's thread panicked")))
    }
}

/// This process's user, by name when the user database has it.
fn own(uid: u32) -> Account {
    let name = getent("passwd", &uid.to_string())
        .ok()
        .flatten()
        .and_then(|line| passwd_entry(&line).map(|e| e.0.to_string()))
        .unwrap_or_else(|| format!("uid {uid}"));
    Account { name, uid, gid: 0, groups: Vec::new(), own: true }
}

/// The account `name` as the system's user database has it — through NSS
/// (`getent`, `id`), so LDAP, SSSD or systemd's dynamic users count as
/// /etc/passwd does — with every group the daemon would get: its own, the
/// groups listing it (initgroups), and those the unit adds.
fn lookup(name: &str) -> Result<Option<Account>> {
    let Some(line) = getent("passwd", name)? else { return Ok(None) };
    let (_, uid, gid) = passwd_entry(&line).with_context(|| format!("getent passwd {name}: {line:?}"))?;
    let mut groups = vec![gid];
    for g in ids(&["-G", name])? {
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    if name == SERVICE_USER {
        for g in gids_named(&unit_groups())? {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    Ok(Some(Account { name: name.to_string(), uid, gid, groups, own: false }))
}

/// `getent DATABASE KEY`'s line; None when the key is not there (exit 2).
fn getent(database: &str, key: &str) -> Result<Option<String>> {
    let out = std::process::Command::new("getent")
        .args([database, key])
        .output()
        .with_context(|| format!("running getent {database} {key}"))?;
    match out.status.code() {
        Some(0) => Ok(Some(String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or_default().to_string())),
        Some(2) => Ok(None),
        _ => bail!("getent {database} {key}: {}", String::from_utf8_lossy(&out.stderr).trim()),
    }
}

/// The numbers `id ARGS` prints (`id -G NAME`: every group of NAME).
fn ids(args: &[&str]) -> Result<Vec<u32>> {
    let out = std::process::Command::new("id").args(args).output().with_context(|| format!("running id {args:?}"))?;
    if !out.status.success() {
        bail!("id {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|n| n.parse().ok()).collect())
}

/// The groups walwatch.service adds (`SupplementaryGroups=adm` in the
/// packaged unit, a drop-in's `postgres`): systemd gives them to the daemon
/// though the group database does not list it there (the rpm adds no
/// membership). Empty without systemd or the unit.
fn unit_groups() -> String {
    let show = std::process::Command::new("systemctl")
        .args(["show", "walwatch.service", "--property=SupplementaryGroups", "--value"])
        .stderr(std::process::Stdio::null())
        .output();
    match show {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        _ => String::new(),
    }
}

/// The gids of the space-separated group `names` (or numbers); unknown
/// names are no group.
fn gids_named(names: &str) -> Result<Vec<u32>> {
    let mut gids = Vec::new();
    for name in names.split_whitespace() {
        let gid = match name.parse::<u32>() {
            Ok(n) => Some(n),
            Err(_) => getent("group", name)?.and_then(|line| line.split(':').nth(2)?.parse().ok()),
        };
        gids.extend(gid);
    }
    Ok(gids)
}

/// (name, uid, gid) of a passwd line.
fn passwd_entry(line: &str) -> Option<(&str, u32, u32)> {
    let mut fields = line.split(':');
    let name = fields.next()?;
    let uid = fields.nth(1)?.parse().ok()?;
    let gid = fields.next()?.parse().ok()?;
    Some((name, uid, gid))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Users and groups come from the system's user database (NSS), as the
    /// daemon's credentials will: root is uid 0 in group 0, a user that is
    /// not there is None, a group number is taken as is.
    #[test]
    fn accounts_and_groups_come_from_the_user_database() {
        let root = lookup("root").unwrap().unwrap();
        assert_eq!((root.uid, root.gid, root.groups[0]), (0, 0, 0));
        assert!(!root.own);
        assert_eq!(lookup("walwatch-no-such-user").unwrap(), None);
        assert_eq!(gids_named("root 5 walwatch-no-such-group\n").unwrap(), vec![0, 5]);
        assert_eq!(gids_named("").unwrap(), Vec::<u32>::new());
        assert_eq!(
            passwd_entry("walwatch:x:998:997::/var/lib/walwatch:/usr/sbin/nologin"),
            Some(("walwatch", 998, 997))
        );
        assert_eq!(passwd_entry("bad line"), None);
        let me = rustix::process::geteuid().as_raw();
        let expected = getent("passwd", &me.to_string()).unwrap().unwrap();
        assert!(expected.starts_with(&format!("{}:", own(me).name)), "{expected}");
    }

    /// As root, a user other than root is refused what only root may read.
    #[test]
    fn another_users_access_is_the_kernels_answer_for_that_user() {
        if rustix::process::geteuid().as_raw() != 0 || lookup("nobody").ok().flatten().is_none() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "x").unwrap();
        std::fs::set_permissions(&secret, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
        let nobody = Account::resolve(Some("nobody")).unwrap();
        assert_eq!(nobody.may_read(&secret).unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        assert!(Account::resolve(None).unwrap().may_read(&secret).is_ok() || lookup(SERVICE_USER).unwrap().is_some());
        // This process keeps its own credentials.
        assert!(std::fs::read(&secret).is_ok());
    }
}
