"""Fuzzing harnesses for acp_fast (see fuzz/README.md)."""
