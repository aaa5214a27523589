"""loopbench: how does my agent framework's loop really stop?

One distribution, one import namespace. The folders of the repository are its subpackages:
`loopbench.harness` (harness/: the core), `loopbench.adapters` (adapters/: one module per framework),
`loopbench.reports` (reports/: builders over run records), `loopbench.scenarios` (scenarios/: the suite, as
package data). This package's own modules are the composition root: `cli` and `bench`, the only places that
import both the harness and the reports.
"""

from importlib import metadata

try:
    __version__ = metadata.version("loopbench")
except metadata.PackageNotFoundError:  # imported from a checkout that was never installed
    __version__ = "0+unknown"
