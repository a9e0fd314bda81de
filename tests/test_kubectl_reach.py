"""Where ``kubectl pyscheduler`` looks for the scheduler (pyscheduler_k8s.kubectl.reach): the
URL given or from the environment, and the kubeconfig's context picked by ``--context``
(ClusterAccess.from_kubeconfig) and its namespace for ``-n``. No server, no cluster."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from pyscheduler_k8s.kubeapi import ClusterAccess
from pyscheduler_k8s.kubectl.reach import default_namespace, direct, server_url


def test_the_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSCHEDULER_URL", raising=False)
    assert server_url(None) is None
    monkeypatch.setenv("PYSCHEDULER_URL", "http://from-env:9080")
    assert server_url(None) == "http://from-env:9080"
    assert server_url("http://given:1") == "http://given:1"


def test_a_bare_address_is_http() -> None:
    assert direct("127.0.0.1:9080").base_url == "http://127.0.0.1:9080"
    assert direct("https://scheduler.example/").base_url == "https://scheduler.example"


def test_the_context_is_picked_by_name_else_the_current_one(tmp_path: Path) -> None:
    config = {
        "clusters": [{"name": "a", "cluster": {"server": "https://a:6443"}},
                     {"name": "b", "cluster": {"server": "https://b:6443/", "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "ctx-a", "context": {"cluster": "a", "user": "u", "namespace": "team-a"}},
                     {"name": "ctx-b", "context": {"cluster": "b", "user": "u"}}],
        "current-context": "ctx-a",
    }
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump(config))
    assert ClusterAccess.from_kubeconfig(str(path)).server == "https://a:6443"
    picked = ClusterAccess.discover(str(path), "ctx-b")
    assert (picked.server, picked.verify, picked.token) == ("https://b:6443", False, "t")
    with pytest.raises(ValueError, match="no context named 'nope'"):
        ClusterAccess.from_kubeconfig(str(path), "nope")
    # Without -n: the context's namespace, as kubectl's.
    assert default_namespace(str(path), None) == "team-a"
    assert default_namespace(str(path), "ctx-b") == "default"


def test_the_namespace_from_the_kubeconfig_in_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(yaml.safe_dump({"contexts": [{"name": "c", "context": {"namespace": "ns"}}],
                                    "current-context": "c"}))
    monkeypatch.setenv("KUBECONFIG", f"{path}{os.pathsep}{tmp_path / 'other'}")
    assert default_namespace(None, None) == "ns"
