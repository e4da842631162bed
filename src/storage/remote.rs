//! Object stores for remote locations (`s3://`, `s3a://`, `oss://`, `gs://`), built
//! from the storage options Fluss, Paimon and Iceberg users already write.
//!
//! One option vocabulary serves every reader of a lake: DataFusion's parquet source
//! and the Iceberg crate read through the [`ObjectStore`] made here, the Paimon crate
//! through its own opendal storage, configured from [`paimon_storage_options`]. Keys
//! accepted (first spelling Iceberg's, then Paimon's and Hadoop's):
//!
//! | setting | keys |
//! |---|---|
//! | endpoint | `s3.endpoint`, `fs.s3a.endpoint`; `oss.endpoint`, `fs.oss.endpoint` |
//! | access key | `s3.access-key-id`, `s3.access-key`, `fs.s3a.access.key`; `fs.oss.accessKeyId` |
//! | secret key | `s3.secret-access-key`, `s3.secret-key`, `fs.s3a.secret.key`; `fs.oss.accessKeySecret` |
//! | session token | `s3.session-token`, `s3.session.token` |
//! | region | `s3.region`, `client.region` |
//! | path-style URLs | `s3.path-style-access`, `fs.s3a.path.style.access` |
//!
//! Anything unset falls back to the standard environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_ENDPOINT_URL`, `AWS_REGION`, …;
//! `GOOGLE_SERVICE_ACCOUNT`, …), as the AWS and Google SDKs do. Option values are
//! never part of an error or a `Debug` rendering: they may be credentials.

// Without `s3` most settings below are read only by the Paimon spelling of them.
#![cfg_attr(not(feature = "s3"), allow(dead_code, unused_variables))]

use std::collections::HashMap;
use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};

use object_store::ObjectStore;
#[cfg(feature = "s3")]
use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
#[cfg(feature = "gcs")]
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use url::Url;

use super::redact;
use crate::error::{Error, Result};

/// One storage setting and the option keys that can give it, in order of preference.
struct Setting {
    keys: &'static [&'static str],
    env: &'static [&'static str],
}

const ENDPOINT: Setting = Setting {
    keys: &["s3.endpoint", "fs.s3a.endpoint", "s3a.endpoint"],
    env: &["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL", "AWS_ENDPOINT"],
};
const ACCESS_KEY: Setting = Setting {
    keys: &[
        "s3.access-key-id",
        "s3.access-key",
        "s3.access.key",
        "fs.s3a.access.key",
        "s3a.access.key",
    ],
    env: &["AWS_ACCESS_KEY_ID"],
};
const SECRET_KEY: Setting = Setting {
    keys: &[
        "s3.secret-access-key",
        "s3.secret-key",
        "s3.secret.key",
        "fs.s3a.secret.key",
        "s3a.secret.key",
    ],
    env: &["AWS_SECRET_ACCESS_KEY"],
};
const SESSION_TOKEN: Setting = Setting {
    keys: &[
        "s3.session-token",
        "s3.session.token",
        "fs.s3a.session.token",
    ],
    env: &["AWS_SESSION_TOKEN"],
};
const REGION: Setting = Setting {
    keys: &["s3.region", "client.region", "fs.s3a.endpoint.region"],
    env: &["AWS_REGION", "AWS_DEFAULT_REGION"],
};
const PATH_STYLE: Setting = Setting {
    keys: &["s3.path-style-access", "fs.s3a.path.style.access"],
    env: &[],
};
const OSS_ENDPOINT: Setting = Setting {
    keys: &["oss.endpoint", "fs.oss.endpoint"],
    env: &["OSS_ENDPOINT"],
};
const OSS_ACCESS_KEY: Setting = Setting {
    keys: &["oss.access-key-id", "fs.oss.accessKeyId"],
    env: &["OSS_ACCESS_KEY_ID"],
};
const OSS_SECRET_KEY: Setting = Setting {
    keys: &["oss.access-key-secret", "fs.oss.accessKeySecret"],
    env: &["OSS_ACCESS_KEY_SECRET"],
};

impl Setting {
    /// The value from the options, else from the environment.
    fn value(&self, options: &HashMap<String, String>) -> Option<String> {
        self.keys
            .iter()
            .find_map(|k| options.get(*k).cloned())
            .or_else(|| self.env.iter().find_map(|k| std::env::var(k).ok()))
            .filter(|v| !v.is_empty())
    }
}

