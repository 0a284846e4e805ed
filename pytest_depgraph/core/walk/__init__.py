"""The parallel walk: the walker's state machine, the dispatcher and its rules, the books of
shared resources and pinned groups, and the groups that run whole."""
