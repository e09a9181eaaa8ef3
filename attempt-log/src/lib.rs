//! The attempt log on disk: where `runner run`, `reproduce`, campaign cells and `register`
//! count every attempt a signing key makes, so that a result that was dropped still shows.
//!
//! A log is a directory:
//!
//! ```text
//! entries       one entry a line, compact JSON (schemas::document::attempt::Entry); append-only
//! hashes/L      the Merkle tree's full subtrees of 2^L leaves (tree.rs)
//! checkpoint    the latest checkpoint, a C2SP signed note by the key, named by the log's origin
//! state.json    the entries committed (count and bytes) and the registrations still open
//! vkey          the note verifier key of the log (origin+id+key), for readers
//! lock          held (flock) by whoever appends
//! ```
//!
//! An append takes the lock, finishes whatever a crashed append left (an entry written but
//! not committed is committed; a partial line is cut off), closes registrations whose process
//! is gone, writes and syncs the entry, adds its hashes, signs the new checkpoint and writes
//! it and the state, each through a synced temporary file and a rename. A reader trusts
//! nothing but the entries and the signed checkpoint ([`read`]); [`rebuild`] recomputes
//! what is derived from the entries.

mod tree;

use anyhow::{anyhow, bail, Context, Result};
use ed25519_dalek::{SigningKey, VerifyingKey};
use schemas::attempts;
use schemas::document::attempt::{AttemptOutcome, Entry, LogPlace, Registration, Status};
use schemas::tlog::checkpoint::Checkpoint;
use schemas::tlog::merkle::{self, Hash};
use schemas::tlog::note::Note;
use serde::{Deserialize, Serialize};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::time::SystemTime;
use tree::Tree;

/// What the log has committed, and which registrations are still open.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct State {
    size: u64,
    bytes: u64,
    open: Vec<Open>,
}

/// An open registration: its index and the process that should close it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Open {
    index: u64,
    host: String,
    pid: Option<u32>,
    process_start: Option<u64>,
    #[serde(default)]
    boot_id: Option<String>,
}

impl Open {
    /// Registration `r`, logged as entry `index`.
    fn of(index: u64, r: &Registration) -> Open {
        Open {
            index,
            host: r.host.clone(),
            pid: r.pid,
            process_start: r.process_start,
            boot_id: r.boot_id.clone(),
        }
    }
}

/// A signing key's attempt log, ready to append to.
pub struct Log {
    dir: PathBuf,
    key: SigningKey,
    origin: String,
}

