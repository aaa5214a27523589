"""The built-in scenario suite: the YAML files beside this one are package data (see README.md)."""
