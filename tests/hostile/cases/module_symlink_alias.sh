# expect-exit: 0
# reject-output: E011|defined twice|internal error|Aborted
# Guards against one file imported under two names (a symlink alias) being loaded twice.
printf 'op g(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n' > real.emmy
ln -s real.emmy alias.emmy
printf 'import real;\nimport alias;\nop f(x: f32[N]) -> (y: f32[N]) {\n  y[i] = g(x)[i];\n}\n' > main.emmy
"$EMMYC" check main.emmy || exit 1
# The main file reached through the symlink, importing its own real name.
printf 'import main;\nop h(x: f32[N]) -> (y: f32[N]) {\n  y[i] = x[i];\n}\n' > two.emmy
ln -s two.emmy link.emmy
exec "$EMMYC" check link.emmy
