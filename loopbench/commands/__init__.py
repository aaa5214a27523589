"""The work behind each `loopbench` command, one module per command or group of commands.

`loopbench/cli.py` is the table: the typer app, every option and its help text, and a thin wrapper per command
that calls a plain function here. These modules raise `BadInput` for anything wrong with the input; the command
line turns it into the exit-2 message in one place (`loopbench.cli`). What each module holds:

- `common`: the two consoles, loading and selecting scenarios, the results a command reads, writing the reports
- `exit_policy`: the exit code of `loopbench run` (and the codes every command shares)
- `run`: `loopbench run` (with `--loop-cmd` and `--shard`)
- `merge`: shards (or results run alike) joined into one results set (the checks are harness/results/merge.py)
- `results`: `report`, `show` and `diff`, the commands that read a results set
- `scenarios`: `list`, `validate` and `schema`, the commands that describe the suite
- `serve`: the scripted model server standalone
- `matrix`: the suite across framework releases (the work is `loopbench.matrix`)
- `bench`: loopbench's own cost (the work is `loopbench.bench`)
"""
