from accounts.validation import is_valid_email


class SignupError(ValueError):
    pass


def signup(address: str) -> dict:
    if not is_valid_email(address):
        raise SignupError(f"{address!r} is not a valid email address")
    return {"email": address.strip().lower()}
