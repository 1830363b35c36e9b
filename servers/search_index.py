"""The trigram prefilter of `/v0.1/servers?search=` (migration servers/0006_name_trigram_index).

`search` is a case-insensitive substring of the registry name `io.<namespace>/<path with dots>`. A row can
only match if every trigram of the upper-cased term's part inside the name is a trigram of its name, so
that condition, answered by the GIN index, narrows the rows before the exact `icontains` test. Terms that
fit inside the `io.<namespace>/` prefix match every row and terms of fewer than three characters in the
name have no trigram; those go without the prefilter."""

from django.contrib.postgres.fields import ArrayField
from django.db.models import F, Func, TextField, Value

TRIGRAM = 3


def _trigrams(expression) -> Func:
    return Func(expression, function="servers_trigrams", output_field=ArrayField(TextField()))


def name_trigram_prefilter(rows, search: str, prefix: str):
    """`rows` narrowed by the index to those whose names can contain `search`; `prefix` is the registry
    names' `io.<namespace>/`."""
    if search.upper() in prefix.upper():
        return rows
    inside_name = search.rsplit("/", 1)[-1]  # the name part holds no "/": a term with one spans the prefix
    if len(inside_name) < TRIGRAM:
        return rows
    name_trigrams = Func(F("path"), function="servers_name_trigrams", output_field=ArrayField(TextField()))
    term_trigrams = _trigrams(Value(inside_name))
    return rows.alias(name_trigrams=name_trigrams).filter(name_trigrams__contains=term_trigrams)
