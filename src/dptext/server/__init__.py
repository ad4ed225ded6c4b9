"""``dptext serve``: an OpenAI-compatible proxy that perturbs private text before it leaves.

``create_app(load_config("dptext.yaml"))`` builds the FastAPI app; see
:mod:`dptext.server.app` for the request path and ``examples/dptext.yaml``
for every setting.
"""

from dptext.server.auth import hash_key, new_key
from dptext.server.config import ServerConfig, config_from_dict, load_config


def create_app(cfg, **kwargs):
    from dptext.server.app import create_app as _create

    return _create(cfg, **kwargs)


__all__ = ["ServerConfig", "config_from_dict", "create_app", "hash_key", "load_config", "new_key"]