/// Whether `location` names an object store rather than a local path.
pub fn is_remote(location: &str) -> bool {
    match location.split_once("://") {
        Some((scheme, _)) => scheme != "file",
        None => false,
    }
}

/// The object store holding `location` and the object path within it: a remote URL
/// through [`remote_store`], a local absolute path (or `file:` URL) through the local
/// file system.
pub fn object_store_at(
    location: &str,
    options: &HashMap<String, String>,
) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
    if is_remote(location) {
        return remote_store(location, options);
    }
    let local = location
        .strip_prefix("file://")
        .or_else(|| location.strip_prefix("file:"))
        .unwrap_or(location);
    let path = ObjectPath::from_absolute_path(local).map_err(|e| {
        Error::invalid_input("not an absolute path or an object-store URL")
            .with_context("location", redact(location))
            .with_source(e)
    })?;
    Ok((Arc::new(LocalFileSystem::new()), path))
}

/// Object stores built so far, by store URL and a hash of the options (never the
/// options themselves): every file of a lake shares one client and its connections.
static STORES: LazyLock<Mutex<StoreCache>> = LazyLock::new(Default::default);

/// Clients by (store URL, options hash).
type StoreCache = HashMap<(String, u64), Arc<dyn ObjectStore>>;

/// The object store holding the remote `location` and the object path within it.
pub fn remote_store(
    location: &str,
    options: &HashMap<String, String>,
) -> Result<(Arc<dyn ObjectStore>, ObjectPath)> {
    let url = Url::parse(location).map_err(|e| {
        Error::invalid_input("invalid object-store URL")
            .with_context("location", redact(location))
            .with_source(e)
    })?;
    let path = ObjectPath::from_url_path(url.path()).map_err(|e| {
        Error::invalid_input("invalid object path")
            .with_context("location", redact(location))
            .with_source(e)
    })?;
    if url.scheme() == "memory" {
        // A fresh store per open, as `object_store::parse_url` makes it (tests, fuzzing).
        return Ok((Arc::new(object_store::memory::InMemory::new()), path));
    }
    let store_url = format!("{}://{}", url.scheme(), url.host_str().unwrap_or_default());
    let key = (store_url.clone(), options_hash(options));
    if let Some(store) = STORES.lock().ok().and_then(|s| s.get(&key).cloned()) {
        return Ok((store, path));
    }
    let store = build(&url, &store_url, options)?;
    if let Ok(mut stores) = STORES.lock() {
        stores.insert(key, store.clone());
    }
    Ok((store, path))
}

fn options_hash(options: &HashMap<String, String>) -> u64 {
    let mut pairs: Vec<_> = options.iter().collect();
    pairs.sort();
    let mut hasher = DefaultHasher::new();
    pairs.hash(&mut hasher);
    hasher.finish()
}

fn build(
    url: &Url,
    store_url: &str,
    options: &HashMap<String, String>,
) -> Result<Arc<dyn ObjectStore>> {
    #[cfg(any(feature = "s3", feature = "gcs"))]
    let failed = |e: object_store::Error| {
        Error::invalid_input("cannot configure the object store")
            .with_context("location", store_url)
            .with_source(e)
    };
    #[cfg(any(feature = "s3", feature = "gcs"))]
    let bucket = url.host_str().unwrap_or_default();
    match url.scheme() {
        #[cfg(feature = "s3")]
        "s3" | "s3a" => {
            let mut builder = AmazonS3Builder::from_env().with_bucket_name(bucket);
            builder = s3_settings(builder, options, &ENDPOINT, &ACCESS_KEY, &SECRET_KEY);
            if let Some(region) = REGION.value(options) {
                builder = builder.with_region(region);
            }
            if let Some(token) = SESSION_TOKEN.value(options) {
                builder = builder.with_token(token);
            }
            if let Some(path_style) = PATH_STYLE.value(options) {
                builder = builder.with_virtual_hosted_style_request(!is_true(&path_style));
            }
            Ok(Arc::new(builder.build().map_err(failed)?))
        }
        // OSS speaks the S3 protocol with virtual-hosted buckets.
        #[cfg(feature = "s3")]
        "oss" => {
            let mut builder = AmazonS3Builder::new()
                .with_bucket_name(bucket)
                .with_virtual_hosted_style_request(true)
                .with_region(REGION.value(options).unwrap_or_else(|| "oss".into()));
            builder = s3_settings(
                builder,
                options,
                &OSS_ENDPOINT,
                &OSS_ACCESS_KEY,
                &OSS_SECRET_KEY,
            );
            Ok(Arc::new(builder.build().map_err(failed)?))
        }
        #[cfg(feature = "gcs")]
        "gs" | "gcs" => {
            let builder = GoogleCloudStorageBuilder::from_env().with_bucket_name(bucket);
            Ok(Arc::new(builder.build().map_err(failed)?))
        }
        #[cfg(not(feature = "s3"))]
        "s3" | "s3a" | "oss" => Err(compiled_out(url.scheme(), "s3", store_url)),
        #[cfg(not(feature = "gcs"))]
        "gs" | "gcs" => Err(compiled_out(url.scheme(), "gcs", store_url)),
        other => Err(Error::unsupported(format!(
            "object stores of scheme '{other}' are not supported (s3, s3a, oss, gs and local files are)"
        ))
        .with_context("location", store_url)),
    }
}

