"""`loopbench.reports` (this folder, mapped onto that import name): everything built from RunRecords after a
run — loading results files, cells and their representative runs, the tables, the scorecard, severities,
claims, a baseline's changes, `loopbench diff`, `show`, JUnit XML, pictures, the version matrix's drift
report, and the reports themselves (`build.py`: report.md, report.html, matrix.csv, summary.json). It reads
the core's records (`loopbench.harness`), never the runner or the adapters; reports/README.md lists the
modules."""
