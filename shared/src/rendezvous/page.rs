//! Paging of the rendezvous lists (namespaces, barriers, participants) in both directions, as
//! Grackle's clients page: every page answers a `next_pagination_token` and a
//! `previous_pagination_token`, and either one, passed back, gives the page beside it.
//!
//! A token is opaque to callers: base64url of a direction byte and a name. `N<name>` is the
//! page of names after `<name>` (`N` alone: the first page); `P<name>` is the page of names
//! before `<name>`, the last `limit` of them, still in ascending order (`P` alone: the last
//! page). A token that is not one of these is `invalid_argument`, so a made-up token is
//! refused rather than read as a position.
//!
//! Each token of an answer is given only when the page beside it has items at the time of the
//! answer: the page after is known from reading one item more than the page, the page before
//! from one more read of a single item (two reads per page in all; the first page reads once).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use super::model::{check_name, MAX_TOKEN_CHARS};
use crate::budget::Budget;
use crate::ports::{Item, KvStore};
use crate::{Error, Result};

/// One page of a list, and the tokens of the pages beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page<T> {
    /// The items, in ascending name order.
    pub items: Vec<T>,
    /// The token of the page after this one; `None` when there is none.
    pub next: Option<String>,
    /// The token of the page before this one; `None` on the first page.
    pub previous: Option<String>,
}

/// Where a page starts, as a token says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Cursor {
    /// The names after this one ("" = from the first).
    After(String),
    /// The names before this one ("" = up to the last).
    Before(String),
}

fn refused() -> Error {
    Error::InvalidInput(
        "pagination_token is not one this API handed out; pass back next_pagination_token or previous_pagination_token as it came, or none for the first page".into(),
    )
}

impl Cursor {
    fn token(&self) -> String {
        let (d, name) = match self {
            Cursor::After(n) => ('N', n),
            Cursor::Before(n) => ('P', n),
        };
        URL_SAFE_NO_PAD.encode(format!("{d}{name}"))
    }

    /// Reads a token; empty is the first page.
    fn parse(token: &str) -> Result<Cursor> {
        if token.is_empty() {
            return Ok(Cursor::After(String::new()));
        }
        if token.chars().count() > MAX_TOKEN_CHARS {
            return Err(Error::InvalidInput(format!(
                "pagination_token must be at most {MAX_TOKEN_CHARS} characters"
            )));
        }
        let raw = URL_SAFE_NO_PAD.decode(token).map_err(|_| refused())?;
        let text = String::from_utf8(raw).map_err(|_| refused())?;
        let (d, name) = text.split_at_checked(1).ok_or_else(refused)?;
        if !name.is_empty() {
            check_name("pagination_token", name).map_err(|_| refused())?;
        }
        match d {
            "N" => Ok(Cursor::After(name.to_string())),
            "P" => Ok(Cursor::Before(name.to_string())),
            _ => Err(refused()),
        }
    }
}

/// Checks a token without reading anything (for validation before lookups).
pub fn check_token(token: &str) -> Result<()> {
    Cursor::parse(token).map(|_| ())
}

/// A list of one partition's items under one sort key prefix, whose sort keys are the prefix
/// and a name, read through `keep`, which decodes an item or skips it (a barrier past its
/// window).
pub(super) struct Lister<'a, B: Budget + ?Sized, T, F: Fn(&Item) -> Result<Option<T>>> {
    pub kv: &'a dyn KvStore,
    pub budget: &'a B,
    pub pk: &'a str,
    pub prefix: &'a str,
    pub keep: F,
}

impl<B: Budget + ?Sized, T, F: Fn(&Item) -> Result<Option<T>>> Lister<'_, B, T, F> {
    /// Up to `n` kept items strictly beyond `bound` (after it going forwards, before it going
    /// backwards; "" = from the end the direction starts at), in the direction's order, with
    /// their names, and whether another kept item lies beyond them.
    async fn scan(
        &self,
        forwards: bool,
        bound: &str,
        n: usize,
    ) -> Result<(Vec<(String, T)>, bool)> {
        let mut out = Vec::with_capacity(n + 1);
        let mut from = (!bound.is_empty()).then(|| format!("{}{bound}", self.prefix));
        loop {
            self.budget.spend(1)?;
            let want = n + 1 - out.len();
            let page = if forwards {
                self.kv
                    .query(self.pk, self.prefix, from.as_deref(), want)
                    .await?
            } else {
                self.kv
                    .query_back(self.pk, self.prefix, from.as_deref(), want)
                    .await?
            };
            for item in &page.items {
                if let Some(v) = (self.keep)(item)? {
                    out.push((item.sk[self.prefix.len()..].to_string(), v));
                    if out.len() > n {
                        out.truncate(n);
                        return Ok((out, true));
                    }
                }
            }
            match page.next {
                Some(next) => from = Some(next),
                None => return Ok((out, false)),
            }
        }
    }

    /// The page that `token` names, `limit` items at most.
    pub async fn page(&self, token: &str, limit: usize) -> Result<Page<T>> {
        match Cursor::parse(token)? {
            Cursor::After(after) => {
                let (items, more) = self.scan(true, &after, limit).await?;
                let next = more
                    .then(|| items.last().map(|(k, _)| Cursor::After(k.clone()).token()))
                    .flatten();
                let previous = if after.is_empty() {
                    None
                } else if let Some((first, _)) = items.first() {
                    // Anything before the page's first item?
                    let (_, before) = self.scan(false, first, 0).await?;
                    before.then(|| Cursor::Before(first.clone()).token())
                } else {
                    // Past the end: the page before is the last one, if there are any items.
                    let (_, any) = self.scan(false, "", 0).await?;
                    any.then(|| Cursor::Before(String::new()).token())
                };
                Ok(Page {
                    items: items.into_iter().map(|(_, v)| v).collect(),
                    next,
                    previous,
                })
            }
            Cursor::Before(before) => {
                let (mut items, more) = self.scan(false, &before, limit).await?;
                items.reverse();
                let previous = more
                    .then(|| {
                        items
                            .first()
                            .map(|(k, _)| Cursor::Before(k.clone()).token())
                    })
                    .flatten();
                let next = if let Some((last, _)) = items.last() {
                    let (_, after) = self.scan(true, last, 0).await?;
                    after.then(|| Cursor::After(last.clone()).token())
                } else if before.is_empty() {
                    None
                } else {
                    // Before the start: the page after is the first one, if there are items.
                    let (_, any) = self.scan(true, "", 0).await?;
                    any.then(|| Cursor::After(String::new()).token())
                };
                Ok(Page {
                    items: items.into_iter().map(|(_, v)| v).collect(),
                    next,
                    previous,
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_made_up_ones_are_refused() {
        for c in [
            Cursor::After("b-1".into()),
            Cursor::Before("x_2".into()),
            Cursor::After(String::new()),
            Cursor::Before(String::new()),
        ] {
            assert_eq!(Cursor::parse(&c.token()).unwrap(), c);
        }
        assert_eq!(Cursor::parse("").unwrap(), Cursor::After(String::new()));
        for bad in [
            "invalid_token",
            "invalid-base64!@#",
            "dGVzdA==",
            &URL_SAFE_NO_PAD.encode("Xabc"),
            &URL_SAFE_NO_PAD.encode("Na/b"),
            &"\0".repeat(1024),
        ] {
            assert!(
                matches!(Cursor::parse(bad), Err(Error::InvalidInput(_))),
                "{bad:?}"
            );
        }
        assert!(Cursor::parse(&"A".repeat(1025))
            .unwrap_err()
            .to_string()
            .contains("at most 1024"));
    }
}
