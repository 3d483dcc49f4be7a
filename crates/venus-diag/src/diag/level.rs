//! Warning levels chosen by the user: `--allow CODE` silences a warning, `--deny CODE` makes it
//! an error (so it fails `check`), and an `allow CODE` item silences it inside one block.
//!
//! Input: the codes as written on the command line, and the diagnostics of a run. Output: the
//! diagnostics with allowed warnings removed and denied ones raised to errors. Invariant:
//! errors are never allowed (an error means the run cannot be simulated as written).

use super::{suggest, Code, Diagnostic, Severity};

/// The `--allow` and `--deny` codes of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Levels {
    allow: Vec<Code>,
    deny: Vec<Code>,
}

impl Levels {
    /// Parses the written codes; a usage error names an unknown code (with the nearest one)
    /// or an error code, which cannot be allowed or denied.
    pub fn parse(allow: &[String], deny: &[String]) -> Result<Levels, String> {
        let codes = |written: &[String], flag: &str| -> Result<Vec<Code>, String> {
            written.iter().map(|w| warning_code(w, flag)).collect()
        };
        let levels = Levels {
            allow: codes(allow, "--allow")?,
            deny: codes(deny, "--deny")?,
        };
        if let Some(both) = levels.allow.iter().find(|c| levels.deny.contains(c)) {
            return Err(format!("`{both}` is both allowed and denied: keep one of `--allow {both}` and `--deny {both}`"));
        }
        Ok(levels)
    }

    /// Removes the allowed warnings and raises the denied ones to errors.
    pub fn apply(&self, diagnostics: &mut Vec<Diagnostic>) {
        diagnostics.retain(|d| !self.allow.contains(&d.code));
        for d in diagnostics.iter_mut() {
            if self.deny.contains(&d.code) {
                d.severity = Severity::Error;
            }
        }
    }
}

/// `W0001` (any case) as a warning code, or why not.
fn warning_code(written: &str, flag: &str) -> Result<Code, String> {
    let Some(code) = Code::parse(written) else {
        let names = Code::ALL.iter().map(|c| c.as_str());
        let upper = written.trim().to_ascii_uppercase();
        return Err(match suggest(&upper, names) {
            Some(s) => format!("`{flag} {written}`: no such code; did you mean `{s}`?"),
            None => format!("`{flag} {written}`: no such code (`venusc explain` lists them)"),
        });
    };
    if code.severity() == Severity::Error {
        return Err(format!(
            "`{flag} {code}`: only warnings can be allowed or denied, and `{code}` is an error"
        ));
    }
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::{FileId, Loc, Span};

    fn warning(code: Code) -> Diagnostic {
        Diagnostic::new(code, "m", Loc::new(FileId(0), Span::new(0, 1)), "here")
    }

    #[test]
    fn allow_removes_a_warning_and_deny_makes_one_an_error() {
        let levels = Levels::parse(&["w0002".into()], &["W0001".into()]).unwrap();
        let mut ds = vec![
            warning(Code::W0001),
            warning(Code::W0002),
            warning(Code::W0003),
        ];
        levels.apply(&mut ds);
        let seen: Vec<(Code, Severity)> = ds.iter().map(|d| (d.code, d.severity)).collect();
        assert_eq!(
            seen,
            [
                (Code::W0001, Severity::Error),
                (Code::W0003, Severity::Warning)
            ]
        );
    }

    #[test]
    fn errors_unknown_codes_and_contradictions_are_usage_errors() {
        assert_eq!(
            Levels::parse(&["E0301".into()], &[]).unwrap_err(),
            "`--allow E0301`: only warnings can be allowed or denied, and `E0301` is an error"
        );
        assert_eq!(
            Levels::parse(&["W0010x".into()], &[]).unwrap_err(),
            "`--allow W0010x`: no such code; did you mean `W0001`?"
        );
        assert!(Levels::parse(&["W0001".into()], &["w0001".into()])
            .unwrap_err()
            .contains("both allowed and denied"));
    }
}
