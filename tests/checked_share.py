"""The share of a property test's examples that it checked.

A property test that gives up on some examples (a generated query the
service refuses with a 400, which the oracle refuses too) would pass
having checked nothing if its generators made only such examples. So it
counts them, and fails when it checked fewer than the share it states.
"""


class CheckedShare:
    """Counts the examples a hypothesis test ran and those it gave up on;
    ``assert_enough()`` fails unless at least ``least`` (a fraction) of
    them were checked."""

    def __init__(self, least):
        self.least = least
        self.ran = 0
        self.given_up = 0

    def example(self):
        """An example begins (call first in the test's body)."""
        self.ran += 1

    def give_up(self):
        """The example just begun is not checked."""
        self.given_up += 1

    @property
    def checked(self):
        return self.ran - self.given_up

    def assert_enough(self):
        assert self.ran and self.checked >= self.least * self.ran, (
            '%d of %d examples checked, fewer than %.0f%%: the generators '
            'make too many that are given up on' % (
                self.checked, self.ran, 100 * self.least))
        print('%d of %d examples checked (at least %.0f%% must be)'
              % (self.checked, self.ran, 100 * self.least))
