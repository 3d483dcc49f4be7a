" Buffer settings for .venus files: `#` comments, `< >` blocks as matched pairs.
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=#\ %s
setlocal comments=:#
setlocal matchpairs+=<:>
setlocal iskeyword=@,48-57,_
setlocal expandtab shiftwidth=2 softtabstop=2

let b:undo_ftplugin = 'setlocal commentstring< comments< matchpairs< iskeyword< expandtab< shiftwidth< softtabstop<'
