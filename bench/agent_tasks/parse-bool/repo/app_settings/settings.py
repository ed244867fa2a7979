from dataclasses import dataclass

from app_settings.flags import env_flag


@dataclass
class Settings:
    feature_x: bool
    debug: bool


def load() -> Settings:
    return Settings(feature_x=env_flag("FEATURE_X"), debug=env_flag("DEBUG"))
