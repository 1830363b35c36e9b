"""Which member and which of its tools a name clients see stands for (virtual_servers/mapping.py)."""

from virtual_servers.mapping import Member, tool_index


def member(key: str, tools=None, **settings) -> Member:
    return Member(key, None, tools or {}, {}, {}, settings)


def test_an_alias_wins_over_a_plain_name_and_the_first_member_wins_among_equals():
    clock = member("clock", add={"alias": "plus"})
    library = member("library", tools={"exclude": ["hidden"]}, search={"alias": "add"})
    desk = member("desk", echo={"alias": "plus"})
    known = {"clock": {"add", "now"}, "library": {"search", "now", "hidden"}, "desk": {"echo", "note"}}

    index = tool_index([clock, library, desk], known)

    assert {name: (found.key, own) for name, (found, own) in index.items()} == {
        "plus": ("clock", "add"),  # desk's alias of the same name comes later
        "add": ("library", "search"),  # an alias beats clock's own add, which clients see as plus
        "now": ("clock", "now"),
        "note": ("desk", "note"),
    }


def test_an_alias_of_a_tool_the_member_does_not_carry_names_nothing():
    library = member("library", tools={"include": ["search"]}, echo={"alias": "say"})

    assert tool_index([library], {"library": {"search", "echo"}}) == {"search": (library, "search")}
