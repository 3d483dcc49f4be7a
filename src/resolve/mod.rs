//! Resolution: names, `use`, the stdlib prelude and inheritance.
