"""The plugin is discovered and its options are validated like every component's."""

from __future__ import annotations

import pytest

import ragloom
from ragloom.config import PipelineConfig
from ragloom.errors import ConfigError
from ragloom_web import WebLoader, WebLoaderConfig


def test_plugin_is_discovered() -> None:
    info = ragloom.Registry().get("loader", "web")
    assert info.distribution == "ragloom-web"
    assert info.schemes == ("http", "https")
    assert info.config is WebLoaderConfig


def test_the_loader_set_picks_web_for_http_and_https() -> None:
    from ragloom.loaders.dispatch import LoaderSet
    from ragloom.plugins import BuildContext

    registry = ragloom.Registry()
    loaders = LoaderSet(BuildContext(registry=registry))
    assert loaders.name_for("http://example.com/") == "web"
    assert loaders.name_for("HTTPS://example.com/") == "web"
    assert isinstance(loaders.get("web"), WebLoader)


def test_options_from_toml_tables() -> None:
    config = PipelineConfig.from_dict(
        {"loaders": {"web": {"allow_private_network": True, "allowed_networks": ["10.1.0.0/16"], "max_response_bytes": 1000, "on_too_large": "truncate", "headers": {"X-Team": "docs"}}}}
    )
    web = config.loaders["web"]
    assert web.allow_private_network is True
    assert web.allowed_networks == ("10.1.0.0/16",)
    assert web.on_too_large == "truncate"


@pytest.mark.parametrize(
    ("options", "fragment"),
    [
        ({"allowed_networks": ["10.1.0.0/33"]}, "not an IP network"),
        ({"on_too_large": "explode"}, "on_too_large"),
        ({"max_response_bytes": 0}, "max_response_bytes"),
        ({"headers": {"Host": "evil"}}, "set by the loader"),
        ({"secret_headers": {"Authorization": "Bearer literal"}}, "secrets are never written in config"),
        ({"allow_private": True}, "allow_private_network"),
    ],
)
def test_invalid_options_are_config_errors(options: dict, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment):
        PipelineConfig.from_dict({"loaders": {"web": options}})


def test_public_names_resolve_and_all_is_sorted() -> None:
    import ragloom_web

    assert ragloom_web.__all__ == sorted(ragloom_web.__all__)
    for name in ragloom_web.__all__:
        assert getattr(ragloom_web, name) is not None
    with pytest.raises(AttributeError):
        ragloom_web.NotAThing  # noqa: B018
