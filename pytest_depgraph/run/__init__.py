"""The run: the walk in one process here, and on pytest-xdist's controller and workers
(:mod:`.xdist`).

Outcomes, durations, values between tests, shards of a session, and the session's state.
"""
