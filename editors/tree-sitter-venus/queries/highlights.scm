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

; Names used as values: references (`gpu h100_sxm`) and new dim names (`dim nvlink ...`).
(item
  value: (name) @variable)

(list
  (name) @variable)

; Enum words of the key table: topologies, schedules, recompute, precision, `on`/`off`.
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
