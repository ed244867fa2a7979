def between(values, low, high):
    """The values v with low <= v <= high, in order."""
    return [v for v in values if low <= v < high]


def above(values, threshold):
    return [v for v in values if v > threshold]
