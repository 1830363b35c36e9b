"""The JSON parser of every DRF endpoint: the shared input rule (`core.untrusted`) applied to
the body, so unstorable text and over-deep nesting are a 400 naming the field."""

from rest_framework import exceptions, parsers

from core.untrusted import InputRejected, json_loads


class JSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        raw = stream.read() if stream is not None else b""
        try:
            return json_loads(raw)
        except InputRejected as rejected:
            if rejected.unparsable:
                raise exceptions.ParseError(f"JSON parse error: {rejected.message}") from None
            raise exceptions.ValidationError({rejected.field: [rejected.message]}) from None
