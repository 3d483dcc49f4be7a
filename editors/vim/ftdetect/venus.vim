" .venus scenario files for venusc.
autocmd BufRead,BufNewFile *.venus setfiletype venus
