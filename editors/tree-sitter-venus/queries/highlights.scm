; Highlights for `.venus` files. Capture names are the common set understood by the tree-sitter
; CLI, Neovim and Helix themes.

; Top-level declarations: `use` and the definition kinds.
[
  "use"
  "model"
  "gpu"
  "cluster"
  "plan"
  "scenario"
] @keyword

; Keys of items (`hidden`, `dim`, and `model`/`gpu`/`cluster`/`plan` inside a block).
(item
  key: (key) @property)

; The names a definition introduces and inherits from.
(definition
  name: (name) @type)

(definition
  base: (name) @type)

; Names used as values: references (`gpu h100_sxm`), new dim names (`dim nvlink ...`) and the
; dim an `algo` applies to (`algo ib tree`).
(item
  value: (name) @variable)

(list
  (name) @variable)

; Enum words of the key table: topologies, collective algorithms, schedules, recompute,
; precision, attention kernels, `on`/`off`.
(constant) @constant.builtin

(number) @number

; Units are the dimensions of venusc's type system.
(unit) @type.builtin

(string) @string

(comment) @comment

[
  "<"
  ">"
  "["
  "]"
] @punctuation.bracket

[
  ":"
  ";"
] @punctuation.delimiter
