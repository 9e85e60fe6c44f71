" Emmy tensor programs
autocmd BufRead,BufNewFile *.emmy setfiletype emmy
