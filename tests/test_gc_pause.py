"""Large imports with the cyclic collector paused: paused inside the block, as it was afterwards."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from tpu_runtime.gc_pause import gc_paused


@pytest.fixture
def collector_enabled() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


@pytest.mark.usefixtures("collector_enabled")
def test_paused_inside_and_restored_after_even_on_error() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner block leaves the outer one paused
        raise RuntimeError("boom")
    assert gc.isenabled()


@pytest.mark.usefixtures("collector_enabled")
def test_a_collector_the_caller_disabled_stays_disabled() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_enabled")
def test_cycles_made_in_the_block_go_with_the_next_automatic_collection() -> None:
    class Node:
        other: object = None

    with gc_paused():
        a, b = Node(), Node()
        a.other, b.other = b, a
        gone = weakref.ref(a)
        del a, b
    kept = [[] for _ in range(gc.get_threshold()[0] * 3)]  # new containers: automatic collections run
    del kept
    assert gone() is None
