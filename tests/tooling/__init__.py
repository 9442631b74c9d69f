"""Tooling: the command line, bench, CI, docs, settings, device discovery and the test
plumbing."""
