//! Finding an accelerator by the name a user typed, and the error that
//! says what was meant when nothing matches.

use std::fmt;

use super::{Accelerator, Part, all, models};

/// Finds an accelerator by canonical name or alias.
///
/// Matching ignores ASCII case and surrounding whitespace, drops spaces, underscores and
/// dashes, and skips a leading `NVIDIA` or `Tesla`, so `"a100 80gb"`, `"A100_80GB"` and
/// `"NVIDIA A100-80GB"` all find `A100-80GB`.
///
/// # Errors
///
/// [`UnknownAccelerator`] when nothing matches. Its message explains variants the catalog
/// leaves out on purpose (`H100 NVL`, `GH200 144GB`), names the memory sizes when a model
/// name lacks one (`A100`), suggests the closest name when one is a plausible typo
/// (`H10` → `H100`), and otherwise lists every known name.
pub fn lookup(name: &str) -> Result<&'static Accelerator, UnknownAccelerator> {
    let wanted = strip_vendor(name);
    all()
        .iter()
        .find(|accelerator| {
            same_key(accelerator.name, wanted)
                || accelerator
                    .aliases
                    .iter()
                    .any(|alias| same_key(alias, wanted))
        })
        .ok_or_else(|| UnknownAccelerator::new(name))
}

/// The part a name singles out (`H200-NVL`), if it names one of the parts the catalog tells
/// apart within a model; the same matching as [`lookup`].
pub fn part_named(name: &str) -> Option<&'static Part> {
    let wanted = strip_vendor(name);
    models::PARTS
        .iter()
        .find(|part| same_key(part.name, wanted))
}

/// A validator for configuration strings naming an accelerator: a name [`lookup`] does not
/// find fails with [`UnknownAccelerator`]'s message.
pub fn known_name() -> crate::framework::validators::Validator {
    crate::framework::validators::Validator::string_with(
        "A GPU model of the accelerator catalog (see the `gpufleet_accelerators` data source), in any case.",
        |name| lookup(name).map(drop).map_err(|err| err.to_string()),
    )
}

/// The error of [`lookup`]: the name matches no accelerator.
///
/// Its message explains variants the catalog leaves out on purpose (`H100 NVL`), names the
/// memory sizes when a model name without its size was given (`A100`), says "did you mean
/// `X`?" when a canonical name is within a small edit distance, and otherwise lists every
/// known name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAccelerator {
    input: String,
    hint: Hint,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Hint {
    /// The input is a model name the catalog holds in several memory sizes.
    MemorySizes(Vec<&'static str>),
    /// The input names a variant the catalog leaves out on purpose; the note explains.
    NotCovered(&'static str),
    /// The closest canonical name.
    DidYouMean(&'static str),
    /// Nothing is close.
    None,
}

impl UnknownAccelerator {
    fn new(input: &str) -> Self {
        let wanted = key(strip_vendor(input));
        let sizes: Vec<&'static str> = all()
            .iter()
            .filter(|accelerator| is_memory_size_of(&key(accelerator.name), &wanted))
            .map(|accelerator| accelerator.name)
            .collect();
        let not_covered = models::NOT_COVERED
            .iter()
            .find(|(spellings, _)| spellings.iter().any(|s| key(s) == wanted));
        let hint = if let Some(&(_, note)) = not_covered {
            Hint::NotCovered(note)
        } else if !wanted.is_empty() && !sizes.is_empty() {
            Hint::MemorySizes(sizes)
        } else {
            closest(&wanted).map_or(Hint::None, Hint::DidYouMean)
        };
        Self {
            input: input.to_owned(),
            hint,
        }
    }

    /// The name that was looked up, as given.
    pub fn input(&self) -> &str {
        &self.input
    }

    /// The canonical names the error suggests instead (empty when nothing is close).
    pub fn suggestions(&self) -> &[&'static str] {
        match &self.hint {
            Hint::MemorySizes(sizes) => sizes,
            Hint::DidYouMean(name) => std::slice::from_ref(name),
            Hint::NotCovered(_) | Hint::None => &[],
        }
    }
}

impl fmt::Display for UnknownAccelerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.hint {
            Hint::MemorySizes(sizes) => {
                write!(
                    f,
                    "accelerator `{}` is ambiguous: the catalog has it in several memory \
                     sizes; use one of ",
                    self.input.trim()
                )?;
                write_names(f, sizes.iter().copied())
            }
            Hint::NotCovered(note) => write!(
                f,
                "accelerator `{}` is not in the catalog: {note}",
                self.input.trim()
            ),
            Hint::DidYouMean(name) => write!(
                f,
                "unknown accelerator `{}`; did you mean `{name}`?",
                self.input.trim()
            ),
            Hint::None => {
                write!(
                    f,
                    "unknown accelerator `{}`; known accelerators: ",
                    self.input.trim()
                )?;
                write_names(f, all().iter().map(|accelerator| accelerator.name))
            }
        }
    }
}

impl std::error::Error for UnknownAccelerator {}

fn write_names<'a>(
    f: &mut fmt::Formatter<'_>,
    names: impl Iterator<Item = &'a str>,
) -> fmt::Result {
    for (index, name) in names.enumerate() {
        if index > 0 {
            f.write_str(", ")?;
        }
        write!(f, "`{name}`")?;
    }
    Ok(())
}

