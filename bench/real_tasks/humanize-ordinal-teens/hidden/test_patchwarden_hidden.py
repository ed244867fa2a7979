from humanize import ordinal


def test_teens_take_th():
    assert [ordinal(n) for n in (11, 12, 13, 113, 1013)] == [
        "11th",
        "12th",
        "13th",
        "113th",
        "1013th",
    ]


def test_other_endings_are_unchanged():
    assert [ordinal(n) for n in (1, 2, 3, 21, 22, 23, 103)] == [
        "1st",
        "2nd",
        "3rd",
        "21st",
        "22nd",
        "23rd",
        "103rd",
    ]
