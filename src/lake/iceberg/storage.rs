//! The `iceberg` crate's file IO over `object_store`, so Iceberg metadata, manifests
//! and delete files on `s3://`, `oss://` and `gs://` are read with the same clients
//! and options as DataFusion reads the data files ([`crate::storage::remote`]).
//!
//! iceberg 0.10.1 ships local and in-memory storage only; its S3 storage lives in
//! `iceberg-storage-opendal`, a third opendal version beside fluss-rs's and paimon's.
//! The crate's [`Storage`] trait is the plug-in point its catalogs take
//! (`CatalogBuilder::with_storage_factory`). Local paths keep its own
//! [`LocalFsStorage`].

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::StreamExt;
use futures::stream::BoxStream;
use iceberg::io::{
    FileMetadata, FileRead, FileWrite, InputFile, LocalFsStorage, OutputFile, Storage,
    StorageConfig, StorageFactory,
};
use iceberg::{Error as IcebergError, ErrorKind as IcebergErrorKind, Result as IcebergResult};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use serde::{Deserialize, Serialize};

use crate::storage::redact;
use crate::storage::remote::{is_remote, remote_store};

/// Makes [`ObjectStorage`]s with the source's storage options, completed by the
/// properties a catalog passes (a REST catalog's vended credentials).
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct ObjectStorageFactory {
    options: HashMap<String, String>,
}

impl ObjectStorageFactory {
    /// A factory for storage configured by `options` (`s3.endpoint`, …).
    pub fn new(options: HashMap<String, String>) -> Self {
        Self { options }
    }
}

impl std::fmt::Debug for ObjectStorageFactory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStorageFactory")
            .finish_non_exhaustive()
    }
}

#[typetag::serde]
impl StorageFactory for ObjectStorageFactory {
    fn build(&self, config: &StorageConfig) -> IcebergResult<Arc<dyn Storage>> {
        let mut options = config.props().clone();
        // The source's own options win over what a catalog suggests.
        options.extend(self.options.clone());
        Ok(Arc::new(ObjectStorage { options }))
    }
}

/// Iceberg file IO: local paths through the crate's own storage, object-store URLs
/// through `object_store`.
#[derive(Clone, Default, Serialize, Deserialize)]
pub struct ObjectStorage {
    options: HashMap<String, String>,
}

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStorage").finish_non_exhaustive()
    }
}

fn io_error(what: &str, path: &str, e: impl std::fmt::Display) -> IcebergError {
    IcebergError::new(
        IcebergErrorKind::Unexpected,
        format!("cannot {what} {}: {e}", redact(path)),
    )
}

impl ObjectStorage {
    fn remote(&self, path: &str) -> IcebergResult<Option<(Arc<dyn ObjectStore>, ObjectPath)>> {
        if !is_remote(path) {
            return Ok(None);
        }
        remote_store(path, &self.options)
            .map(Some)
            .map_err(|e| io_error("open the object store of", path, e))
    }
}

