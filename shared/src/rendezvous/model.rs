//! The rendezvous values (barrier, participant, namespace) as the contract's messages show them,
//! the rows that hold them, and the checks of every field against the contract's limits.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// Metadata: string keys to string values, at most [`MAX_METADATA_ENTRIES`].
pub type Metadata = BTreeMap<String, String>;

/// The longest name (namespace, barrier, process id), in bytes.
pub const MAX_NAME_BYTES: usize = 128;
/// The longest description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 1024;
/// The most metadata entries.
pub const MAX_METADATA_ENTRIES: usize = 32;
/// The longest metadata key, in bytes.
pub const MAX_METADATA_KEY_BYTES: usize = 128;
/// The longest metadata value, in bytes.
pub const MAX_METADATA_VALUE_BYTES: usize = 256;
/// The most processes a barrier may expect.
pub const MAX_EXPECTED_PROCESSES: u64 = 1_000_000;
/// The shortest inactivity window.
pub const MIN_INACTIVE_S: u64 = 60;
/// The longest inactivity window: ten years (the contract sets no ceiling; this keeps times
/// within range).
pub const MAX_INACTIVE_S: u64 = 10 * 365 * 86_400;
/// The longest wait.
pub const MAX_WAIT_S: u64 = 300;
/// The largest page.
pub const MAX_PAGE: u64 = 250;
/// The page when none is asked for (`limit` 0 or absent).
pub const DEFAULT_PAGE: u64 = 100;
/// The longest pagination token.
pub const MAX_TOKEN_CHARS: usize = 1024;
/// The namespace every tenant has without creating it.
pub const DEFAULT_NAMESPACE: &str = "default";

/// A barrier, as the API answers it. Timestamps are nanoseconds since the epoch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Barrier {
    /// Its name, unique in its namespace.
    pub name: String,
    /// Free text.
    pub description: String,
    /// How many distinct processes trip it.
    pub expected_processes: u64,
    /// How many have arrived in the current generation.
    pub arrived_processes: u64,
    /// The current generation, from 1; one more per trip.
    pub generation: u64,
    /// From 1; one more per update.
    pub version: u64,
    /// When it was created.
    pub created_at: i64,
    /// When it was created or last updated.
    pub updated_at: i64,
    /// When it was created or a process last arrived (a new arrival, not a repeat).
    pub last_activity_at: i64,
    /// It is gone this long after `last_activity_at`.
    pub delete_inactive_after_seconds: u64,
    /// Opaque to native.
    pub metadata: Metadata,
    /// The script that gets a message per trip (native only; absent when none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_with: Option<String>,
}

impl Barrier {
    /// When it is gone for inactivity, in ms since the epoch.
    pub fn inactive_at_ms(&self) -> i64 {
        (self.last_activity_at / 1_000_000)
            .saturating_add((self.delete_inactive_after_seconds as i64).saturating_mul(1000))
    }

    /// Trips the current generation: the next one starts with no arrivals.
    pub(crate) fn trip(&mut self) {
        self.generation += 1;
        self.arrived_processes = 0;
    }
}

/// One process's arrival in one generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Participant {
    /// The caller's id for itself.
    pub process_id: String,
    /// The generation it arrived in.
    pub generation: u64,
    /// When, in ns since the epoch.
    pub arrived_at: i64,
    /// What it attached.
    pub metadata: Metadata,
}

/// A namespace, as the API answers it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// Its name, unique per tenant.
    pub name: String,
    /// Free text.
    pub description: String,
    /// Opaque to native.
    pub metadata: Metadata,
    /// When it was created (for `default`: when it was first read or used).
    pub created_at: i64,
    /// When it was created or last updated.
    pub updated_at: i64,
}

/// How a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitOutcome {
    /// The generation waited for has tripped.
    Tripped,
    /// The timeout passed first.
    TimedOut,
}

impl WaitOutcome {
    /// As the contract spells it.
    pub fn name(self) -> &'static str {
        match self {
            WaitOutcome::Tripped => "BARRIER_WAIT_OUTCOME_TRIPPED",
            WaitOutcome::TimedOut => "BARRIER_WAIT_OUTCOME_TIMED_OUT",
        }
    }
}

/// The stored barrier row: the barrier and the token of its incarnation, which keys its
/// participant rows so that a barrier created again under the same name starts empty.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct BarrierRow {
    pub barrier: Barrier,
    pub incarnation: String,
    /// The chain that created the barrier, which every trip's continuation runs in (absent in
    /// rows written before issue 55: the tripping call's chain then).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain: Option<String>,
}

/// The stored namespace row.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct NamespaceRow {
    pub namespace: Namespace,
    /// Keys its barriers' partition, so that deleting the namespace drops them all at once.
    pub incarnation: String,
    /// Barriers created minus barriers deleted; barriers gone for inactivity still count until
    /// a create at the limit counts again.
    pub barriers: u64,
}

/// What CreateBarrier takes.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CreateBarrier {
    /// The namespace.
    pub namespace: String,
    /// The barrier's name.
    pub name: String,
    /// Free text.
    pub description: String,
    /// 1 to 1 000 000.
    pub expected_processes: u64,
    /// At least 60.
    pub delete_inactive_after_seconds: u64,
    /// Opaque.
    pub metadata: Metadata,
    /// A script of the tenant that gets one message per trip.
    pub continue_with: Option<String>,
}

