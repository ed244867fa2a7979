from billing.importer import total
from billing.money import parse_amount


def test_thousands_separators():
    assert parse_amount("1,234.50") == 1234.5
    assert parse_amount("$12,000") == 12000.0
    assert parse_amount("$3") == 3.0


def test_import_total():
    data = 'customer,amount\nacme,"1,234.50"\nglobex,$10\n'
    assert total(data) == 1244.5
