" Syntax tests for editors/vim: `vim -Nu NONE -i NONE -es -S editors/vim/test/run.vim`.
"
" Opens every editors/vim/test/*.venus with this directory's plugin on 'runtimepath', checks
" that ftdetect set the filetype, then checks each assertion line: `#   ^^^ venusKey` asserts
" that the characters above the carets (on the closest line that is not an assertion) have
" that syntax group. Prints one line per file and `N passed, N failed`; exits non-zero on a
" failure. Vim in -es mode prints nothing itself: the lines go to $VENUS_VIM_OUT when set.

let s:here = expand('<sfile>:p:h')
let s:plugin = fnamemodify(s:here, ':h')
execute 'set runtimepath^=' . fnameescape(s:plugin)
filetype plugin on
syntax on

let s:out = []
let s:passed = 0
let s:failed = 0

function! s:Check(file) abort
  execute 'silent edit ' . fnameescape(a:file)
  if &filetype !=# 'venus'
    call add(s:out, a:file . ': filetype is "' . &filetype . '", expected "venus"')
    let s:failed += 1
    return
  endif
  let l:target = 0
  for l:lnum in range(1, line('$'))
    let l:text = getline(l:lnum)
    let l:m = matchlist(l:text, '^#\(\s*\)\(\^\+\)\s\+\(\w\+\)\s*$')
    if empty(l:m)
      let l:target = l:lnum
      continue
    endif
    let l:first = len(l:m[1]) + 2
    for l:col in range(l:first, l:first + len(l:m[2]) - 1)
      let l:group = synIDattr(synID(l:target, l:col, 1), 'name')
      if l:group ==# l:m[3]
        let s:passed += 1
      else
        let s:failed += 1
        call add(s:out, printf('%s:%d:%d: expected %s, found "%s" in: %s',
              \ fnamemodify(a:file, ':t'), l:target, l:col, l:m[3], l:group, getline(l:target)))
      endif
    endfor
  endfor
  call add(s:out, 'checked ' . fnamemodify(a:file, ':t'))
endfunction

for s:file in sort(glob(s:here . '/*.venus', 0, 1))
  call s:Check(s:file)
endfor
call add(s:out, printf('vim syntax: %d passed, %d failed', s:passed, s:failed))
call writefile(s:out, empty($VENUS_VIM_OUT) ? '/dev/stdout' : $VENUS_VIM_OUT)
if s:failed > 0 || s:passed == 0
  cquit
endif
qall!
