//! Validation of object keys that scripts pass, so that no key can leave the tenant's folder.

/// The longest key a script may use, in bytes. S3 allows 1024 for the whole key, and the tenant
/// folder (and the batch prefix) take some of that.
pub const MAX_KEY_BYTES: usize = 900;

/// Checks a key relative to a tenant folder: not empty, not absolute, no empty, `.` or `..`
/// segments, no backslashes and no control characters. Returns why it is refused.
pub fn check_relative_key(key: &str) -> Result<(), String> {
    if key.is_empty() {
        return Err("key is empty".into());
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(format!(
            "key is {} bytes long; the limit is {MAX_KEY_BYTES}",
            key.len()
        ));
    }
    if key.starts_with('/') {
        return Err(format!(
            "key {key:?} is absolute; keys are relative to the tenant folder"
        ));
    }
    if key.contains('\\') {
        return Err(format!("key {key:?} contains a backslash"));
    }
    if key.chars().any(char::is_control) {
        return Err(format!("key {key:?} contains a control character"));
    }
    for seg in key.split('/') {
        match seg {
            "" if !key.ends_with('/') => {
                return Err(format!("key {key:?} has an empty segment (\"//\")"))
            }
            "." | ".." => return Err(format!("key {key:?} has a {seg:?} segment")),
            _ => {}
        }
    }
    if key.ends_with('/') {
        return Err(format!(
            "key {key:?} ends with \"/\"; it names a folder, not an object"
        ));
    }
    Ok(())
}

/// Checks a prefix for listing: like a key, but it may be empty or end with `/`.
pub fn check_prefix(prefix: &str) -> Result<(), String> {
    if prefix.is_empty() {
        return Ok(());
    }
    let trimmed = prefix.strip_suffix('/').unwrap_or(prefix);
    check_relative_key(trimmed).map_err(|e| e.replace("key", "prefix"))
}

/// Checks a vault secret name (`stripe.key`): 1 to 64 letters, digits, `.`, `-` and `_`,
/// starting with a letter or digit, so that it is a file name and a Secrets Manager name
/// segment as it stands.
pub fn check_secret_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "vault name {name:?} is not valid: use 1 to 64 letters, digits, '.', '-' or '_', starting with a letter or digit"
        ))
    }
}

/// Checks a name used as a script, tenant or logical bucket name: letters, digits, `-` and `_`.
pub fn check_name(kind: &str, name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{kind} name {name:?} is not valid: use 1 to 64 letters, digits, '-' or '_'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_keys_that_could_leave_the_folder() {
        for bad in [
            "", "/abs", "a/../b", "..", ".", "a/./b", "a//b", "a\\b", "a\u{0}b", "a\nb", "a/",
        ] {
            assert!(check_relative_key(bad).is_err(), "{bad:?} was accepted");
        }
        for good in ["a", "a/b.json", "batch-1/doc.xml", "x..y", ".hidden/a"] {
            assert!(check_relative_key(good).is_ok(), "{good:?} was refused");
        }
    }

    #[test]
    fn prefixes_may_be_empty_or_end_in_slash() {
        assert!(check_prefix("").is_ok());
        assert!(check_prefix("a/").is_ok());
        assert!(check_prefix("a/b").is_ok());
        assert!(check_prefix("../").is_err());
        assert!(check_prefix("/").is_err());
    }
}
