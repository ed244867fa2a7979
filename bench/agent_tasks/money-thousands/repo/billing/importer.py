import csv
import io

from billing.money import parse_amount


def load_rows(data: str):
    rows = []
    for row in csv.DictReader(io.StringIO(data)):
        amount = parse_amount(row["amount"])
        rows.append({"customer": row["customer"], "amount": amount})
    return rows


def total(data: str) -> float:
    return round(sum(r["amount"] for r in load_rows(data)), 2)