/// A store whose scheme this build was compiled without.
#[cfg(not(all(feature = "s3", feature = "gcs")))]
fn compiled_out(scheme: &str, feature: &str, store_url: &str) -> Error {
    Error::unsupported(format!(
        "object stores of scheme '{scheme}' need fluss-datafusion's `{feature}` feature, \
         which this build was compiled without"
    ))
    .with_context("location", store_url)
}

#[cfg(feature = "s3")]
fn s3_settings(
    mut builder: AmazonS3Builder,
    options: &HashMap<String, String>,
    endpoint: &Setting,
    access_key: &Setting,
    secret_key: &Setting,
) -> AmazonS3Builder {
    if let Some(endpoint) = endpoint.value(options) {
        // MinIO, moto and on-premise stores are often plain HTTP.
        if endpoint.starts_with("http://") {
            builder = builder.with_allow_http(true);
        }
        builder = builder.with_endpoint(endpoint);
    }
    if let Some(key) = access_key.value(options) {
        builder = builder.with_config(AmazonS3ConfigKey::AccessKeyId, key);
    }
    if let Some(secret) = secret_key.value(options) {
        builder = builder.with_config(AmazonS3ConfigKey::SecretAccessKey, secret);
    }
    builder
}

fn is_true(value: &str) -> bool {
    value.eq_ignore_ascii_case("true")
}

/// The storage options in the spelling the Paimon crate's opendal storage reads
/// (`s3.endpoint`, `s3.access-key`, `s3.secret-key`, `s3.region`,
/// `s3.path-style-access`), completed from the other spellings and the environment.
/// Other options pass through unchanged.
pub fn paimon_storage_options(options: &HashMap<String, String>) -> HashMap<String, String> {
    let mut out = options.clone();
    for (key, setting) in [
        ("s3.endpoint", &ENDPOINT),
        ("s3.access-key", &ACCESS_KEY),
        ("s3.secret-key", &SECRET_KEY),
        ("s3.session.token", &SESSION_TOKEN),
        ("s3.region", &REGION),
        ("s3.path-style-access", &PATH_STYLE),
    ] {
        if !out.contains_key(key)
            && let Some(value) = setting.value(options)
        {
            out.insert(key.to_string(), value);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_locations_are_those_with_a_non_file_scheme() {
        assert!(is_remote("s3://bucket/wh"));
        assert!(is_remote("gs://bucket/wh"));
        assert!(!is_remote("file:///tmp/wh"));
        assert!(!is_remote("/tmp/wh"));
    }

    #[test]
    fn paimon_options_are_completed_from_the_iceberg_spelling() {
        let options = HashMap::from([
            ("s3.access-key-id".to_string(), "AK".to_string()),
            ("s3.secret-access-key".to_string(), "SK".to_string()),
            ("s3.endpoint".to_string(), "http://127.0.0.1:9".to_string()),
        ]);
        let paimon = paimon_storage_options(&options);
        assert_eq!(paimon["s3.access-key"], "AK");
        assert_eq!(paimon["s3.secret-key"], "SK");
        assert_eq!(paimon["s3.endpoint"], "http://127.0.0.1:9");
    }

    #[test]
    fn a_store_error_never_shows_option_values() {
        let options = HashMap::from([("s3.secret-access-key".to_string(), "hunter2".to_string())]);
        let e = remote_store("ftp://host/x", &options).unwrap_err();
        let shown = format!("{e} {e:?}");
        assert!(!shown.contains("hunter2"), "{shown}");
        assert!(shown.contains("ftp"), "{shown}");
    }
}
