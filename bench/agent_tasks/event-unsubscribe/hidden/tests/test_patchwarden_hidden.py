from events import EventBus


def test_once_handler_does_not_hide_the_next():
    bus, seen = EventBus(), []
    bus.subscribe_once("saved", lambda x: seen.append(("once", x)))
    bus.subscribe("saved", lambda x: seen.append(("always", x)))
    bus.emit("saved", 1)
    bus.emit("saved", 2)
    assert seen == [("once", 1), ("always", 1), ("always", 2)]


def test_unsubscribing_another_during_emit():
    bus, seen = EventBus(), []

    def first(x):
        seen.append("first")
        bus.unsubscribe("e", first)

    bus.subscribe("e", first)
    bus.subscribe("e", lambda x: seen.append("second"))
    bus.subscribe("e", lambda x: seen.append("third"))
    bus.emit("e", 0)
    assert seen == ["first", "second", "third"]
