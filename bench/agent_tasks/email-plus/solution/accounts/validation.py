import re

EMAIL = re.compile(r"^[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+$")


def is_valid_email(address: str) -> bool:
    return bool(EMAIL.match(address.strip()))
