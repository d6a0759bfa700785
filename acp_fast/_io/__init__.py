"""The I/O layer: event-loop backends and channels (byte pipes).

Below the connection (``_async``) and the transports (``_transports``), above
the sans-IO core: it imports neither.
"""
