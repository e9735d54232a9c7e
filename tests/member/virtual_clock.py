"""What the member harnesses (``member_harness``, ``consumer_member_harness``) share:
virtual time that advances from deadline to deadline, and the invariant error."""

from __future__ import annotations


class InvariantViolation(AssertionError):
    pass


class VirtualClock:
    """``run_until`` / ``run_for`` over a harness's ``_settle`` (deliver everything that is
    due now) and ``_next_deadline`` (the earliest thing that will happen)."""

    now: int

    def _settle(self) -> None:
        raise NotImplementedError

    def _next_deadline(self) -> int | None:
        raise NotImplementedError

    def run_until(self, end_ms: int) -> None:
        """Advance virtual time to ``end_ms``, acting on every deadline on the way."""
        while True:
            self._settle()
            deadline = self._next_deadline()
            if deadline is None:
                break
            # a deadline already due after settling means "again, a moment later"
            step = max(deadline, self.now + 1)
            if step > end_ms:
                break
            self.now = step
        if end_ms > self.now:
            self.now = end_ms
            self._settle()

    def run_for(self, duration_ms: int) -> None:
        self.run_until(self.now + duration_ms)
