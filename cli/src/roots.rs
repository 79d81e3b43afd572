//! The folders the CLI shows a server as its roots (`roots/list`): the
//! current folder, or each `--root PATH`, as `file://` URIs.

use std::path::{Component, Path, PathBuf, Prefix};

use anyhow::Context;
use mcp_tasks::protocol::Root;

/// The roots for `paths` (the current folder when there are none), each
/// made absolute, with its links resolved. A path that does not exist is
/// an error naming it.
pub fn roots(paths: &[PathBuf]) -> anyhow::Result<Vec<Root>> {
    let current;
    let paths = if paths.is_empty() {
        current = [std::env::current_dir().context("cannot read the current folder")?];
        &current[..]
    } else {
        paths
    };
    paths
        .iter()
        .map(|path| {
            let full = std::fs::canonicalize(path)
                .with_context(|| format!("--root {}: no such folder", path.display()))?;
            Ok(Root {
                uri: file_uri(&full),
                name: full.file_name().map(|n| n.to_string_lossy().into_owned()),
            })
        })
        .collect()
}

/// `file://` and the absolute `path`, each byte that is not unreserved in
/// a URI path percent-encoded (a Windows drive becomes `/C:`).
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for component in path.components() {
        let part = match component {
            Component::Prefix(prefix) => match prefix.kind() {
                Prefix::Disk(d) | Prefix::VerbatimDisk(d) => format!("{}:", char::from(d)),
                _ => prefix.as_os_str().to_string_lossy().into_owned(),
            },
            Component::RootDir => continue,
            other => encode(&other.as_os_str().to_string_lossy()),
        };
        uri.push('/');
        uri.push_str(&part);
    }
    if !uri["file://".len()..].starts_with('/') {
        uri.push('/');
    }
    uri
}

fn encode(part: &str) -> String {
    let mut out = String::with_capacity(part.len());
    for byte in part.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn paths_become_file_uris_with_odd_bytes_encoded() {
        assert_eq!(file_uri(Path::new("/")), "file:///");
        assert_eq!(file_uri(Path::new("/home/ada")), "file:///home/ada");
        assert_eq!(
            file_uri(Path::new("/tmp/a b/é%#?")),
            "file:///tmp/a%20b/%C3%A9%25%23%3F"
        );
    }

    #[test]
    fn no_path_means_the_current_folder_and_a_missing_one_is_an_error() {
        let here = roots(&[]).unwrap();
        assert_eq!(here.len(), 1);
        assert!(here[0].uri.starts_with("file:///"), "{}", here[0].uri);
        let missing = roots(&[PathBuf::from("/no/such/folder/anywhere")]).unwrap_err();
        assert!(missing.to_string().contains("no such folder"), "{missing}");
    }
}
