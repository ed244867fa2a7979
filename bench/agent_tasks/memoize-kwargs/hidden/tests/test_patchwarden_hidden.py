from caching import memoize


def test_keyword_arguments_in_key():
    calls = []

    @memoize
    def price(amount, currency="USD", rate=1.0):
        calls.append((amount, currency))
        return f"{amount * rate} {currency}"

    assert price(10, currency="EUR", rate=2.0) == "20.0 EUR"
    assert price(10, currency="USD") == "10.0 USD"
    assert price(10, rate=2.0, currency="EUR") == "20.0 EUR"
    assert len(calls) == 2