#[async_trait]
#[typetag::serde]
impl Storage for ObjectStorage {
    async fn exists(&self, path: &str) -> IcebergResult<bool> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.exists(path).await;
        };
        match store.head(&object).await {
            Ok(_) => Ok(true),
            Err(object_store::Error::NotFound { .. }) => Ok(false),
            Err(e) => Err(io_error("look up", path, e)),
        }
    }

    async fn metadata(&self, path: &str) -> IcebergResult<FileMetadata> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.metadata(path).await;
        };
        let meta = store
            .head(&object)
            .await
            .map_err(|e| io_error("look up", path, e))?;
        Ok(FileMetadata { size: meta.size })
    }

    async fn read(&self, path: &str) -> IcebergResult<Bytes> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.read(path).await;
        };
        let got = store
            .get(&object)
            .await
            .map_err(|e| io_error("read", path, e))?;
        got.bytes().await.map_err(|e| io_error("read", path, e))
    }

    async fn reader(&self, path: &str) -> IcebergResult<Box<dyn FileRead>> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.reader(path).await;
        };
        Ok(Box::new(ObjectRead {
            store,
            object,
            path: path.to_string(),
        }))
    }

    async fn write(&self, path: &str, bs: Bytes) -> IcebergResult<()> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.write(path, bs).await;
        };
        store
            .put(&object, PutPayload::from(bs))
            .await
            .map(|_| ())
            .map_err(|e| io_error("write", path, e))
    }

    async fn writer(&self, path: &str) -> IcebergResult<Box<dyn FileWrite>> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.writer(path).await;
        };
        Ok(Box::new(ObjectWrite {
            store,
            object,
            path: path.to_string(),
            parts: Some(Vec::new()),
        }))
    }

    async fn delete(&self, path: &str) -> IcebergResult<()> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.delete(path).await;
        };
        match store.delete(&object).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(io_error("delete", path, e)),
        }
    }

    async fn delete_prefix(&self, path: &str) -> IcebergResult<()> {
        let Some((store, object)) = self.remote(path)? else {
            return LocalFsStorage.delete_prefix(path).await;
        };
        let mut listing = store.list(Some(&object));
        while let Some(meta) = listing.next().await {
            let meta = meta.map_err(|e| io_error("list", path, e))?;
            match store.delete(&meta.location).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(io_error("delete", meta.location.as_ref(), e)),
            }
        }
        Ok(())
    }

    async fn delete_stream(&self, mut paths: BoxStream<'static, String>) -> IcebergResult<()> {
        while let Some(path) = paths.next().await {
            self.delete(&path).await?;
        }
        Ok(())
    }

    fn new_input(&self, path: &str) -> IcebergResult<InputFile> {
        Ok(InputFile::new(Arc::new(self.clone()), path.to_string()))
    }

    fn new_output(&self, path: &str) -> IcebergResult<OutputFile> {
        Ok(OutputFile::new(Arc::new(self.clone()), path.to_string()))
    }
}

/// Ranged reads of one object (parquet footers and column chunks, manifests).
struct ObjectRead {
    store: Arc<dyn ObjectStore>,
    object: ObjectPath,
    path: String,
}

#[async_trait]
impl FileRead for ObjectRead {
    async fn read(&self, range: Range<u64>) -> IcebergResult<Bytes> {
        self.store
            .get_range(&self.object, range)
            .await
            .map_err(|e| io_error("read", &self.path, e))
    }
}

/// An object written whole when closed: object stores have no appends, and what
/// the Iceberg crate writes here (metadata, manifests, manifest lists) is small.
struct ObjectWrite {
    store: Arc<dyn ObjectStore>,
    object: ObjectPath,
    path: String,
    parts: Option<Vec<Bytes>>,
}

#[async_trait]
impl FileWrite for ObjectWrite {
    async fn write(&mut self, bs: Bytes) -> IcebergResult<()> {
        let parts = self.parts.as_mut().ok_or_else(|| {
            IcebergError::new(IcebergErrorKind::DataInvalid, "write to a closed file")
        })?;
        parts.push(bs);
        Ok(())
    }

    async fn close(&mut self) -> IcebergResult<()> {
        let parts = self.parts.take().ok_or_else(|| {
            IcebergError::new(IcebergErrorKind::DataInvalid, "file already closed")
        })?;
        let payload: PutPayload = parts.into_iter().collect();
        self.store
            .put(&self.object, payload)
            .await
            .map(|_| ())
            .map_err(|e| io_error("write", &self.path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_factory_never_shows_its_options() {
        let factory = ObjectStorageFactory::new(HashMap::from([(
            "s3.secret-access-key".to_string(),
            "hunter2".to_string(),
        )]));
        assert!(!format!("{factory:?}").contains("hunter2"));
    }

    #[tokio::test]
    async fn local_paths_use_the_crates_own_storage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.json");
        let path = path.to_str().unwrap();
        let storage = ObjectStorage::default();
        storage
            .write(path, Bytes::from_static(b"{}"))
            .await
            .unwrap();
        assert!(storage.exists(path).await.unwrap());
        assert_eq!(storage.read(path).await.unwrap().as_ref(), b"{}");
    }
}
