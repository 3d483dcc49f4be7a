//! Completion: the candidates for the word at (or about to be typed at) the cursor.
//!
//! Input: a [`Session`], a file and a byte offset. Output: [`Completion`]s in a fixed order: the
//! top-level words; the keys of the enclosing block (schema order); the names of definitions of
//! the kind a reference slot takes (sorted, a user definition shadowing the stdlib's) or the
//! words of an enumeration, then the block's keys when the slot may stay empty.
//!
//! Invariants: reads only the database; the cursor's role comes from [`super::cursor`].

use std::collections::BTreeMap;

use super::cursor::{self, Role};
use super::{Completion, CompletionKind};
use venus_diag::diag::FileId;
use venus_front::db::Definition;
use venus_front::Session;
use venus_syntax::syntax::schema::{self, ArgType, BlockKind, KeySig};

/// The words that start a top-level declaration, in the order they are offered.
const TOP_WORDS: [&str; 6] = ["model", "gpu", "cluster", "plan", "scenario", "use"];

/// The completions at byte `offset` of `file`.
pub fn completion(session: &Session, file: FileId, offset: usize) -> Vec<Completion> {
    let text = session.db().file_text(file);
    let parsed = venus_syntax::syntax::parse(&text, FileId::default());
    let cursor = cursor::cursor_in(&text, &parsed.roles, offset);
    // Keys already set in the block are not offered again (a repeatable key such as `dim`
    // or `allow` is).
    let set: Vec<&str> = cursor.block.map_or_else(Vec::new, |b| {
        cursor::keys_in_block(&text, &parsed.roles, b, cursor.word)
    });
    let keys = |items: &mut Vec<Completion>, block: BlockKind| {
        items.extend(
            schema::keys(block)
                .iter()
                .filter(|k| k.repeatable || !set.contains(&k.key))
                .map(key),
        );
    };
    let mut items = Vec::new();
    match cursor.role {
        Role::TopLevel => {
            for word in TOP_WORDS {
                items.push(Completion {
                    label: word.into(),
                    kind: CompletionKind::Keyword,
                    detail: None,
                    doc: None,
                });
            }
        }
        Role::Key(block) => keys(&mut items, block),
        Role::FlagWord { block, .. } => {
            items.extend(schema::FLAG_WORDS.iter().map(|w| word(w)));
            keys(&mut items, block);
        }
        Role::Arg {
            block,
            sig,
            index,
            slot,
            optional,
        } => {
            match slot {
                ArgType::Ref(kind) => {
                    let program = session.db().program(file);
                    let mut names: BTreeMap<String, &Definition> = BTreeMap::new();
                    for d in &program.definitions {
                        if d.kind != kind {
                            continue;
                        }
                        if let Some(n) = &d.name {
                            // A user definition shadows the stdlib's.
                            let keep = names.get(n).is_none_or(|old| old.stdlib && !d.stdlib);
                            if keep {
                                names.insert(n.clone(), d);
                            }
                        }
                    }
                    for (name, d) in names {
                        items.push(Completion {
                            label: name,
                            kind: CompletionKind::Reference,
                            detail: Some(format!(
                                "{} in {}",
                                d.kind.keyword(),
                                session.db().file_name(d.loc.file)
                            )),
                            doc: None,
                        });
                    }
                }
                ArgType::Enum(words) => items.extend(words.iter().map(|w| word(w))),
                // A value (`seq |`): the key table's example for the slot, never a key.
                _ => items.extend(example_value(sig, index, slot)),
            }
            if optional {
                keys(&mut items, block);
            }
        }
        Role::Nothing => {}
    }
    items
}

/// The example value of argument `index` of `sig` (`seq` → `4096`), from the key table: the
/// word of its example at that position, or the slot type's own example.
fn example_value(sig: &'static KeySig, index: usize, slot: ArgType) -> Option<Completion> {
    let value = sig
        .example
        .and_then(|e| e.split_whitespace().nth(index))
        .map(str::to_string)
        .or_else(|| slot.example().map(str::to_string))?;
    Some(Completion {
        label: value,
        kind: CompletionKind::Word,
        detail: Some(venus_front::ty::check::signature(sig)),
        doc: Some(format!("example value: {}", sig.doc)),
    })
}

fn key(sig: &'static KeySig) -> Completion {
    Completion {
        label: sig.key.into(),
        kind: if sig.is_flag() {
            CompletionKind::Keyword
        } else {
            CompletionKind::Key
        },
        detail: Some(venus_front::ty::check::signature(sig)),
        doc: Some(sig.doc.into()),
    }
}

fn word(w: &str) -> Completion {
    Completion {
        label: w.into(),
        kind: CompletionKind::Word,
        detail: None,
        doc: None,
    }
}
