"""loopbench core (`loopbench.harness`): scenarios, the scripted model server, the tool ledger, judging, runs
and results. The core never imports a framework SDK or the reports; adapters depend on it, never the reverse.

Its layers, each importing only from those above it in this list (tests/test_layers.py checks it):

1. the shared vocabulary, in this folder: `record` (the run record and its closed vocabularies), `models` (the
   suite's model per provider and every model's price), `errors`
   (the one exception root), `markers` (scripted output markers), `own_work` (loopbench's own CPU);
2. `scenario/`: what a scenario file may say, and loading it;
3. `model_server/` (the scripted model over the providers' wire protocols), `ledger/` (tool-call ground
   truth), `judge/` (a task's evidence into a record, pure), `results/` (results files and their history),
   and `adapter` (the adapter contract and the registry, in this folder): each from layers 1-2 only;
4. `run/`: the runner, its worker processes and their schedule, over everything above.
"""
