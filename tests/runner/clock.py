"""A clock the tests move by hand, for sessions timed without waiting."""


class FakeClock:
    """Returns ``now`` when called; a test advances it."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now
