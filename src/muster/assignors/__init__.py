"""Partition assignors: pure functions over plain data, shared by muster's
client (the classic-protocol leader) and broker. The registry and the
per-assignor subscription rules are in `muster.assignors.registry`; this
package module imports nothing, so that importing one assignor (or the
shared `model`) does not import them all, and no module of the package
imports one that imports it back (tests/core/test_purity.py).
"""
