"""The example agent with a chosen ``max_concurrent_requests``, on stdio.

``python limited_agent.py LIMIT BACKEND``; used by test_admission.py.
"""

from __future__ import annotations

import sys

import acp_fast as acp
from acp_fast.examples.agent import ExampleAgent


class LimitedAgent(ExampleAgent):
    max_concurrent_requests = int(sys.argv[1])


if __name__ == "__main__":
    acp.run_agent(LimitedAgent(), backend=sys.argv[2])
