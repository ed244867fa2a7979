from textstats import count_words


def test_whitespace_runs():
    assert count_words("hello  world") == 2
    assert count_words("  a\tb\n c  ") == 3
    assert count_words("   ") == 0
