"""Class-based agents and clients over the typed schema (see agent.py, client.py)."""
