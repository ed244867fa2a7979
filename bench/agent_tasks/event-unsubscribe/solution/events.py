from collections import defaultdict


class EventBus:
    def __init__(self):
        self.handlers = defaultdict(list)

    def subscribe(self, name, handler):
        self.handlers[name].append(handler)

    def unsubscribe(self, name, handler):
        self.handlers[name].remove(handler)

    def subscribe_once(self, name, handler):
        def once(*args, **kwargs):
            self.unsubscribe(name, once)
            return handler(*args, **kwargs)

        self.subscribe(name, once)

    def emit(self, name, *args, **kwargs):
        for handler in list(self.handlers[name]):
            handler(*args, **kwargs)
