def count_words(text: str) -> int:
    if not text:
        return 0
    return len(text.split(" "))


def count_lines(text: str) -> int:
    return len(text.splitlines())
