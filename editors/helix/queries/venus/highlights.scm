; Helix highlights for `.venus` files: the patterns of
; editors/tree-sitter-venus/queries/highlights.scm with Helix's scope names.

[
  "use"
  "model"
  "gpu"
  "cluster"
  "plan"
  "scenario"
] @keyword

(item
  key: (key) @variable.other.member)

(definition
  name: (name) @type)

(definition
  base: (name) @type)

(item
  value: (name) @variable)

(list
  (name) @variable)

(constant) @constant.builtin

(number) @constant.numeric

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
