"""robots.txt (RFC 9309) against a real local server: a disallowed URL is never requested."""

from __future__ import annotations

import pytest
from web_servers import LocalServer, load_all, make_loader

from ragloom.errors import RobotsDisallowedError, WebLoaderError

ROBOTS = """\
User-agent: *
Disallow: /private/
Allow: /private/public-note
Disallow: /*.pdf$
Disallow: /tmp*/cache

User-agent: OtherBot
Disallow: /
"""


def _local(**options):  # type: ignore[no-untyped-def]
    return make_loader(allow_private_network=True, **options)


@pytest.fixture
def robots_server(server: LocalServer) -> LocalServer:
    server.route("/robots.txt", ROBOTS, content_type="text/plain")
    for path in ("/", "/private/secret", "/private/public-note", "/doc.pdf", "/doc.pdf.html", "/tmp1/cache", "/tmp1/other", "/go-private"):
        server.route(path, f"<p>page {path}</p>")
    server.routes["/go-private"] = type(server.routes["/"])(b"", 302, {"Location": "/private/secret"})
    return server


@pytest.mark.parametrize(
    ("path", "allowed"),
    [
        ("/", True),
        ("/private/secret", False),
        ("/private/public-note", True),  # the longer Allow wins
        ("/doc.pdf", False),  # `$` anchors the end
        ("/doc.pdf.html", True),
        ("/tmp1/cache", False),  # `*` matches any characters
        ("/tmp1/other", True),
    ],
)
def test_rules_decide_and_disallowed_urls_are_never_requested(robots_server: LocalServer, path: str, allowed: bool) -> None:
    loader = _local()
    if allowed:
        [document] = load_all(loader, robots_server.url(path))
        assert document.text == f"page {path}"
    else:
        with pytest.raises(RobotsDisallowedError, match="disallows"):
            load_all(loader, robots_server.url(path))
        assert path not in robots_server.paths()


def test_user_agent_groups_are_matched(robots_server: LocalServer) -> None:
    with pytest.raises(RobotsDisallowedError):
        load_all(_local(user_agent="OtherBot/1.0"), robots_server.url("/"))
    assert "/" not in robots_server.paths()


def test_a_redirect_to_a_disallowed_url_is_refused(robots_server: LocalServer) -> None:
    with pytest.raises(RobotsDisallowedError, match="redirect to .*/private/secret"):
        load_all(_local(), robots_server.url("/go-private"))
    assert "/private/secret" not in robots_server.paths()


def test_robots_txt_is_fetched_once_per_site(robots_server: LocalServer) -> None:
    loader = _local()
    for path in ("/", "/tmp1/other", "/private/public-note"):
        load_all(loader, robots_server.url(path))
    assert robots_server.paths().count("/robots.txt") == 1


def test_robots_txt_is_fetched_again_after_the_cache_expires(robots_server: LocalServer) -> None:
    loader = _local(robots_cache_ttl=0)
    load_all(loader, robots_server.url("/"))
    load_all(loader, robots_server.url("/"))
    assert robots_server.paths().count("/robots.txt") == 2


def test_a_missing_robots_txt_allows_everything(server: LocalServer) -> None:
    server.route("/robots.txt", "gone", status=404, content_type="text/plain")
    server.route("/anything", "<p>ok</p>")
    [document] = load_all(_local(), server.url("/anything"))
    assert document.text == "ok"


@pytest.mark.parametrize("status", [500, 503, 429])
def test_an_unreachable_robots_txt_disallows_everything(server: LocalServer, status: int) -> None:
    server.route("/robots.txt", "down", status=status, content_type="text/plain")
    server.route("/anything", "<p>ok</p>")
    loader = _local(retries=0)
    with pytest.raises(RobotsDisallowedError, match=f"unreachable \\(HTTP {status}\\)"):
        load_all(loader, server.url("/anything"))
    with pytest.raises(RobotsDisallowedError):
        load_all(loader, server.url("/anything"))  # cached until it expires
    assert "/anything" not in server.paths()
    assert server.paths().count("/robots.txt") == 1


def test_a_robots_txt_network_failure_disallows_everything(server: LocalServer) -> None:
    def hang_up(request) -> None:  # type: ignore[no-untyped-def]
        request.connection.close()

    server.route("/robots.txt", hang_up)
    server.route("/anything", "<p>ok</p>")
    with pytest.raises(RobotsDisallowedError, match="unreachable"):
        load_all(_local(retries=0), server.url("/anything"))
    assert "/anything" not in server.paths()


def test_robots_txt_redirects_are_followed_and_checked(server: LocalServer) -> None:
    server.route("/robots.txt", "", status=301, headers={"Location": "/real-robots.txt"})
    server.route("/real-robots.txt", "User-agent: *\nDisallow: /no/\n", content_type="text/plain")
    server.route("/yes", "<p>yes</p>")
    loader = _local()
    assert load_all(loader, server.url("/yes"))[0].text == "yes"
    with pytest.raises(RobotsDisallowedError):
        load_all(loader, server.url("/no/page"))


def test_robots_can_be_turned_off(robots_server: LocalServer) -> None:
    [document] = load_all(_local(respect_robots=False), robots_server.url("/private/secret"))
    assert document.text == "page /private/secret"
    assert "/robots.txt" not in robots_server.paths()


def test_blocked_addresses_are_reported_as_blocked_not_as_robots(server: LocalServer) -> None:
    from web_servers import CountingResolver

    from ragloom.errors import BlockedAddressError

    resolver = CountingResolver({"intranet.example": [["127.0.0.1"]]})
    with pytest.raises(BlockedAddressError):
        load_all(make_loader(resolver), server.url("/page", host="intranet.example"))
    assert server.requests == []
    assert not issubclass(BlockedAddressError, RobotsDisallowedError)
    assert issubclass(RobotsDisallowedError, WebLoaderError)
