"""The Node piece every npm framework's adapter is built on: the shipped Node project and its install (`home`), the
line protocol's models (`protocol`; its Node side is `protocol.mjs`, README.md describes both), the driver
process (`driver`) and the adapter base that runs segments over it (`adapter`)."""
