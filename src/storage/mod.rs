//! Where a LocalStore's bytes live: a local directory or an object-store prefix.
//!
//! Everything is addressed by paths relative to the store root. Paths found in
//! metadata may also be absolute (`file:///…`, `/abs/path`, `s3://…`), as a real
//! Fluss cluster writes them; [`Storage::locate`] resolves both forms.
//!
//! Local roots additionally support in-place append and truncate (the active log
//! segment); object stores have immutable objects, so the log writer rolls a new
//! segment per append there instead.

mod faults;
mod local;
mod lock;
pub mod registry;
pub mod remote;

use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::TryStreamExt;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use url::Url;

pub use self::faults::{FaultInjector, IoStep};
use self::local::Steps;
pub use self::lock::{WRITER_LOCK_FILE, WriterLock};
use crate::error::{Error, ErrorKind, Result};

/// A store root plus the object store that holds it.
#[derive(Debug, Clone)]
pub struct Storage {
    store: Arc<dyn ObjectStore>,
    root: ObjectPath,
    local_root: Option<PathBuf>,
    display_root: String,
    faults: Option<Arc<FaultInjector>>,
}

impl Storage {
    /// Whether `location` has entries under `dir`, looked at without creating
    /// anything (as [`Storage::open`] creates a local root): false for a location that
    /// does not exist, the error [`Storage::open`] gives for one that cannot be a root.
    pub async fn has_entries_at(location: &str, dir: &str) -> Result<bool> {
        let Some(local) = local_path_of(location) else {
            return Ok(!Self::open(location)?.list_dir(dir).await?.is_empty());
        };
        if std::fs::symlink_metadata(&local).is_ok() && !local.is_dir() {
            // a file or a broken link: named as opening it names it
            Self::open(location)?;
        }
        Ok(std::fs::read_dir(local.join(dir)).is_ok_and(|mut entries| entries.next().is_some()))
    }

    /// Opens `location`: a local path (created if missing) or an object-store URL.
    pub fn open(location: &str) -> Result<Self> {
        if let Some(local) = local_path_of(location) {
            if let Ok(meta) = std::fs::symlink_metadata(&local) {
                let what = if meta.is_file() {
                    Some("is a file, not a directory")
                } else if meta.file_type().is_symlink() && std::fs::metadata(&local).is_err() {
                    Some("is a symbolic link to something that does not exist")
                } else if meta.file_type().is_symlink()
                    && std::fs::metadata(&local).is_ok_and(|m| !m.is_dir())
                {
                    Some("is a symbolic link to a file, not to a directory")
                } else {
                    None
                };
                if let Some(what) = what {
                    return Err(Error::invalid_input(format!("the store location {what}"))
                        .with_context("path", local.display()));
                }
            }
            std::fs::create_dir_all(&local).map_err(|e| {
                Error::new(ErrorKind::Io, "cannot create the store directory")
                    .with_context("path", local.display())
                    .with_source(e)
            })?;
            let local = local.canonicalize().map_err(|e| {
                Error::new(ErrorKind::Io, "cannot resolve the store directory")
                    .with_context("path", local.display())
                    .with_source(e)
            })?;
            let store = LocalFileSystem::new_with_prefix(&local)?;
            return Ok(Self {
                store: Arc::new(store),
                root: ObjectPath::default(),
                display_root: local.display().to_string(),
                local_root: Some(local),
                faults: None,
            });
        }
        Url::parse(location).map_err(|e| {
            Error::invalid_input("store location is neither a path nor a URL")
                .with_context("location", redact(location))
                .with_source(e)
        })?;
        let (store, root) = remote::remote_store(location, &std::collections::HashMap::new())?;
        Ok(Self {
            store,
            root,
            local_root: None,
            display_root: redact(location),
            faults: None,
        })
    }

    /// The same root with every durable write step passing `faults` first (crash
    /// tests).
    pub fn with_faults(mut self, faults: Arc<FaultInjector>) -> Self {
        self.faults = Some(faults);
        self
    }

    fn steps<'a>(&'a self, name: &'a str) -> Steps<'a> {
        Steps {
            faults: self.faults.as_deref(),
            name,
        }
    }

    fn check(&self, step: IoStep, name: &str) -> Result<()> {
        match &self.faults {
            Some(f) => f.check(step, name),
            None => Ok(()),
        }
    }

    /// Takes the store's writer lock, waiting up to `timeout` for another writer.
    pub async fn lock_writer(&self, timeout: Duration) -> Result<WriterLock> {
        match &self.local_root {
            Some(root) => lock::lock_file(&root.join(WRITER_LOCK_FILE), timeout).await,
            None => {
                let path = self.child(WRITER_LOCK_FILE)?;
                lock::lock_object(self.store.clone(), path, timeout).await
            }
        }
    }

