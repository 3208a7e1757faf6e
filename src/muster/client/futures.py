"""A light thread-safe future for per-record delivery results.

`concurrent.futures.Future` builds a Condition (and an RLock) per instance,
which costs more than the rest of `produce()`; a producer makes one future
per record. This one allocates a waiter Event only when someone actually
blocks on an unfinished result. Same surface: done, result, exception,
add_done_callback."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from muster.client.errors import KafkaTimeoutError

T = TypeVar("T")
_LOCK = threading.Lock()
_PENDING, _RESULT, _ERROR = 0, 1, 2


class DeliveryFuture(Generic[T]):
    __slots__ = ("_callbacks", "_event", "_state", "_value")

    def __init__(self) -> None:
        self._state = _PENDING
        self._value: Any = None
        self._callbacks: list[Callable[[DeliveryFuture[T]], Any]] | None = None
        self._event: threading.Event | None = None

    def done(self) -> bool:
        return self._state != _PENDING

    def _finish(self, state: int, value: Any) -> None:
        with _LOCK:
            if self._state != _PENDING:
                return
            self._state, self._value = state, value
            callbacks, event = self._callbacks, self._event
            self._callbacks = None
        if event is not None:
            event.set()
        for callback in callbacks or ():
            callback(self)

    def set_result(self, value: T) -> None:
        self._finish(_RESULT, value)

    def set_exception(self, error: BaseException) -> None:
        self._finish(_ERROR, error)

    def add_done_callback(self, fn: Callable[[DeliveryFuture[T]], Any]) -> None:
        with _LOCK:
            if self._state == _PENDING:
                if self._callbacks is None:
                    self._callbacks = []
                self._callbacks.append(fn)
                return
        fn(self)

    def _wait(self, timeout: float | None) -> None:
        if self._state != _PENDING:
            return
        with _LOCK:
            if self._state == _PENDING and self._event is None:
                self._event = threading.Event()
            event = self._event
        if event is not None and not event.wait(timeout):
            raise KafkaTimeoutError(f"no delivery result within {timeout}s")

    def result(self, timeout: float | None = None) -> T:
        self._wait(timeout)
        if self._state == _ERROR:
            raise self._value
        return self._value  # type: ignore[no-any-return]

    def exception(self, timeout: float | None = None) -> BaseException | None:
        self._wait(timeout)
        return self._value if self._state == _ERROR else None


def settle_many(
    futures: Iterable[DeliveryFuture[Any]],
    values: Iterable[Any] | None = None,
    error: BaseException | None = None,
    *,
    same: Any = None,
) -> None:
    """Resolve many futures under one lock acquisition: each with its value
    from `values`, or all with `same` (when `values` is None), or all with
    `error`. Already finished ones are left alone. Waiters are woken and
    callbacks run after the lock is released."""
    fired: list[tuple[DeliveryFuture[Any], Any, Any]] = []
    with _LOCK:
        if error is not None:
            for f in futures:
                if f._state == _PENDING:
                    f._state, f._value = _ERROR, error
                    if f._callbacks is not None or f._event is not None:
                        fired.append((f, f._callbacks, f._event))
                        f._callbacks = None
        elif values is None:
            for f in futures:
                if f._state == _PENDING:
                    f._state, f._value = _RESULT, same
                    if f._callbacks is not None or f._event is not None:
                        fired.append((f, f._callbacks, f._event))
                        f._callbacks = None
        else:
            for f, value in zip(futures, values, strict=True):
                if f._state == _PENDING:
                    f._state, f._value = _RESULT, value
                    if f._callbacks is not None or f._event is not None:
                        fired.append((f, f._callbacks, f._event))
                        f._callbacks = None
    for f, callbacks, event in fired:
        if event is not None:
            event.set()
        for callback in callbacks or ():
            callback(f)
