"""The run: the walk in one process, and on pytest-xdist's controller and workers.

Outcomes, durations, values between tests, shards of a session, and the session's state.
"""
