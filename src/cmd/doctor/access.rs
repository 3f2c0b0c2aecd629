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
    pub name: String,
    uid: u32,
    gid: u32,
    groups: Vec<u32>,
    /// This process's own user: no credentials to take.
    own: bool,
}

impl Account {
    /// `--user`, else as root the `walwatch` user when it exists, else this process's user.
    pub fn resolve(flag: Option<&str>) -> Result<Account> {
        let me = rustix::process::geteuid().as_raw();
        let wanted = match flag {
            Some(name) => Some(name.to_string()),
            None if me == 0 && lookup(SERVICE_USER)?.is_some() => Some(SERVICE_USER.to_string()),
            None => None,
        };
        let Some(name) = wanted else { return Ok(own(me)) };
        let mut account = lookup(&name)?.with_context(|| format!("no user {name:?} in /etc/passwd"))?;
        account.own = account.uid == me;
        if !account.own && me != 0 {
            bail!("only root can check file access for another user ({name}); run doctor as {name}, or as root");
        }
        Ok(account)
    }

    pub fn may_read(&self, path: &Path) -> io::Result<()> {
        self.access(path, Access::READ_OK)
    }

    pub fn may_list(&self, dir: &Path) -> io::Result<()> {
        self.access(dir, Access::READ_OK | Access::EXEC_OK)
    }

    pub fn may_write(&self, path: &Path) -> io::Result<()> {
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

/// This process's user, by name when /etc/passwd has it.
fn own(uid: u32) -> Account {
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let name = passwd_entries(&passwd).find(|e| e.1 == uid).map_or_else(|| format!("uid {uid}"), |e| e.0.to_string());
    Account { name, uid, gid: 0, groups: Vec::new(), own: true }
}

/// The account `name` from /etc/passwd and /etc/group (system users, as the
/// packages create them; directory services are not asked).
fn lookup(name: &str) -> Result<Option<Account>> {
    let passwd = std::fs::read_to_string("/etc/passwd").context("reading /etc/passwd")?;
    let Some((_, uid, gid)) = passwd_entries(&passwd).find(|e| e.0 == name) else { return Ok(None) };
    let group = std::fs::read_to_string("/etc/group").context("reading /etc/group")?;
    let mut groups = groups_of(&group, name, gid);
    if name == SERVICE_USER {
        for g in gids_named(&unit_groups(), &group) {
            if !groups.contains(&g) {
                groups.push(g);
            }
        }
    }
    Ok(Some(Account { name: name.to_string(), uid, gid, groups, own: false }))
}

/// The groups walwatch.service adds (`SupplementaryGroups=adm` in the
/// packaged unit, a drop-in's `postgres`): systemd gives them to the daemon
/// though /etc/group does not list it there (the rpm adds no membership).
/// Empty without systemd or the unit.
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

/// The gids of the space-separated group `names` (or numbers) in /etc/group's `text`.
fn gids_named(names: &str, text: &str) -> Vec<u32> {
    let gid_of = |name: &str| {
        name.parse().ok().or_else(|| {
            let line = text.lines().find(|l| l.split(':').next() == Some(name))?;
            line.split(':').nth(2)?.parse().ok()
        })
    };
    names.split_whitespace().filter_map(gid_of).collect()
}

/// (name, uid, gid) of each well-formed line of /etc/passwd.
fn passwd_entries(text: &str) -> impl Iterator<Item = (&str, u32, u32)> {
    text.lines().filter_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let uid = fields.nth(1)?.parse().ok()?;
        let gid = fields.next()?.parse().ok()?;
        Some((name, uid, gid))
    })
}

/// The primary group and every group of /etc/group listing `user` as a member.
fn groups_of(text: &str, user: &str, primary: u32) -> Vec<u32> {
    let mut groups = vec![primary];
    for line in text.lines() {
        let fields: Vec<&str> = line.split(':').collect();
        let (Some(gid), Some(members)) = (fields.get(2).and_then(|g| g.parse().ok()), fields.get(3)) else { continue };
        if members.split(',').any(|m| m.trim() == user) && !groups.contains(&gid) {
            groups.push(gid);
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_the_primary_and_those_listing_the_user() {
        let group = "root:x:0:\nadm:x:4:syslog,walwatch\npostgres:x:110:\nbad line\nssl-cert:x:111:postgres,walwatch\n";
        assert_eq!(groups_of(group, "walwatch", 998), vec![998, 4, 111]);
        assert_eq!(groups_of(group, "postgres", 110), vec![110, 111]);
        let passwd = "root:x:0:0:root:/root:/bin/bash\nwalwatch:x:998:998::/var/lib/walwatch:/usr/sbin/nologin\n";
        let entries: Vec<_> = passwd_entries(passwd).collect();
        assert_eq!(entries, vec![("root", 0, 0), ("walwatch", 998, 998)]);
        // The unit's SupplementaryGroups=, by name or number; unknown names are no group.
        assert_eq!(gids_named("adm postgres 5 nosuch\n", group), vec![4, 110, 5]);
        assert_eq!(gids_named("", group), Vec::<u32>::new());
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
