def unique(items):
    """The items without repeats, in the order each was first seen."""
    return list(dict.fromkeys(items))


def flatten(nested):
    return [x for inner in nested for x in inner]
