"""`helpers.records.cancellation`: the flag one thread sets and a run checks, its callbacks, and the current
cancellation of a context (the runs that stop on it are tested in application/ and components/rankers/)."""

import asyncio
import threading

import pytest

from helpers.records.cancellation import DEFAULT_REASON, Cancellation, RunCancelled, cancelling, current_cancellation


def test_check_passes_until_cancelled_then_raises_with_the_first_reason() -> None:
    cancel = Cancellation()
    cancel.check()
    assert not cancel.cancelled and cancel.reason == DEFAULT_REASON
    cancel.cancel("the client disconnected")
    cancel.cancel("the server is stopping")  # a second cancel changes nothing
    assert cancel.cancelled and cancel.reason == "the client disconnected"
    with pytest.raises(RunCancelled, match="^the run was cancelled: the client disconnected$"):
        cancel.check()


def test_callbacks_run_once_in_the_cancelling_thread() -> None:
    cancel, calls = Cancellation(), []
    cancel.on_cancel(lambda: calls.append(threading.get_ident()))
    thread = threading.Thread(target=lambda: (cancel.cancel(), cancel.cancel()))
    thread.start()
    thread.join()
    assert calls == [thread.ident]


def test_a_callback_registered_after_the_cancel_runs_at_once() -> None:
    cancel, calls = Cancellation(), []
    cancel.cancel()
    forget = cancel.on_cancel(lambda: calls.append("late"))
    assert calls == ["late"]
    forget()  # nothing left to unregister: a no-op
    assert calls == ["late"]


def test_an_unregistered_callback_is_not_called() -> None:
    """An LLM call that got its first token unregisters its stop: a later cancel must not stop the next call."""
    cancel, calls = Cancellation(), []
    forget = cancel.on_cancel(lambda: calls.append("first"))
    cancel.on_cancel(lambda: calls.append("second"))
    forget()
    forget()  # twice is harmless
    cancel.cancel()
    assert calls == ["second"]


def test_a_callback_may_unregister_itself_while_the_cancel_runs_it() -> None:
    """The callbacks run outside the lock: one that unregisters (or registers) does not deadlock."""
    cancel, calls = Cancellation(), []
    forget = cancel.on_cancel(lambda: (calls.append("ran"), forget(), cancel.on_cancel(lambda: calls.append("new"))))
    thread = threading.Thread(target=cancel.cancel, daemon=True)
    thread.start()
    thread.join(timeout=5)
    assert not thread.is_alive() and calls == ["ran", "new"]


def test_the_current_cancellation_is_set_inside_the_block_only_and_nests() -> None:
    outer, inner = Cancellation(), Cancellation()
    assert current_cancellation() is None
    with cancelling(outer) as given:
        assert given is outer and current_cancellation() is outer
        with cancelling(inner):
            assert current_cancellation() is inner
        with cancelling(None):  # a run without one: calls inside are not stopped by the outer one
            assert current_cancellation() is None
        assert current_cancellation() is outer
    assert current_cancellation() is None


def test_the_current_cancellation_is_reset_when_the_block_raises() -> None:
    with pytest.raises(RunCancelled), cancelling(Cancellation()) as cancel:
        assert cancel is not None
        cancel.cancel()
        cancel.check()
    assert current_cancellation() is None


def test_a_thread_started_with_the_context_copied_sees_it_and_a_plain_thread_does_not() -> None:
    """What the HTTP layer relies on: Starlette's thread pool and ``asyncio.to_thread`` copy the context."""
    cancel = Cancellation()

    async def both() -> tuple[Cancellation | None, Cancellation | None]:
        with cancelling(cancel):
            copied = await asyncio.to_thread(current_cancellation)
            plain: list[Cancellation | None] = []
            thread = threading.Thread(target=lambda: plain.append(current_cancellation()))
            thread.start()
            thread.join()
        return copied, plain[0]

    assert asyncio.run(both()) == (cancel, None)
