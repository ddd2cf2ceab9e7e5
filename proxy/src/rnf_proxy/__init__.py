"""The split-TCP proxy: transparent interception, per-UE window controllers, and their enforcement.

from rnf_proxy import Proxy, ProxyConfig
async with Proxy(ProxyConfig(namespace="rnf-core"), recorder) as proxy: ...
"""

from rnf_proxy.config import ProxyConfig, load
from rnf_proxy.proxy import Proxy

__all__ = ["Proxy", "ProxyConfig", "load"]
