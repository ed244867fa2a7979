VALUES = [(1000, "M"), (500, "D"), (100, "C"), (50, "L"), (10, "X"), (5, "V"), (1, "I")]


def to_roman(number: int) -> str:
    if not 0 < number < 4000:
        raise ValueError("roman numerals go from 1 to 3999")
    out = []
    for value, letters in VALUES:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)
