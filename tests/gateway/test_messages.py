"""How the gateway reads a server's JSON answer before passing it on (gateway/messages.py)."""

import json

import pytest

from accounts.principal import Principal, ServerRule
from gateway import messages

CALLER = Principal(
    username="gina",
    auth_method="session",
    server_rules=(ServerRule.from_dict({"server": "/clock", "methods": ["*"], "tools": ["add"]}),),
)
DENIED = {"jsonrpc": "2.0", "id": 3, "error": {"code": -32001, "message": "Access denied"}}


def test_an_empty_answer_is_passed_on_as_it_is():
    assert messages.merged_json(b"", [], CALLER, "/clock") == (b"", set())


def test_an_empty_answer_to_a_batch_with_denials_is_the_denials():
    body, failed = messages.merged_json(b"  ", [DENIED], CALLER, "/clock")

    assert (json.loads(body), failed) == ([DENIED], set())


def test_a_tool_list_is_cut_and_failed_ids_are_noted():
    answer = [
        {"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "add"}, {"name": "secret"}, {"oops": 1}]}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32603, "message": "broken"}},
    ]

    body, failed = messages.merged_json(json.dumps(answer).encode(), [], CALLER, "/clock")

    assert json.loads(body)[0]["result"]["tools"] == [{"name": "add"}]
    assert failed == {"2"}


@pytest.mark.parametrize("body", [b"{not json", b"[" * 100_000 + b"]" * 100_000])
def test_an_answer_that_cannot_be_read_is_never_passed_on_unread(body):
    with pytest.raises(messages.Unfilterable):
        messages.merged_json(body, [], CALLER, "/clock")


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_every_whole_stream_is_read_by_one_reader_whatever_ends_its_lines(end):
    from gateway.streams import events_data

    body = end.join(
        [b"event: message", b'data: {"a":', b"data:1}", b"", b"id: 7", b"data: two", b"", b"data: last"]
    )

    assert events_data(body) == [b'{"a":\n1}', b"two", b"last"]
    assert events_data(body + end) == [b'{"a":\n1}', b"two", b"last"]
    assert events_data(b"") == []
    assert events_data(end.join([b"id: 1", b"data:", b"", b"data: x", b""])) == [b"x"]  # a priming event