/// Removes surrounding whitespace and a leading `NVIDIA` and/or `Tesla` (any case), with the
/// separators after them.
fn strip_vendor(name: &str) -> &str {
    let mut rest = name.trim();
    for vendor in ["nvidia", "tesla"] {
        let has_vendor = rest
            .get(..vendor.len())
            .is_some_and(|head| head.eq_ignore_ascii_case(vendor));
        if has_vendor {
            rest = rest[vendor.len()..].trim_start_matches(is_separator);
        }
    }
    rest
}

fn is_separator(c: char) -> bool {
    matches!(c, ' ' | '_' | '-')
}

/// The bytes names are compared by: ASCII lower case, separators dropped.
fn key_bytes(name: &str) -> impl Iterator<Item = u8> + '_ {
    name.bytes()
        .filter(|&b| !is_separator(char::from(b)))
        .map(|b| b.to_ascii_lowercase())
}

fn same_key(a: &str, b: &str) -> bool {
    key_bytes(a).eq(key_bytes(b))
}

fn key(name: &str) -> Vec<u8> {
    key_bytes(name).collect()
}

/// Whether `candidate` is `model` followed by a memory size (`a10080gb` for `a100`).
fn is_memory_size_of(candidate: &[u8], model: &[u8]) -> bool {
    candidate
        .strip_prefix(model)
        .and_then(|rest| rest.strip_suffix(b"gb"))
        .is_some_and(|digits| !digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
}

/// The canonical name nearest to `wanted` by edit distance, if it is close enough to be a
/// plausible typo: at most 2 edits, and at most one edit per two characters typed. Ties go to
/// the longer common prefix (a truncated `h10` means `H100` rather than `H20`), then to
/// catalog order. Aliases are left out: long ones such as `H200-NVL` sit one edit away from
/// other products (`H100-NVL`).
fn closest(wanted: &[u8]) -> Option<&'static str> {
    let mut best: Option<(usize, usize, &'static str)> = None;
    for accelerator in all() {
        let candidate = key(accelerator.name);
        let distance = levenshtein(wanted, &candidate);
        let prefix = wanted
            .iter()
            .zip(&candidate)
            .take_while(|(a, b)| a == b)
            .count();
        let better = match best {
            None => true,
            Some((best_distance, best_prefix, _)) => {
                distance < best_distance || (distance == best_distance && prefix > best_prefix)
            }
        };
        if better {
            best = Some((distance, prefix, accelerator.name));
        }
    }
    best.filter(|&(distance, _, _)| distance <= 2 && 2 * distance <= wanted.len())
        .map(|(_, _, name)| name)
}

/// The Levenshtein distance: the fewest single-byte insertions, deletions and substitutions
/// turning `a` into `b`.
fn levenshtein(a: &[u8], b: &[u8]) -> usize {
    // `row[j]` is the distance between the prefix of `a` processed so far and `b[..j]`.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, &ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(name: &str) -> &'static Accelerator {
        lookup(name).unwrap_or_else(|err| panic!("{err}"))
    }

    #[test]
    fn lookup_ignores_case_separators_and_vendor() {
        for (input, expected) in [
            ("h100", "H100"),
            ("  H100 ", "H100"),
            ("t4", "T4"),
            ("Tesla T4", "T4"),
            ("NVIDIA T4G", "T4G"),
            ("t4g", "T4G"),
            ("a100-80gb", "A100-80GB"),
            ("A100 80GB", "A100-80GB"),
            ("a100_80gb", "A100-80GB"),
            ("A10080GB", "A100-80GB"),
            ("NVIDIA A100 40GB", "A100-40GB"),
            ("NVIDIA-A100-SXM4-80GB", "A100-80GB"),
            ("NVIDIA-H100-80GB-HBM3", "H100"),
            ("h100 80gb", "H100"),
            ("rtx pro 6000", "RTX-PRO-6000"),
            ("RTX PRO 6000 Blackwell Server Edition", "RTX-PRO-6000"),
            ("rtx-pro-server-6000", "RTX-PRO-6000"),
            ("RTXPRO6000BSE", "RTX-PRO-6000"),
            ("RTX PRO 4500", "RTX-PRO-4500"),
            ("RTX PRO 4500 Blackwell Server Edition", "RTX-PRO-4500"),
            ("v100s", "V100-32GB"),
            ("gh200", "GH200"),
            ("a10", "A10"),
            ("a10g", "A10G"),
        ] {
            assert_eq!(get(input).name, expected, "{input}");
        }
    }

    #[test]
    fn l40s_resolves_exactly() {
        assert_eq!(get("L40s").name, "L40S");
        assert_eq!(get("l40").name, "L40");
    }

    #[test]
    fn suggests_the_closest_name() {
        let err = lookup("H10").unwrap_err();
        assert_eq!(err.input(), "H10");
        assert_eq!(err.suggestions(), ["H100"]);
        assert_eq!(
            err.to_string(),
            "unknown accelerator `H10`; did you mean `H100`?"
        );
        assert_eq!(lookup("A100-80").unwrap_err().suggestions(), ["A100-80GB"]);
        assert_eq!(lookup("B2000").unwrap_err().suggestions(), ["B200"]);
        assert_eq!(lookup("L40SS").unwrap_err().suggestions(), ["L40S"]);
        assert_eq!(
            lookup("rtx pro 600").unwrap_err().suggestions(),
            ["RTX-PRO-6000"]
        );
    }

    #[test]
    fn names_memory_sizes_for_a_bare_model_name() {
        let err = lookup("a100").unwrap_err();
        assert_eq!(err.suggestions(), ["A100-40GB", "A100-80GB"]);
        assert_eq!(
            err.to_string(),
            "accelerator `a100` is ambiguous: the catalog has it in several memory sizes; \
             use one of `A100-40GB`, `A100-80GB`"
        );
        assert_eq!(
            lookup("NVIDIA V100").unwrap_err().suggestions(),
            ["V100-16GB", "V100-32GB"]
        );
    }

    #[test]
    fn explains_variants_left_out() {
        let err = lookup("h100 nvl").unwrap_err();
        assert!(err.suggestions().is_empty());
        assert_eq!(
            err.to_string(),
            "accelerator `h100 nvl` is not in the catalog: `H100` is the 80 GB SXM/PCIe part; \
             the 94 GB H100 NVL has other MIG profiles"
        );
        let message = lookup("NVIDIA GH200 144GB").unwrap_err().to_string();
        assert!(message.contains("`GH200` is the 96 GB part"), "{message}");
        for (spellings, _) in models::NOT_COVERED {
            for spelling in *spellings {
                let err = lookup(spelling).expect_err(spelling);
                assert!(
                    err.to_string().contains("is not in the catalog"),
                    "{spelling}"
                );
            }
        }
    }

    #[test]
    fn lists_known_names_when_nothing_is_close() {
        for input in ["quantum-9000", "", "   ", "x"] {
            let err = lookup(input).unwrap_err();
            assert!(err.suggestions().is_empty(), "{input:?}");
            let message = err.to_string();
            assert!(
                message.contains("known accelerators: `P100`, `V100-16GB`"),
                "{message}"
            );
            assert!(message.ends_with("`RTX-PRO-4500`"), "{message}");
        }
    }

    /// No two names or aliases collide once case, separators and vendor prefixes are
    /// ignored, and every one of them finds its own entry.
    #[test]
    fn names_and_aliases_are_unique() {
        let mut seen: Vec<(Vec<u8>, &str)> = Vec::new();
        for accelerator in all() {
            for spelling in std::iter::once(&accelerator.name).chain(accelerator.aliases) {
                assert_eq!(strip_vendor(spelling), *spelling, "{spelling}");
                let spelling_key = key(spelling);
                if let Some((_, other)) = seen.iter().find(|(k, _)| *k == spelling_key) {
                    panic!("`{spelling}` collides with `{other}`");
                }
                seen.push((spelling_key, spelling));
                assert_eq!(get(spelling).name, accelerator.name, "{spelling}");
            }
        }
    }

    #[test]
    fn levenshtein_distances() {
        assert_eq!(levenshtein(b"", b""), 0);
        assert_eq!(levenshtein(b"", b"abc"), 3);
        assert_eq!(levenshtein(b"abc", b""), 3);
        assert_eq!(levenshtein(b"h100", b"h100"), 0);
        assert_eq!(levenshtein(b"h10", b"h100"), 1);
        assert_eq!(levenshtein(b"h10", b"h20"), 1);
        assert_eq!(levenshtein(b"kitten", b"sitting"), 3);
        assert_eq!(levenshtein(b"flaw", b"lawn"), 2);
    }
}
