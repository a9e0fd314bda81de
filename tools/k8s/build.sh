#!/usr/bin/env bash
# Builds the Kubernetes pieces that the Kubernetes tests run on loopback (shared/spec/kubernetes.md):
# etcd (the Debian package), kube-apiserver (built from Kubernetes' Go module through a small
# wrapper module: its go.mod replaces ./staging modules, which `go install` refuses) and kwok
# (fake nodes whose pods "run" without a kubelet), with kwok's stages; and helm, for the Helm
# chart's tests (k8s/chart, tests/test_helm_chart.py). Everything lands in the user's cache
# directory (${XDG_CACHE_HOME:-~/.cache}/pyscheduler/k8s-<versions>), outside the checkout, so a
# fresh clone on the same machine reuses it; a piece already built is kept.
#
# Takes about 16 minutes on 2 cores the first time (kube-apiserver 7, kwok 3.5, kube-controller-manager 2, helm 4), downloading
# from the Go module proxy and the Debian archive. WITH_KUBE_SCHEDULER=1 also builds kube-scheduler
# of the same version (about 6 more minutes; the benchmark's opponent, not needed by the tests).
# Usage: tools/k8s/build.sh [OUT_DIR]; prints
# nothing on stdout but the output directory (for scripts: OUT=$(tools/k8s/build.sh)).
set -euo pipefail

K8S_VERSION=v1.37.2
STAGING_VERSION=v0.37.2
KWOK_VERSION=v0.8.0
# The newest helm v3 the Go module proxy serves; the chart (k8s/chart) is apiVersion v2.
HELM_VERSION=v3.22.0
OUT=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler/k8s-$K8S_VERSION-kwok-$KWOK_VERSION}
BIN=$OUT/bin
mkdir -p "$BIN"

step() { printf '[k8s-tools] %s\n' "$*" >&2; }

# apt-get as root (else through sudo). It waits up to 10 minutes for another apt or dpkg process
# holding the lock (a machine's own unattended upgrades at boot) instead of failing at once.
apt_get() {
    local sudo=""
    [ "$(id -u)" = 0 ] || sudo=sudo
    DEBIAN_FRONTEND=noninteractive $sudo apt-get -o DPkg::Lock::Timeout=600 "$@"
}

if ! command -v etcd >/dev/null 2>&1; then
    step "etcd: installing the Debian package etcd-server"
    # A machine whose package lists are missing or old cannot find it: read them, then again.
    apt_get install -y etcd-server >/dev/null || { apt_get update >/dev/null && apt_get install -y etcd-server >/dev/null; }
fi
step "etcd: $(etcd --version | head -1)"

# A command of Kubernetes' main module (kube-apiserver, kube-scheduler), through a wrapper module of its own.
build_k8s_command() {
    local name=$1 minutes=$2
    [ -x "$BIN/$name" ] && return 0
    step "$name $K8S_VERSION: building (about $minutes minutes on 2 cores)"
    local src=$OUT/src/$name
    mkdir -p "$src"
    go list -m -json "k8s.io/kubernetes@$K8S_VERSION" >/dev/null
    local mod
    mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
    {
        printf 'module pyscheduler.local/%s\n\ngo 1.26\n\nrequire k8s.io/kubernetes %s\n\n' "$name" "$K8S_VERSION"
        sed -n 's#^[[:space:]]*\(k8s\.io/[^[:space:]]*\) => \./staging/.*#replace \1 => \1 '"$STAGING_VERSION"'#p' "$mod"
    } >"$src/go.mod"
    printf '//go:build tools\n\npackage tools\n\nimport _ "k8s.io/kubernetes/cmd/%s"\n' "$name" >"$src/tools.go"
    (cd "$src" && GOFLAGS=-mod=mod go mod tidy >/dev/null 2>&1 && go build -o "$BIN/$name.tmp" \
        -ldflags "-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37" \
        "k8s.io/kubernetes/cmd/$name")
    mv "$BIN/$name.tmp" "$BIN/$name"
}

build_k8s_command kube-apiserver 7
step "kube-apiserver: $("$BIN/kube-apiserver" --version)"

if [ ! -x "$BIN/kwok" ]; then
    step "kwok $KWOK_VERSION: building (about 3.5 minutes on 2 cores)"
    GOBIN=$BIN go install "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION" >&2
fi
STAGES=$(go env GOMODCACHE)/sigs.k8s.io/kwok@$KWOK_VERSION/kustomize/stage
if [ ! -s "$OUT/kwok-stages.yaml" ]; then
    for stage in node/fast/node-initialize.yaml node/heartbeat/node-heartbeat.yaml pod/fast/pod-ready.yaml \
                 pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
        cat "$STAGES/$stage"
        printf '\n---\n'
    done >"$OUT/kwok-stages.yaml"
fi
step "kwok: $("$BIN/kwok" --version 2>&1 | head -1); stages in $OUT/kwok-stages.yaml"
# The hub of several clusters runs its Jobs' controller (the multi-cluster tests); about 2
# minute more once kube-apiserver is built (they share most packages).
build_k8s_command kube-controller-manager 2
step "kube-controller-manager: $("$BIN/kube-controller-manager" --version)"
# helm (issue 36: the chart's tests lint, render, install and upgrade it with a real helm), from its
# Go module (no replace directives, so `go install` takes it as is). The -X variables are those of
# helm's Makefile: the version `helm version` prints and the Kubernetes version helm lint and
# template assume (as the Makefile: that of the client-go helm requires, v0.37 -> 1.37); no git
# commit (the module zip has none). About 4 minutes on 2 cores.
if [ ! -x "$BIN/helm" ]; then
    step "helm $HELM_VERSION: building (about 4 minutes on 2 cores)"
    HELM_PKG=helm.sh/helm/v3
    go list -m -json "$HELM_PKG@$HELM_VERSION" >/dev/null
    K8S_MINOR=$(sed -n 's#^[[:space:]]*k8s\.io/client-go v0\.\([0-9]*\)\..*#\1#p' \
        "$(go env GOMODCACHE)/cache/download/$HELM_PKG/@v/$HELM_VERSION.mod")
    HELM_LDFLAGS="-w -s -X $HELM_PKG/internal/version.version=$HELM_VERSION -X $HELM_PKG/internal/version.metadata="
    HELM_LDFLAGS+=" -X $HELM_PKG/internal/version.gitTreeState=clean"
    for var in $HELM_PKG/pkg/lint/rules $HELM_PKG/pkg/chartutil; do
        HELM_LDFLAGS+=" -X $var.k8sVersionMajor=1 -X $var.k8sVersionMinor=${K8S_MINOR:?no k8s.io/client-go version in the go.mod of helm}"
    done
    # Into a directory of this run's own first, then moved: an interrupted build leaves no half
    # binary, and two test sessions building at once do not take each other's file.
    HELM_TMP=$(mktemp -d "$OUT/helm-build.XXXXXX")
    CGO_ENABLED=0 GOBIN=$HELM_TMP go install -trimpath -ldflags "$HELM_LDFLAGS" "$HELM_PKG/cmd/helm@$HELM_VERSION" >&2
    mv -f "$HELM_TMP/helm" "$BIN/helm"
    rm -rf "$HELM_TMP"
fi
step "helm: $("$BIN/helm" version --short)"
if [ "${WITH_KUBE_SCHEDULER:-0}" = 1 ]; then
    # Only the benchmark against kube-scheduler needs it (make bench-k8s), not make test.
    build_k8s_command kube-scheduler 6
    step "kube-scheduler: $("$BIN/kube-scheduler" --version)"
fi
echo "$OUT"
