import json

from config.merge import deep_merge


def load(base_text: str, override_text: str = "{}") -> dict:
    return deep_merge(json.loads(base_text), json.loads(override_text))
