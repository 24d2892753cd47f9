"""URL path converters, registered when this module is first imported (by every module that builds
routes with them: the apps' URLconfs and the API)."""

from django.urls import register_converter


class IdConverter:
    """A database id in a URL: at most 18 digits, so it always fits a 64-bit column; a longer number is a
    404 like any other id that names nothing, instead of an overflow inside the database driver."""

    regex = "[0-9]{1,18}"

    def to_python(self, value: str) -> int:
        return int(value)

    def to_url(self, value: int) -> str:
        return str(value)


register_converter(IdConverter, "id")
