# Generates `megatron_flags.rs`: every command-line flag Megatron-LM's
# `megatron/training/arguments.py` defines, with its arity and default.
#
#     python3 crates/venus-syntax/src/syntax/megatron_flags.py MEGATRON_LM_DIR \
#         > crates/venus-syntax/src/syntax/megatron_flags.rs
#
# MEGATRON_LM_DIR is a checkout of NVIDIA/Megatron-LM. The script does not import Megatron (it
# needs torch): it reads the sources with `ast`. Two kinds of definition are collected:
# - every `*.add_argument('--flag', ...)` call of arguments.py (its `action` and `nargs` give
#   the arity);
# - every `ArgumentGroupFactory(Config, exclude=[...])` of arguments.py: the fields of that
#   dataclass (and of its base classes) become flags as `megatron/training/argument_utils.py`
#   builds them: `--field-name`; a `bool` field is `store_true` when its default is `False`,
#   else `store_false` spelt `--no-field-name` and `--disable-field-name`; a `list[...]` field
#   takes one or more values; `argparse_meta` in the field's metadata overrides the names,
#   `nargs`, `action` and default.
import ast
import pathlib
import subprocess
import sys

root = pathlib.Path(sys.argv[1])
arguments = root / "megatron/training/arguments.py"
tree = ast.parse(arguments.read_text())

flags = {}  # name -> (arity, default)


def const(node):
    try:
        return ast.literal_eval(node)
    except Exception:
        return None


def default_text(node):
    if node is None:
        return "None"
    return ast.unparse(node)


def arity_of(action, nargs):
    if action in ("store_true", "store_false", "store_const", "count", "help", "version"):
        return "Switch"
    if nargs in ("+", "*") or isinstance(nargs, int) and nargs > 1:
        return "List"
    if nargs == "?":
        return "Optional"
    return "Value"


def add(name, arity, default):
    flags.setdefault(name, (arity, default))


# 1. add_argument calls.
for node in ast.walk(tree):
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        continue
    if node.func.attr != "add_argument":
        continue
    names = [const(a) for a in node.args]
    names = [n for n in names if isinstance(n, str) and n.startswith("-")]
    kw = {k.arg: k.value for k in node.keywords}
    action = const(kw["action"]) if "action" in kw else None
    nargs = const(kw["nargs"]) if "nargs" in kw else None
    default = kw.get("default")
    if default is None and action == "store_true":
        text = "False"
    elif default is None and action == "store_false":
        text = "True"
    else:
        text = default_text(default)
    for n in names:
        add(n, arity_of(action, nargs), text)

# 2. ArgumentGroupFactory dataclasses.
sources = {}
for path in (root / "megatron").rglob("*.py"):
    try:
        module = ast.parse(path.read_text())
    except Exception:
        continue
    for item in module.body:
        if isinstance(item, ast.ClassDef):
            sources.setdefault(item.name, item)


def fields_of(name):
    cls = sources[name]
    out = []
    for base in cls.bases:
        if isinstance(base, ast.Name) and base.id in sources:
            out += fields_of(base.id)
    for item in cls.body:
        if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
            out.append(item)
    return out


def field_parts(item):
    """(default node, metadata dict node, init) of a dataclass field."""
    value = item.value
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "field"
    ):
        kw = {k.arg: k.value for k in value.keywords}
        init = const(kw["init"]) if "init" in kw else True
        default = kw.get("default")
        if default is None and "default_factory" in kw:
            f = kw["default_factory"]
            default = ast.parse("[]").body[0].value if ast.unparse(f) == "list" else f
        return default, kw.get("metadata"), init
    return value, None, True


def is_kind(annotation, kind):
    text = ast.unparse(annotation)
    if kind == "bool":
        return text in ("bool", "Optional[bool]", "bool | None", "Optional[bool] ")
    return text.startswith(("list[", "List[", "Optional[list[", "Optional[List["))


