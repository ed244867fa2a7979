from events import EventBus


def test_emit_calls_handlers_in_order():
    bus, seen = EventBus(), []
    bus.subscribe("saved", lambda x: seen.append(("a", x)))
    bus.subscribe("saved", lambda x: seen.append(("b", x)))
    bus.emit("saved", 1)
    assert seen == [("a", 1), ("b", 1)]