/// What UpdateBarrier takes: everything it replaces, and the version it must find.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateBarrier {
    /// The namespace.
    pub namespace: String,
    /// The barrier's name.
    pub name: String,
    /// Replaces the description.
    pub description: String,
    /// Replaces the count; not below the arrived count, and equal to it trips.
    pub expected_processes: u64,
    /// Replaces the metadata (none clears it).
    pub metadata: Metadata,
    /// The version the barrier must have.
    pub expected_version: u64,
    /// Replaces the inactivity window.
    pub delete_inactive_after_seconds: u64,
}

fn invalid(msg: impl Into<String>) -> Error {
    Error::InvalidInput(msg.into())
}

/// Checks a name (namespace, barrier, process id): 1 to 128 bytes of `[-_0-9a-zA-Z]`.
pub fn check_name(field: &str, v: &str) -> Result<()> {
    if v.is_empty() {
        return Err(invalid(format!("{field} must not be empty")));
    }
    if v.len() > MAX_NAME_BYTES {
        return Err(invalid(format!(
            "{field} must be at most {MAX_NAME_BYTES} bytes, not {}",
            v.len()
        )));
    }
    if let Some(c) = v
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
    {
        return Err(invalid(format!(
            "{field} must use only letters, digits, '-' and '_', not {c:?}"
        )));
    }
    Ok(())
}

/// Checks a description: at most 1024 bytes.
pub fn check_description(v: &str) -> Result<()> {
    if v.len() > MAX_DESCRIPTION_BYTES {
        return Err(invalid(format!(
            "description must be at most {MAX_DESCRIPTION_BYTES} bytes, not {}",
            v.len()
        )));
    }
    Ok(())
}

/// Checks metadata: at most 32 entries, keys 1 to 128 bytes, values at most 256 bytes.
pub fn check_metadata(m: &Metadata) -> Result<()> {
    if m.len() > MAX_METADATA_ENTRIES {
        return Err(invalid(format!(
            "metadata must have at most {MAX_METADATA_ENTRIES} entries, not {}",
            m.len()
        )));
    }
    for (k, v) in m {
        if k.is_empty() || k.len() > MAX_METADATA_KEY_BYTES {
            return Err(invalid(format!(
                "metadata key must be 1 to {MAX_METADATA_KEY_BYTES} bytes, not {}",
                k.len()
            )));
        }
        if v.len() > MAX_METADATA_VALUE_BYTES {
            return Err(invalid(format!(
                "metadata value of {k:?} must be at most {MAX_METADATA_VALUE_BYTES} bytes, not {}",
                v.len()
            )));
        }
    }
    Ok(())
}

/// Checks expected_processes: 1 to 1 000 000.
pub fn check_expected(v: u64) -> Result<()> {
    if v == 0 {
        return Err(invalid("expected_processes must be greater than 0"));
    }
    if v > MAX_EXPECTED_PROCESSES {
        return Err(invalid(format!(
            "expected_processes must be at most {MAX_EXPECTED_PROCESSES}, not {v}"
        )));
    }
    Ok(())
}

/// Checks delete_inactive_after_seconds: at least 60.
pub fn check_inactive(v: u64) -> Result<()> {
    if v < MIN_INACTIVE_S {
        return Err(invalid(format!(
            "delete_inactive_after_seconds must be at least {MIN_INACTIVE_S}, not {v}"
        )));
    }
    if v > MAX_INACTIVE_S {
        return Err(invalid(format!(
            "delete_inactive_after_seconds must be at most {MAX_INACTIVE_S} (ten years), not {v}"
        )));
    }
    Ok(())
}

/// Checks a field that must be greater than 0 (expected_generation, expected_version).
pub fn check_positive(field: &str, v: u64) -> Result<()> {
    if v == 0 {
        return Err(invalid(format!("{field} must be greater than 0")));
    }
    Ok(())
}

/// Checks timeout_seconds: 0 to 300.
pub fn check_timeout(v: u64) -> Result<()> {
    if v > MAX_WAIT_S {
        return Err(invalid(format!(
            "timeout_seconds must be 0 to {MAX_WAIT_S}, not {v}"
        )));
    }
    Ok(())
}

/// A page size: 0 to 250, 0 meaning 100.
pub fn page_limit(v: u64) -> Result<usize> {
    if v > MAX_PAGE {
        return Err(invalid(format!("limit must be 0 to {MAX_PAGE}, not {v}")));
    }
    Ok(if v == 0 { DEFAULT_PAGE } else { v } as usize)
}

impl CreateBarrier {
    /// Checks every field.
    pub fn validate(&self) -> Result<()> {
        check_name("namespace_name", &self.namespace)?;
        check_name("barrier_name", &self.name)?;
        check_description(&self.description)?;
        check_expected(self.expected_processes)?;
        check_inactive(self.delete_inactive_after_seconds)?;
        check_metadata(&self.metadata)
    }
}

impl UpdateBarrier {
    /// Checks every field.
    pub fn validate(&self) -> Result<()> {
        check_name("namespace_name", &self.namespace)?;
        check_name("barrier_name", &self.name)?;
        check_description(&self.description)?;
        check_expected(self.expected_processes)?;
        check_positive("expected_version", self.expected_version)?;
        check_inactive(self.delete_inactive_after_seconds)?;
        check_metadata(&self.metadata)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_that_are_steps_of_a_url_path_are_refused() {
        for bad in [".", "..", "%2e", "a/b", "a\\b"] {
            assert!(super::check_name("barrier_name", bad).is_err(), "{bad}");
        }
        assert!(super::check_name("barrier_name", "b-1_x").is_ok());
    }
}