for node in ast.walk(tree):
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "ArgumentGroupFactory"
    ):
        continue
    cls = node.args[0].id
    kw = {k.arg: k.value for k in node.keywords}
    exclude = set()
    if "exclude" in kw:
        excl = kw["exclude"]
        if isinstance(excl, ast.Name):
            # `exclude=exclude`: the list assigned to that name in the enclosing function.
            for f in ast.walk(tree):
                if isinstance(f, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == excl.id for t in f.targets
                ):
                    exclude |= set(const(f.value) or [])
        else:
            exclude |= set(const(excl) or [])
    seen = set()
    for item in fields_of(cls):
        name = item.target.id
        if name in exclude or name in seen or "ClassVar" in ast.unparse(item.annotation):
            continue
        seen.add(name)
        default, metadata, init = field_parts(item)
        if init is False:
            continue
        meta = {}
        if metadata is not None:
            for k, v in zip(metadata.keys, metadata.values):
                if const(k) == "argparse_meta" and isinstance(v, ast.Dict):
                    meta = {const(mk): mv for mk, mv in zip(v.keys, v.values)}
        dflt = const(default) if default is not None else None
        if is_kind(item.annotation, "bool") and "type" not in meta:
            action = "store_true" if dflt is False else "store_false"
        else:
            action = None
        if "action" in meta:
            action = const(meta["action"])
        nargs = "+" if is_kind(item.annotation, "list") else None
        if "nargs" in meta:
            nargs = const(meta["nargs"])
        dashed = name.replace("_", "-")
        names = ["--" + dashed]
        if action == "store_false":
            names = ["--no-" + dashed, "--disable-" + dashed]
        if "arg_names" in meta:
            names = const(meta["arg_names"])
        text = default_text(meta["default"]) if "default" in meta else default_text(default)
        if action == "store_true" and text == "None":
            text = "False"
        for n in names:
            add(n, arity_of(action, nargs), text)

commit = subprocess.run(
    ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True
).stdout.strip()


def rust_str(s):
    s = " ".join(s.split())
    if len(s) > 60:
        s = s[:57] + "..."
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


print(
    f"""//! Every command-line flag of Megatron-LM's `megatron/training/arguments.py` at commit
//! `{commit}` (NVIDIA/Megatron-LM main): its name, how many values it takes and
//! its default as the source writes it. Generated; do not edit. To regenerate:
//!
//! ```text
//! python3 crates/venus-syntax/src/syntax/megatron_flags.py MEGATRON_LM_DIR \\
//!     > crates/venus-syntax/src/syntax/megatron_flags.rs
//! ```
//!
//! Input: nothing (a constant). Output: [`FLAGS`], sorted by name, {len(flags)} flags.
//! Readers: the Megatron importer (a flag not in the list is E0608, with the nearest one as the
//! "did you mean"; a listed flag venusc does not map is named in W0012) and the emitter.
//! Invariants: sorted and without duplicates (a test checks), so [`flag`] is a binary search.

/// How many values a flag takes (argparse's `action` and `nargs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Arity {{
    /// `store_true` / `store_false`: no value.
    Switch,
    /// One value.
    Value,
    /// `nargs='?'`: zero or one value.
    Optional,
    /// `nargs='+'` / `'*'`: values up to the next flag.
    List,
}}

/// One flag of `arguments.py`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flag {{
    pub name: &'static str,
    pub arity: Arity,
    /// The default as `arguments.py` writes it (a Python expression, cut at 60 characters).
    pub default: &'static str,
}}

/// The commit of NVIDIA/Megatron-LM the list was generated from.
pub const COMMIT: &str = "{commit}";

const fn f(name: &'static str, arity: Arity, default: &'static str) -> Flag {{
    Flag {{
        name,
        arity,
        default,
    }}
}}

use Arity::*;

/// Every flag, sorted by name.
pub const FLAGS: &[Flag] = &["""
)
for name in sorted(flags):
    arity, default = flags[name]
    print(f"    f({rust_str(name)}, {arity}, {rust_str(default)}),")
print(
    """];

/// The flag named `name` (with its leading `--`), if `arguments.py` defines it.
pub fn flag(name: &str) -> Option<&'static Flag> {
    FLAGS
        .binary_search_by(|f| f.name.cmp(name))
        .ok()
        .map(|i| &FLAGS[i])
}"""
)
