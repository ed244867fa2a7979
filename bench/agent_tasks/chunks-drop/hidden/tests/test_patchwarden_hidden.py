from batching import chunked


def test_last_short_chunk_kept():
    assert chunked(list(range(7)), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert chunked([1, 2], 5) == [[1, 2]]
    assert chunked([1, 2, 3, 4], 2) == [[1, 2], [3, 4]]
