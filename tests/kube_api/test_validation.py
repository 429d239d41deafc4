"""How apimachinery prints a bad value and joins several errors (the API server's and label selectors' messages)."""

from __future__ import annotations

from kube_api.validation import aggregate_messages, go_quote, invalid_message


def test_go_quote() -> None:
    assert go_quote("plain") == '"plain"'
    assert go_quote('a"b\\c') == '"a\\"b\\\\c"'
    assert go_quote("tab\there\n") == '"tab\\there\\n"'
    assert go_quote("\x01é") == '"\\x01é"'


def test_invalid_message_prints_the_value_as_go_does() -> None:
    assert invalid_message("a b", "bad") == 'Invalid value: "a b": bad'
    assert invalid_message(3, "bad") == "Invalid value: 3: bad"
    assert invalid_message(True, "bad") == "Invalid value: true: bad"
    assert invalid_message(None, "bad") == "Invalid value: null: bad"
    assert invalid_message({"b": 1, "a": [2]}, "bad") == 'Invalid value: {"a":[2],"b":1}: bad'


def test_aggregate_messages_one_bare_several_deduplicated_in_brackets() -> None:
    assert aggregate_messages(["x"]) == "x"
    assert aggregate_messages(["x", "x"]) == "x"
    assert aggregate_messages(["x", "y", "x"]) == "[x, y]"
