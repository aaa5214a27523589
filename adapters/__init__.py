"""`loopbench.adapters` (this folder, mapped onto that import name): one module per framework adapter, each
translating the neutral scenario into its framework's native controls and reporting what happened, plus the
glue they share (`kit`) and the bring-your-own-loop adapter (`loop_command`). Framework SDKs are imported
lazily, inside the adapter, so a missing one is reported as unavailable rather than breaking the import."""
