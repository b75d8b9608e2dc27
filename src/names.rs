//! Parsing the named choices of the parameter enums ([`CovarianceType`](crate::CovarianceType),
//! [`PcaSolver`](crate::PcaSolver), [`KMeansInit`](crate::KMeansInit),
//! [`GmmInit`](crate::GmmInit), [`Criterion`](crate::Criterion)) from text, so that the CLI
//! and configuration files parse the library's enums directly instead of mirroring them.
//!
//! Each enum has `ALL` (the parseable values), `name()` (the canonical spelling, also its
//! `Display`) and a private list of other accepted spellings (e.g. "kmeans++" for
//! "k-means++"); its `FromStr` calls [`parse_choice`]. Matching ignores ASCII case.

use crate::error::{Error, Result};

/// The value of `all` whose name or alias is `text` (ASCII case ignored), or an
/// [`Error::InvalidParameter`] named `param` that lists the names.
pub(crate) fn parse_choice<T: Clone>(
    param: &'static str,
    what: &str,
    text: &str,
    all: &[T],
    name: impl Fn(&T) -> &'static str,
    aliases: impl Fn(&T) -> &'static [&'static str],
) -> Result<T> {
    let found = all.iter().find(|value| {
        std::iter::once(name(value))
            .chain(aliases(value).iter().copied())
            .any(|spelling| spelling.eq_ignore_ascii_case(text))
    });
    if let Some(value) = found {
        return Ok(value.clone());
    }
    let names: Vec<&str> = all.iter().map(&name).collect();
    let list = match names.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(Error::invalid(
        param,
        format!("unknown {what} {text:?} ({list})"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<u8> {
        let name = |v: &u8| ["zero", "one", "two", "three"][*v as usize];
        let aliases = |v: &u8| -> &'static [&'static str] {
            if *v == 1 {
                &["uno"]
            } else {
                &[]
            }
        };
        parse_choice("n", "number", text, &[1, 2, 3], name, aliases)
    }

    #[test]
    fn names_and_aliases_parse_ignoring_case() {
        assert_eq!(parse("one").unwrap(), 1);
        assert_eq!(parse("UNO").unwrap(), 1);
        assert_eq!(parse("Three").unwrap(), 3);
    }

    #[test]
    fn unknown_names_list_the_choices() {
        for text in ["four", "zero", ""] {
            let e = parse(text).unwrap_err();
            assert!(matches!(e, Error::InvalidParameter { name: "n", .. }));
            let expected = format!("unknown number {text:?} (one, two or three)");
            assert!(e.to_string().contains(&expected), "{e}");
        }
    }
}
