VALUES = [
    (1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
    (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I"),
]


def to_roman(number: int) -> str:
    if not 0 < number < 4000:
        raise ValueError("roman numerals go from 1 to 3999")
    out = []
    for value, letters in VALUES:
        while number >= value:
            out.append(letters)
            number -= value
    return "".join(out)