    /// The root as shown to users (credentials removed).
    pub fn display_root(&self) -> &str {
        &self.display_root
    }

    /// The local directory of the root, when the store is on the local file system.
    pub fn local_root(&self) -> Option<&FsPath> {
        self.local_root.as_deref()
    }

    /// Whether files can be appended to in place.
    pub fn supports_append(&self) -> bool {
        self.local_root.is_some()
    }

    /// The object store behind the root (for DataFusion's object-store registry).
    pub fn object_store(&self) -> Arc<dyn ObjectStore> {
        self.store.clone()
    }

    fn child(&self, relative: &str) -> Result<ObjectPath> {
        let mut path = self.root.clone();
        for part in relative.split('/').filter(|p| !p.is_empty()) {
            if part == "." || part == ".." {
                return Err(Error::invalid_input("path escapes the store root")
                    .with_context("path", relative));
            }
            path = path.clone().join(part);
        }
        Ok(path)
    }

    /// Resolves a relative or absolute path to a store and an object path.
    pub fn locate(&self, path: &str) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
        if is_absolute(path) {
            if let Some(local) = local_path_of(path) {
                let object = ObjectPath::from_filesystem_path(&local).map_err(|e| {
                    Error::invalid_input("invalid local path")
                        .with_context("path", path)
                        .with_source(e)
                })?;
                return Ok((Arc::new(LocalFileSystem::new()), object));
            }
            return remote::remote_store(path, &std::collections::HashMap::new());
        }
        Ok((self.store.clone(), self.child(path)?))
    }

    /// The local file-system path of `path` (relative to the root or absolute), if local.
    pub fn local_path(&self, path: &str) -> Option<PathBuf> {
        if is_absolute(path) {
            return local_path_of(path);
        }
        self.local_root.as_ref().map(|root| {
            let mut p = root.clone();
            for part in path.split('/').filter(|p| !p.is_empty()) {
                p.push(part);
            }
            p
        })
    }

    /// An absolute location for `path`, for libraries that take paths (lake crates).
    pub fn absolute(&self, path: &str) -> String {
        if is_absolute(path) {
            return path.to_string();
        }
        match self.local_path(path) {
            Some(local) => local.display().to_string(),
            None => format!("{}/{}", self.display_root.trim_end_matches('/'), path),
        }
    }

    /// The local file of a relative `path` under a local root (validated like every
    /// other path). Small reads, sizes and listings of such files go straight to the
    /// file system: through `object_store` each is a hop to a blocking thread, and a
    /// query's planning makes a dozen of them (metadata JSON, per-bucket log ends).
    fn direct_local(&self, path: &str) -> Result<Option<PathBuf>> {
        if self.local_root.is_none() || is_absolute(path) {
            return Ok(None);
        }
        self.child(path)?;
        Ok(self.local_path(path))
    }

    /// The local file a write to `path` goes to: a relative path under a local root
    /// (validated: it cannot leave the root) or an absolute local path from
    /// metadata; `None` for object stores.
    fn writable_local(&self, path: &str) -> Result<Option<PathBuf>> {
        if is_absolute(path) {
            return Ok(local_path_of(path));
        }
        if self.local_root.is_none() {
            return Ok(None);
        }
        self.child(path)?;
        Ok(self.local_path(path))
    }

    /// Reads a whole object.
    pub async fn read(&self, path: &str) -> Result<Bytes> {
        if let Some(local) = self.direct_local(path)? {
            let read = || -> std::io::Result<Option<Vec<u8>>> {
                let mut file = std::fs::File::open(&local)?;
                if file.metadata()?.len() > DIRECT_READ_LIMIT {
                    return Ok(None);
                }
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut file, &mut bytes)?;
                Ok(Some(bytes))
            };
            match read() {
                Ok(Some(bytes)) => return Ok(Bytes::from(bytes)),
                Ok(None) => {}
                Err(e) => return Err(Error::from(e).with_context("file", path)),
            }
        }
        let (store, object) = self.locate(path)?;
        let result = store
            .get(&object)
            .await
            .map_err(|e| Error::from(e).with_context("file", path))?;
        result
            .bytes()
            .await
            .map_err(|e| Error::from(e).with_context("file", path))
    }

    /// The local file at `path`, opened for positioned reads, when the store is a
    /// local directory (`None` for object stores): a caller reading many small
    /// pieces of one file (a segment's batch headers) then pays no request per piece.
    pub(crate) fn open_local(&self, path: &str) -> Result<Option<std::fs::File>> {
        let Some(local) = self.direct_local(path)? else {
            return Ok(None);
        };
        std::fs::File::open(&local)
            .map(Some)
            .map_err(|e| Error::from(e).with_context("file", path))
    }

    /// Reads bytes `range` of an object.
    pub async fn read_range(&self, path: &str, range: std::ops::Range<u64>) -> Result<Bytes> {
        if range.end.saturating_sub(range.start) <= DIRECT_READ_LIMIT
            && let Some(local) = self.direct_local(path)?
        {
            let read = || -> std::io::Result<Vec<u8>> {
                use std::io::{Read, Seek, SeekFrom};
                let mut file = std::fs::File::open(&local)?;
                file.seek(SeekFrom::Start(range.start))?;
                let len = range.end.saturating_sub(range.start);
                // read into spare capacity: no zero-fill of a buffer about to be overwritten
                let mut bytes = Vec::with_capacity(len as usize);
                file.take(len).read_to_end(&mut bytes)?;
                if bytes.len() as u64 != len {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!(
                            "range {range:?} ends after the end of the file ({} bytes read)",
                            bytes.len()
                        ),
                    ));
                }
                Ok(bytes)
            };
            return read()
                .map(Bytes::from)
                .map_err(|e| Error::from(e).with_context("file", path));
        }
        let (store, object) = self.locate(path)?;
        store
            .get_range(&object, range)
            .await
            .map_err(|e| Error::from(e).with_context("file", path))
    }

    /// Size of an object in bytes.
    pub async fn size(&self, path: &str) -> Result<u64> {
        if let Some(local) = self.direct_local(path)? {
            return std::fs::metadata(&local)
                .map(|m| m.len())
                .map_err(|e| Error::from(e).with_context("file", path));
        }
        let (store, object) = self.locate(path)?;
        Ok(store
            .head(&object)
            .await
            .map_err(|e| Error::from(e).with_context("file", path))?
            .size)
    }

    /// Reads a whole object, `None` if it does not exist.
    pub async fn read_optional(&self, path: &str) -> Result<Option<Bytes>> {
        match self.read(path).await {
            Ok(b) => Ok(Some(b)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Writes a whole object atomically and durably: a reader sees the old or the new
    /// content, never a mix, and the new content survives a crash once this returns
    /// (object stores replace atomically; local files are staged, fsynced, renamed and
    /// their directory fsynced).
    pub async fn put_atomic(&self, path: &str, bytes: Bytes) -> Result<()> {
        if let Some(local) = self.writable_local(path)? {
            return local::write_atomic(&local, &bytes, self.steps(path));
        }
        self.check(IoStep::Write, path)?;
        let (store, object) = self.locate(path)?;
        store
            .put(&object, PutPayload::from_bytes(bytes))
            .await
            .map_err(|e| Error::from(e).with_context("file", path))?;
        Ok(())
    }

    /// Appends to a local file, creating it if needed; the bytes are fsynced.
    pub async fn append(&self, path: &str, bytes: &[u8]) -> Result<()> {
        let local = self.writable_local(path)?.ok_or_else(|| {
            Error::unsupported("append needs a local store").with_context("file", path)
        })?;
        local::append(&local, bytes, self.steps(path))
    }

    /// Truncates a local file to `len` bytes (drops a torn batch), durably.
    pub async fn truncate(&self, path: &str, len: u64) -> Result<()> {
        let local = self.writable_local(path)?.ok_or_else(|| {
            Error::unsupported("truncate needs a local store").with_context("file", path)
        })?;
        local::truncate(&local, len, self.steps(path))
    }

    /// Names of the immediate children (files and directories) of a directory; a
    /// missing directory has none (as in an object store).
    pub async fn list_dir(&self, path: &str) -> Result<Vec<String>> {
        if let Some(local) = self.direct_local(path)? {
            let entries = match std::fs::read_dir(&local) {
                Ok(entries) => entries,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
                Err(e) => return Err(Error::from(e).with_context("dir", path)),
            };
            let mut names = Vec::new();
            for entry in entries {
                let entry = entry.map_err(|e| Error::from(e).with_context("dir", path))?;
                // Skip what object_store's listing skips: non-UTF-8 names and the
                // staging files of in-flight atomic writes (`name#123`).
                if let Some(name) = entry.file_name().to_str()
                    && !name.contains('#')
                {
                    names.push(name.to_string());
                }
            }
            names.sort();
            return Ok(names);
        }
        let (store, object) = self.locate(path)?;
        let listing = store
            .list_with_delimiter(Some(&object))
            .await
            .map_err(|e| Error::from(e).with_context("dir", path))?;
        let mut names: Vec<String> = listing
            .common_prefixes
            .iter()
            .filter_map(|p| p.filename().map(str::to_string))
            .chain(
                listing
                    .objects
                    .iter()
                    .filter_map(|m| m.location.filename().map(str::to_string)),
            )
            .collect();
        names.sort();
        names.dedup();
        Ok(names)
    }

    /// Deletes an object; missing objects are fine.
    pub async fn delete(&self, path: &str) -> Result<()> {
        if let Some(local) = self.writable_local(path)? {
            return local::remove_file(&local, self.steps(path));
        }
        self.check(IoStep::Delete, path)?;
        let (store, object) = self.locate(path)?;
        match store.delete(&object).await {
            Ok(()) => Ok(()),
            Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(Error::from(e).with_context("file", path)),
        }
    }

    /// Deletes every object under a directory.
    pub async fn delete_dir(&self, path: &str) -> Result<()> {
        if let Some(local) = self.writable_local(path)? {
            return local::remove_dir_all(&local, self.steps(path));
        }
        self.check(IoStep::Delete, path)?;
        let (store, object) = self.locate(path)?;
        let objects: Vec<_> = store.list(Some(&object)).try_collect().await?;
        for meta in objects {
            store.delete(&meta.location).await?;
        }
        Ok(())
    }
}

/// Largest read served straight from the local file system inside the async task
/// (metadata files, log ends, tail ranges); larger reads go through `object_store`,
/// which moves them to a blocking thread.
const DIRECT_READ_LIMIT: u64 = 1 << 20;

/// Whether a location is an absolute path or a URL (else it is relative to a root).
/// `file:/abs/path` is a URL too: Fluss writes local paths that way (Hadoop's
/// `Path.toString` drops the empty authority), e.g. the offsets files of
/// `laketable` znodes.
pub(crate) fn is_absolute(path: &str) -> bool {
    path.starts_with('/') || path.contains("://") || path.starts_with("file:")
}

/// The local path named by `location`, if it is a plain path or a `file:` URL
/// (`file:///abs`, `file:/abs`).
fn local_path_of(location: &str) -> Option<PathBuf> {
    if location.starts_with("file:") {
        return Url::parse(location)
            .ok()
            .and_then(|u| u.to_file_path().ok());
    }
    if location.contains("://") {
        return None;
    }
    Some(PathBuf::from(location))
}

/// Removes `user:password@` from a URL so it can be shown in errors and logs.
pub fn redact(location: &str) -> String {
    match Url::parse(location) {
        Ok(mut url) if !url.username().is_empty() || url.password().is_some() => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        _ => location.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_urls_name_local_paths_with_or_without_an_authority() {
        for location in [
            "file:///tmp/a/b.offsets",
            "file:/tmp/a/b.offsets",
            "/tmp/a/b.offsets",
        ] {
            assert!(is_absolute(location), "{location}");
            assert_eq!(
                local_path_of(location),
                Some(PathBuf::from("/tmp/a/b.offsets")),
                "{location}"
            );
        }
        assert!(!is_absolute("remote/lake/x.offsets"));
    }

    #[test]
    fn redacts_credentials() {
        assert_eq!(redact("s3://key:secret@bucket/x"), "s3://bucket/x");
        assert_eq!(redact("/tmp/x"), "/tmp/x");
    }

    #[tokio::test]
    async fn writes_are_fsynced_where_they_claim_durability() {
        let dir = tempfile::tempdir().unwrap();
        let faults = Arc::new(FaultInjector::failing_at(0));
        let storage = Storage::open(dir.path().to_str().unwrap())
            .unwrap()
            .with_faults(faults.clone());
        let steps =
            |from: usize| -> Vec<IoStep> { faults.log()[from..].iter().map(|(s, _)| *s).collect() };
        storage
            .put_atomic("a/b.json", Bytes::from_static(b"{}"))
            .await
            .unwrap();
        // new directory (its parent fsynced), staged file written + fsynced, renamed,
        // directory fsynced
        use IoStep::*;
        assert_eq!(steps(0), vec![Write, Sync, Write, Sync, Rename, Sync]);
        let n = faults.steps();
        storage
            .put_atomic("a/b.json", Bytes::from_static(b"[]"))
            .await
            .unwrap();
        assert_eq!(steps(n), vec![Write, Sync, Rename, Sync]);
        let n = faults.steps();
        storage.append("a/log", b"12").await.unwrap();
        assert_eq!(
            steps(n),
            vec![Write, Sync, Sync],
            "a new file's directory is fsynced"
        );
        let n = faults.steps();
        storage.append("a/log", b"34").await.unwrap();
        assert_eq!(steps(n), vec![Write, Sync]);
        let n = faults.steps();
        storage.truncate("a/log", 1).await.unwrap();
        storage.delete("a/log").await.unwrap();
        assert_eq!(steps(n), vec![Truncate, Sync, Delete, Sync]);
    }

    #[tokio::test]
    async fn a_failed_write_step_leaves_the_old_content() {
        let dir = tempfile::tempdir().unwrap();
        let plain = Storage::open(dir.path().to_str().unwrap()).unwrap();
        plain
            .put_atomic("x.json", Bytes::from_static(b"old"))
            .await
            .unwrap();
        // write, fsync, rename, fsync directory: before the rename the old content
        // stands; after it the new one (only its directory entry is not yet durable)
        for (k, expected) in [(1, b"old"), (2, b"old"), (3, b"old"), (4, b"new")] {
            let storage = plain
                .clone()
                .with_faults(Arc::new(FaultInjector::failing_at(k)));
            assert!(
                storage
                    .put_atomic("x.json", Bytes::from_static(b"new"))
                    .await
                    .is_err()
            );
            assert_eq!(
                plain.read("x.json").await.unwrap().as_ref(),
                expected,
                "step {k}"
            );
            // the staging file a crash leaves is never listed
            assert_eq!(plain.list_dir("").await.unwrap(), vec!["x.json"]);
        }
    }

    #[tokio::test]
    async fn the_writer_lock_is_exclusive_on_files_and_objects() {
        let dir = tempfile::tempdir().unwrap();
        let stores = [
            Storage::open(dir.path().to_str().unwrap()).unwrap(),
            Storage::open("memory:///").unwrap(),
        ];
        for storage in stores {
            let held = storage.lock_writer(Duration::from_secs(1)).await.unwrap();
            let e = storage
                .lock_writer(Duration::from_millis(50))
                .await
                .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Busy);
            assert!(
                e.to_string()
                    .contains(&format!("store is locked by pid {}", std::process::id())),
                "{e}"
            );
            drop(held);
            // released: the next writer gets it (an object lock is removed just after)
            let again = storage.lock_writer(Duration::from_secs(5)).await.unwrap();
            if let Some(previous) = again.previous_generation {
                assert_eq!(again.generation, previous + 1);
            }
        }
    }

    #[test]
    fn a_store_location_that_is_a_file_or_a_dangling_link_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("file");
        std::fs::write(&file, b"x").unwrap();
        let e = Storage::open(file.to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("is a file, not a directory"), "{e}");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path().join("gone"), &link).unwrap();
        let e = Storage::open(link.to_str().unwrap()).unwrap_err();
        assert!(e.to_string().contains("does not exist"), "{e}");
        let to_dir = dir.path().join("to-dir");
        std::os::unix::fs::symlink(dir.path(), &to_dir).unwrap();
        assert!(Storage::open(to_dir.to_str().unwrap()).is_ok());
    }

    #[tokio::test]
    async fn relative_paths_cannot_escape() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Storage::open(dir.path().to_str().unwrap()).unwrap();
        assert!(storage.read("../etc/passwd").await.is_err());
        storage
            .put_atomic("a/b.json", Bytes::from_static(b"{}"))
            .await
            .unwrap();
        assert_eq!(storage.read("a/b.json").await.unwrap().as_ref(), b"{}");
        assert_eq!(storage.list_dir("a").await.unwrap(), vec!["b.json"]);
        assert!(storage.read_optional("a/none").await.unwrap().is_none());
        storage.append("a/log", b"12").await.unwrap();
        storage.append("a/log", b"34").await.unwrap();
        storage.truncate("a/log", 3).await.unwrap();
        assert_eq!(storage.read("a/log").await.unwrap().as_ref(), b"123");
        assert_eq!(
            storage.read_range("a/log", 1..3).await.unwrap().as_ref(),
            b"23"
        );
        assert!(storage.read_range("a/log", 1..9).await.is_err());
        assert_eq!(storage.size("a/log").await.unwrap(), 3);
        assert!(storage.size("../x").await.is_err());
        assert!(storage.list_dir("../").await.is_err());
        assert!(storage.list_dir("missing").await.unwrap().is_empty());
        assert_eq!(storage.list_dir("a").await.unwrap(), vec!["b.json", "log"]);
        let big = Bytes::from(vec![7u8; (DIRECT_READ_LIMIT + 10) as usize]);
        storage.put_atomic("a/big", big.clone()).await.unwrap();
        assert_eq!(storage.read("a/big").await.unwrap(), big);
        let err = storage.read("a/none").await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NotFound);
    }
}