/// The exclusive lock on a log, released when dropped.
struct Locked(#[allow(dead_code)] File);

impl Log {
    /// The log in `dir` (created if it is not there) kept by `key`. A directory holding
    /// another key's log is refused.
    pub fn open(dir: &Path, key: &SigningKey) -> Result<Log> {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the attempt log {}", dir.display()))?;
        let origin = attempts::origin(&key.verifying_key());
        let vkey = attempts::verifier(&origin, &key.verifying_key())
            .map_err(|e| anyhow!(e))?
            .vkey();
        let at = dir.join("vkey");
        match std::fs::read_to_string(&at) {
            Ok(found) if found.trim() == vkey => {}
            Ok(found) => bail!(
                "{} is the attempt log of another key ({}); this key keeps {origin}",
                dir.display(),
                found.trim()
            ),
            Err(_) => write_atomically(&at, format!("{vkey}\n").as_bytes())?,
        }
        Ok(Log {
            dir: dir.to_path_buf(),
            key: key.clone(),
            origin,
        })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn lock(&self) -> Result<Locked> {
        let path = self.dir.join("lock");
        let f = open_for_writing(&path)?;
        // SAFETY: flock on a descriptor this function owns.
        if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX) } != 0 {
            bail!(
                "locking {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        Ok(Locked(f))
    }

    /// Logs `registration` (closing first any open registration whose process is gone) and
    /// returns its place: index, the entry, the checkpoint just signed and the proof. A
    /// registration that names its process (`pid`, `process_start`) is closed by a later
    /// append once that process is gone; one without (a plan) is not.
    pub fn register(&self, registration: Registration) -> Result<LogPlace> {
        let _lock = self.lock()?;
        let tree = Tree::new(&self.dir)?;
        let mut st = self.recover(&tree)?;
        self.close_the_dead(&tree, &mut st, None)?;
        let open = Open::of(st.size, &registration);
        let entry = Entry::Registration(registration);
        let line = attempts::entry_line(&entry);
        let index = self.append(&tree, &mut st, &line)?;
        st.open.push(open);
        let checkpoint = self.commit(&tree, &st)?;
        let proof = merkle::inclusion_proof_in(&tree, index, st.size)?
            .expect("the entry just appended is in the tree");
        Ok(LogPlace {
            origin: self.origin.clone(),
            index,
            entry: line,
            checkpoint,
            proof: proof.iter().map(hex::encode).collect(),
        })
    }

    /// Logs `outcome`, which closes its registration; returns the outcome's index. A
    /// registration already closed (a later append found its process gone) is left as it
    /// is: `Ok(None)`.
    pub fn close(&self, outcome: AttemptOutcome) -> Result<Option<u64>> {
        let _lock = self.lock()?;
        let tree = Tree::new(&self.dir)?;
        let mut st = self.recover(&tree)?;
        if !st.open.iter().any(|o| o.index == outcome.registration) {
            if outcome.registration >= st.size {
                bail!(
                    "{}: there is no entry {} to close",
                    self.dir.display(),
                    outcome.registration
                );
            }
            return Ok(None);
        }
        self.close_the_dead(&tree, &mut st, Some(outcome.registration))?;
        let index = self.close_locked(&tree, &mut st, &outcome)?;
        self.commit(&tree, &st)?;
        Ok(Some(index))
    }

    fn close_locked(&self, tree: &Tree, st: &mut State, outcome: &AttemptOutcome) -> Result<u64> {
        let line = attempts::entry_line(&Entry::Outcome(outcome.clone()));
        let index = self.append(tree, st, &line)?;
        st.open.retain(|o| o.index != outcome.registration);
        Ok(index)
    }

    /// Registrations of this host whose process has ended without an outcome get one:
    /// killed, closed by this append (`but`, the one this append closes itself, aside).
    fn close_the_dead(&self, tree: &Tree, st: &mut State, but: Option<u64>) -> Result<()> {
        let (here, boot) = (hostname(), boot_id());
        let dead: Vec<Open> = st
            .open
            .iter()
            .filter(|o| {
                Some(o.index) != but
                    && o.host == here
                    && (o.boot_id.is_none() || o.boot_id == boot)
                    && o.pid.is_some_and(|pid| {
                        o.process_start.is_none() || process_start(pid) != o.process_start
                    })
            })
            .cloned()
            .collect();
        for o in dead {
            let mut outcome = AttemptOutcome::closing(o.index, Status::Killed, "append", now());
            outcome.reason = Some(format!(
                "its process ({}) ended without logging how the attempt ended",
                o.pid.unwrap_or_default()
            ));
            tracing::warn!(
                registration = o.index,
                "closing an attempt whose process is gone"
            );
            self.close_locked(tree, st, &outcome)?;
        }
        Ok(())
    }

    /// Writes `line` as entry `st.size` and syncs it, then adds its hashes.
    fn append(&self, tree: &Tree, st: &mut State, line: &str) -> Result<u64> {
        debug_assert!(!line.contains('\n'));
        let path = self.dir.join("entries");
        let f = open_for_writing(&path)?;
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        f.write_all_at(&bytes, st.bytes)
            .and_then(|_| f.sync_data())
            .with_context(|| format!("appending to {}", path.display()))?;
        let index = st.size;
        tree.add(index, merkle::leaf_hash(line.as_bytes()))?;
        st.size += 1;
        st.bytes += bytes.len() as u64;
        Ok(index)
    }

    /// Signs the checkpoint of `st.size` entries and writes it, then the state. Returns the
    /// checkpoint note.
    fn commit(&self, tree: &Tree, st: &State) -> Result<String> {
        let body = Checkpoint {
            origin: self.origin.clone(),
            size: st.size,
            root: tree.root(st.size)?,
        }
        .body();
        let note = Note::sign(&body, &self.origin, &self.key)
            .map_err(|e| anyhow!("signing the checkpoint: {e}"))?
            .to_text();
        write_atomically(&self.dir.join("checkpoint"), note.as_bytes())?;
        let state = serde_json::to_vec(st).expect("the state serialises");
        write_atomically(&self.dir.join("state.json"), &state)?;
        Ok(note)
    }

    /// The committed state, with whatever a crashed append left finished: complete entries
    /// past the state are committed, a partial last line is cut off, and the tree of the last
    /// signed checkpoint must still be a prefix of the entries.
    fn recover(&self, tree: &Tree) -> Result<State> {
        let state_path = self.dir.join("state.json");
        let mut st: State = match std::fs::read(&state_path) {
            Ok(b) => serde_json::from_slice(&b)
                .with_context(|| format!("reading {}", state_path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            Err(e) => return Err(e).with_context(|| format!("reading {}", state_path.display())),
        };
        let path = self.dir.join("entries");
        let len = std::fs::metadata(&path).map_or(0, |m| m.len());
        if len == st.bytes {
            return Ok(st);
        }
        if len < st.bytes {
            bail!(
                "{}: {len} bytes, but {} were committed: the log was cut short or rewritten",
                path.display(),
                st.bytes
            );
        }
        let f = File::open(&path).with_context(|| format!("opening {}", path.display()))?;
        let mut tail = vec![0u8; (len - st.bytes) as usize];
        f.read_exact_at(&mut tail, st.bytes)
            .with_context(|| format!("reading {}", path.display()))?;
        let mut recovered = 0;
        let mut rest = &tail[..];
        while let Some(end) = rest.iter().position(|&b| b == b'\n') {
            let line = std::str::from_utf8(&rest[..end])
                .map_err(|_| anyhow!("{}: entry {} is not UTF-8", path.display(), st.size))?;
            let entry: Entry = serde_json::from_str(line)
                .with_context(|| format!("{}: entry {}", path.display(), st.size))?;
            match entry {
                Entry::Registration(r) => st.open.push(Open::of(st.size, &r)),
                Entry::Outcome(o) => st.open.retain(|x| x.index != o.registration),
            }
            tree.add(st.size, merkle::leaf_hash(line.as_bytes()))?;
            st.size += 1;
            st.bytes += end as u64 + 1;
            recovered += 1;
            rest = &rest[end + 1..];
        }
        if !rest.is_empty() {
            tracing::warn!(bytes = rest.len(), log = %self.dir.display(), "cutting off an entry an interrupted append left half-written");
            OpenOptions::new()
                .write(true)
                .open(&path)
                .and_then(|f| f.set_len(st.bytes))
                .with_context(|| format!("truncating {}", path.display()))?;
        }
        if let Ok(note) = std::fs::read_to_string(self.dir.join("checkpoint")) {
            let verifier = attempts::verifier(&self.origin, &self.key.verifying_key())
                .map_err(|e| anyhow!(e))?;
            let old = attempts::read_checkpoint(&note, Some(&verifier)).map_err(|e| anyhow!(e))?;
            if old.size > st.size || tree.root(old.size)? != old.root {
                bail!(
                    "{}: the entries no longer hold the tree of its last checkpoint ({} entries)",
                    self.dir.display(),
                    old.size
                );
            }
        }
        if recovered > 0 {
            tracing::warn!(recovered, log = %self.dir.display(), "committing entries an interrupted append wrote");
            self.commit(tree, &st)?;
        }
        Ok(st)
    }
}

/// A log as a reader sees it: the latest checkpoint and the entries it covers.
#[derive(Debug)]
pub struct Snapshot {
    pub note: String,
    pub checkpoint: Checkpoint,
    /// The first `checkpoint.size` entries, each without its newline.
    pub entries: Vec<String>,
    /// The log's verifier key as the directory names it (trust it only if it is the key's).
    pub vkey: String,
}

impl Snapshot {
    /// Every entry's leaf hash, in order.
    pub fn leaves(&self) -> Vec<Hash> {
        self.entries
            .iter()
            .map(|e| merkle::leaf_hash(e.as_bytes()))
            .collect()
    }
}

/// Reads the log in `dir` as its checkpoint covers it, checking the checkpoint's signature
/// against `key` (else against the directory's own `vkey`) and that the entries give its
/// root. Entries past the checkpoint (an append in progress) are not read.
pub fn read(dir: &Path, key: Option<&VerifyingKey>) -> Result<Snapshot> {
    let at = |name: &str| dir.join(name);
    let vkey = std::fs::read_to_string(at("vkey"))
        .with_context(|| format!("{} is not an attempt log (no vkey)", dir.display()))?;
    let vkey = vkey.trim().to_string();
    let own = schemas::tlog::note::Verifier::parse(&vkey)
        .map_err(|e| anyhow!("{}: {e}", at("vkey").display()))?;
    let verifier = match key {
        Some(k) => {
            let v = attempts::verifier(&attempts::origin(k), k).map_err(|e| anyhow!(e))?;
            if v != own {
                bail!(
                    "{} is not the log of this key: it names {}, the key keeps {}",
                    dir.display(),
                    own.name,
                    v.name
                );
            }
            v
        }
        None => own,
    };
    let note = std::fs::read_to_string(at("checkpoint"))
        .with_context(|| format!("reading {}", at("checkpoint").display()))?;
    let checkpoint = attempts::read_checkpoint(&note, Some(&verifier))
        .map_err(|e| anyhow!("{}: {e}", at("checkpoint").display()))?;
    let text = std::fs::read_to_string(at("entries"))
        .with_context(|| format!("reading {}", at("entries").display()))?;
    let entries: Vec<String> = text
        .split_inclusive('\n')
        .filter(|l| l.ends_with('\n'))
        .take(checkpoint.size as usize)
        .map(|l| l.trim_end_matches('\n').to_string())
        .collect();
    if (entries.len() as u64) < checkpoint.size {
        bail!(
            "{}: {} entries, but its checkpoint counts {}",
            at("entries").display(),
            entries.len(),
            checkpoint.size
        );
    }
    let snapshot = Snapshot {
        note,
        checkpoint,
        entries,
        vkey,
    };
    if merkle::root(&snapshot.leaves()) != snapshot.checkpoint.root {
        bail!(
            "{}: the entries do not give the root of its signed checkpoint of {} entries (an entry was edited or dropped)",
            dir.display(),
            snapshot.checkpoint.size
        );
    }
    Ok(snapshot)
}

/// The log's stored tree, recomputed from its entries (after a machine crash lost a hash
/// file's last writes): the hash files and the state are rewritten under the lock.
pub fn rebuild(dir: &Path, key: &SigningKey) -> Result<()> {
    let log = Log::open(dir, key)?;
    let _lock = log.lock()?;
    let _ = std::fs::remove_file(dir.join("state.json"));
    let _ = std::fs::remove_dir_all(dir.join("hashes"));
    let tree = Tree::new(dir)?;
    let st = log.recover(&tree)?;
    log.commit(&tree, &st)?;
    Ok(())
}

/// The default log of a key file: `NAME.attempts/` beside `NAME.key`.
pub fn beside_key(key_file: &Path) -> PathBuf {
    let stem = key_file
        .file_stem()
        .map_or_else(|| "key".into(), |s| s.to_string_lossy().into_owned());
    key_file.with_file_name(format!("{stem}.attempts"))
}

/// Now, as entries write times: RFC 3339 UTC to the millisecond.
pub fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// This machine's host name.
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into())
}

/// This boot of the machine: `/proc/sys/kernel/random/boot_id`.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|b| b.trim().to_string())
}

/// When process `pid` started (clock ticks since boot, `/proc/PID/stat` field 22): with
/// the pid, what tells a live process from a later one that reused its id.
pub fn process_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 2..];
    after_name.split(' ').nth(19)?.parse().ok()
}

/// `path` opened for writing where one chooses (created if missing, never truncated).
fn open_for_writing(path: &Path) -> Result<File> {
    OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("opening {}", path.display()))
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let tmp = dir.join(format!(
        ".{}.{}.{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    ));
    let mut f = File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))
}
