"""The async layer: connections, handlers and requests, on anyio."""
