//! "Did you mean": the known name closest to a mistyped one (a tenant, a script, a bucket), for
//! not-found errors.

/// The candidate closest to `name`, when it is close enough to be a typo of it: the same but
/// for case, or within an edit distance of a third of its length (at least 1, at most 3).
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    let most = (name.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| {
            let d = if c.to_lowercase() == lower {
                0
            } else {
                distance(&lower, &c.to_lowercase())
            };
            (d, c)
        })
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// `did you mean "x"? ` for [`closest`], or nothing.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    match closest(name, candidates) {
        Some(c) => format!("did you mean {c:?}? "),
        None => String::new(),
    }
}

/// Edit distance over characters, a swap of two neighbours counting one (optimal string
/// alignment: `strat` is one edit from `start`). Names are short; longer ones are cut here to
/// bound the work.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(80).collect();
    let b: Vec<char> = b.chars().take(80).collect();
    let w = b.len() + 1;
    let mut d = vec![0usize; (a.len() + 1) * w];
    for i in 0..=a.len() {
        d[i * w] = i;
    }
    for (j, cell) in d.iter_mut().enumerate().take(w) {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[(i - 1) * w + j] + 1)
                .min(d[i * w + j - 1] + 1)
                .min(d[(i - 1) * w + j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[(i - 2) * w + j - 2] + 1);
            }
            d[i * w + j] = v;
        }
    }
    d[a.len() * w + b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_their_name_and_strangers_find_none() {
        let names = ["hello", "acme", "finish", "router"];
        assert_eq!(closest("helo", names), Some("hello"));
        assert_eq!(closest("Acme", names), Some("acme"));
        assert_eq!(closest("finsh", names), Some("finish"));
        assert_eq!(closest("strat", ["start", "greet"]), Some("start"));
        assert_eq!(closest("routr", names), Some("router"));
        assert_eq!(closest("zzz", names), None);
        assert_eq!(closest("x", names), None);
        assert_eq!(did_you_mean("helo", names), "did you mean \"hello\"? ");
    }
}
