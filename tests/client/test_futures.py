from __future__ import annotations

import threading

import pytest

from muster.client.errors import KafkaError, KafkaTimeoutError
from muster.client.futures import DeliveryFuture


def test_result_callbacks_and_errors():
    f: DeliveryFuture[int] = DeliveryFuture()
    seen: list = []
    f.add_done_callback(lambda fut: seen.append(fut.result()))
    assert not f.done()
    with pytest.raises(KafkaTimeoutError):
        f.result(0.01)
    f.set_result(5)
    f.set_result(6)  # only the first outcome counts
    assert f.done() and f.result() == 5 and seen == [5] and f.exception() is None
    f.add_done_callback(lambda fut: seen.append("late"))
    assert seen == [5, "late"]
    g: DeliveryFuture[int] = DeliveryFuture()
    g.set_exception(KafkaError("boom"))
    with pytest.raises(KafkaError):
        g.result()
    assert isinstance(g.exception(), KafkaError)


def test_waiter_wakes_across_threads():
    f: DeliveryFuture[str] = DeliveryFuture()
    threading.Timer(0.05, f.set_result, args=("ok",)).start()
    assert f.result(5) == "ok"
