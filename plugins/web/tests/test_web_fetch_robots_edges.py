"""Fetching robots.txt itself: its redirect budget, a byte order mark and bytes that are not UTF-8, the reason
given when it cannot be read (against a real local server)."""

from __future__ import annotations

import re

import pytest
from web_servers import LocalServer, load_all, make_loader

from ragloom.errors import RobotsDisallowedError


def _local(**options):  # type: ignore[no-untyped-def]
    return make_loader(allow_private_network=True, **options)


def _redirect_chain(server: LocalServer, hops: int) -> None:
    """/robots.txt redirects ``hops`` times, the last hop to rules that disallow /no/."""
    names = ["/robots.txt", *(f"/robots-{i}.txt" for i in range(1, hops + 1))]
    for here, there in zip(names[:-1], names[1:], strict=True):
        server.route(here, "", status=301, headers={"Location": there})
    server.route(names[-1], "User-agent: *\nDisallow: /no/\n", content_type="text/plain")
    server.route("/no/page", "<p>no</p>")


def test_robots_txt_reached_after_five_redirects_applies(server: LocalServer) -> None:
    _redirect_chain(server, 5)
    with pytest.raises(RobotsDisallowedError, match="disallows"):
        load_all(_local(), server.url("/no/page"))
    assert "/no/page" not in server.paths()


def test_robots_txt_redirecting_more_than_five_times_allows_everything(server: LocalServer) -> None:
    # RFC 9309 §2.3.1.2: after five redirects robots.txt counts as unavailable, which allows everything
    _redirect_chain(server, 6)
    [document] = load_all(_local(), server.url("/no/page"))
    assert document.text == "no"
    assert "/robots-6.txt" not in server.paths()  # the sixth hop is never requested


def test_a_byte_order_mark_and_bytes_that_are_not_utf8_do_not_hide_the_rules(server: LocalServer) -> None:
    server.route("/robots.txt", b"\xef\xbb\xbfUser-agent: *\nDisallow: /no/\n# caf\xe9 \xff\n", content_type="text/plain")
    server.route("/no/page", "<p>no</p>")
    server.route("/yes", "<p>yes</p>")
    loader = _local()
    with pytest.raises(RobotsDisallowedError, match="disallows"):
        load_all(loader, server.url("/no/page"))
    assert load_all(loader, server.url("/yes"))[0].text == "yes"
    assert "/no/page" not in server.paths()


def test_an_unreadable_robots_txt_is_named_with_the_reason(server: LocalServer) -> None:
    def hang_up(request) -> None:  # type: ignore[no-untyped-def]
        request.connection.close()

    server.route("/robots.txt", hang_up)
    server.route("/anything", "<p>ok</p>")
    url = server.url("/anything")
    with pytest.raises(RobotsDisallowedError) as caught:
        load_all(_local(retries=0), url)
    assert re.search(rf"disallows {re.escape(url)} \(robots\.txt is unreachable: connection failed", str(caught.value)), str(caught.value)
