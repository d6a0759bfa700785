"""Runnable examples shipped with acp_fast (used by ``acp-fast demo``)."""
