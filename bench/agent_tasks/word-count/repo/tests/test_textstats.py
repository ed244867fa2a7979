from textstats import count_lines, count_words


def test_simple():
    assert count_words("one two three") == 3


def test_empty():
    assert count_words("") == 0


def test_lines():
    assert count_lines("a\nb") == 2
